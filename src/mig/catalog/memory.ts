// The `Memory GiB` column of `nvidia-smi mig -lgip` and the MiB totals of the `MIG devices`
// table are the same number (mig-reference.md §1): GiB = printf("%.2f", MiB / 1024) with
// round-half-to-even, e.g. 9856 MiB → 9.62 and 47488 MiB → 46.38. The reference tables give
// GiB, the default table prints MiB, so the catalogue stores GiB and derives MiB here.

import { SlicecheckError } from "../../errors.js";

/** `MiB / 1024` to two decimals, ties to even, as glibc printf does for these exact values. */
export function formatGiB(mib: number): string {
  // Work in integers: hundredths of a GiB = mib * 100 / 1024 = mib * 25 / 256.
  const num = mib * 25;
  let q = Math.floor(num / 256);
  const r = num % 256;
  if (r * 2 > 256 || (r * 2 === 256 && q % 2 === 1)) q += 1;
  const whole = Math.floor(q / 100);
  const frac = String(q % 100).padStart(2, "0");
  return `${whole}.${frac}`;
}

/**
 * The MiB size a printed GiB value stands for. Real GI sizes are whole multiples of 128 MiB in
 * every capture that shows both (9856, 9984, 40448, 10880, 47488, 16384, 9728), or of 64 MiB on
 * A30 (5952, 11968); prefer the coarsest grain that prints back to the same text.
 */
export function mibFromGiB(gib: string): number {
  const value = Number(gib);
  if (!/^\d+\.\d\d$/.test(gib) || !Number.isFinite(value)) {
    throw new SlicecheckError("INTERNAL", `bad GiB value '${gib}' in the MIG catalogue`);
  }
  for (const grain of [128, 64, 32, 16, 8, 4, 2, 1]) {
    const base = Math.round((value * 1024) / grain) * grain;
    for (const candidate of [base, base - grain, base + grain]) {
      if (candidate > 0 && formatGiB(candidate) === gib) return candidate;
    }
  }
  throw new SlicecheckError("INTERNAL", `no MiB size prints as ${gib} GiB`);
}
