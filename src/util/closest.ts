// "Did you mean …?": the one nearest-name helper behind every unknown-name error (commands,
// suites, parse kinds, config settings), so they all suggest by the same rule.

function editDistance(a: string, b: string): number {
  const m = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) m[0]![j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++)
      m[i]![j] = Math.min(
        m[i - 1]![j]! + 1,
        m[i]![j - 1]! + 1,
        m[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
  return m[a.length]![b.length]!;
}

/** The option nearest to `name` (case-insensitive) within a third of its length in edits (1 to
 * 2: `stauts` → status, but `lspci` is not "lci"), or null. */
export function closest(name: string, options: readonly string[]): string | null {
  const n = name.toLowerCase();
  const best = options
    .map((o) => ({ o, d: editDistance(n, o.toLowerCase()) }))
    .sort((x, y) => x.d - y.d)[0];
  const allowed = Math.min(2, Math.max(1, Math.floor(n.length / 3)));
  return best && best.d <= allowed ? best.o : null;
}

/** ` (did you mean 'x'?)`, or "" when nothing is near. */
export function didYouMean(name: string, options: readonly string[]): string {
  const near = closest(name, options);
  return near ? ` (did you mean '${near}'?)` : "";
}
