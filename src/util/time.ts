// Waiting for something, but not forever, without keeping the process alive: the timer of a
// bounded wait is cleared as soon as the thing is done (an uncleared 5 s timer once held every
// run's exit for 5 s after its verdict).

/** Resolves when `p` settles or after `ms`, whichever is first; true when `p` settled. */
export async function settledWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((r) => {
    timer = setTimeout(() => r(false), ms);
  });
  try {
    return await Promise.race([
      p.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
