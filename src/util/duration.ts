// Durations as people write them, for every option and file that takes one (--duration,
// --timeout, slicecheck.config.yaml, the inventory's connect_timeout): one grammar everywhere.

const DECIMAL = /^\d+(\.\d+)?$/;
const UNIT_S: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
const DURATION_PART = /(\d+(?:\.\d+)?)(s|m|h|d)/gy;

/**
 * A duration in seconds: a plain number is seconds (`30`, `1.5`), or number-unit pairs with s,
 * m, h, d (`30s`, `5m`, `1h`, `1h30m`), largest unit first as people write them. NaN when the
 * text is none of these; ranges are the caller's.
 */
export function durationSeconds(text: string): number {
  const v = text.trim();
  if (DECIMAL.test(v)) return Number(v);
  if (v === "") return Number.NaN;
  DURATION_PART.lastIndex = 0;
  let total = 0;
  let lastUnit = Number.POSITIVE_INFINITY;
  let m: RegExpExecArray | null = DURATION_PART.exec(v);
  let end = 0;
  while (m) {
    const unit = UNIT_S[m[2]!]!;
    // `5m1h` or `1m1m` is more likely a typo than a sum the user meant.
    if (unit >= lastUnit) return Number.NaN;
    lastUnit = unit;
    total += Number(m[1]) * unit;
    end = DURATION_PART.lastIndex;
    m = DURATION_PART.exec(v);
  }
  return end === v.length ? total : Number.NaN;
}
