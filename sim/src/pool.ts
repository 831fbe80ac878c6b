// A bounded pool: `sim up` starts many simulated nodes at once (key generation, sshd start and
// its readiness are mostly waiting on other processes), but not 256 ssh-keygen and sshd forks
// at one instant on a 2-core machine.

/**
 * `fn` on every item, at most `limit` at a time, results in the items' order. After the first
 * failure no new item is started; the ones already running are waited for (so nothing is left
 * half-started behind the caller's back), then that first error is thrown.
 */
export async function inPool<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed: { error: unknown } | null = null;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i] as T, i);
      } catch (error) {
        failed ??= { error };
      }
    }
  };
  const width = Math.max(1, Math.min(limit, items.length));
  await Promise.all(Array.from({ length: width }, worker));
  if (failed) throw (failed as { error: unknown }).error;
  return results;
}
