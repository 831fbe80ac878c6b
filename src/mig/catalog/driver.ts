// Driver versions as nvidia-smi prints them ("580.173.02", "450.80.02"). Profiles, memory sizes
// and output layouts change at driver branches, so every gate in the catalogue and the simulator
// compares versions numerically here rather than as strings ("99" < "450" only numerically).

import { SlicecheckError } from "../../errors.js";

export interface DriverVersion {
  major: number;
  minor: number;
  patch: number;
}

const VERSION = /^(\d{1,4})(?:\.(\d{1,4}))?(?:\.(\d{1,4}))?$/;

export function parseDriver(version: string): DriverVersion {
  const m = VERSION.exec(version.trim());
  if (!m) {
    throw new SlicecheckError(
      "USAGE",
      `'${version}' is not a driver version; expected the form nvidia-smi prints, e.g. 580.173.02`,
      { version },
    );
  }
  return { major: Number(m[1]), minor: Number(m[2] ?? 0), patch: Number(m[3] ?? 0) };
}

/** Negative when a < b, 0 when equal, positive when a > b. A bare branch ("525") means 525.0.0. */
export function compareDrivers(a: string, b: string): number {
  const x = parseDriver(a);
  const y = parseDriver(b);
  return x.major - y.major || x.minor - y.minor || x.patch - y.patch;
}

export function driverAtLeast(driver: string, threshold: string): boolean {
  return compareDrivers(driver, threshold) >= 0;
}

/** A value that changed at known driver versions; see `valueAt`. */
export interface DriverStep<T> {
  /** First driver version (or bare branch) at which `value` applies. */
  from: string;
  value: T;
}

export type DriverValue<T> = T | readonly DriverStep<T>[];

function isSteps<T>(v: DriverValue<T>): v is readonly DriverStep<T>[] {
  return Array.isArray(v);
}

/** The value of the latest step whose `from` is not after `driver`; the first step if none. */
export function valueAt<T>(v: DriverValue<T>, driver: string): T {
  if (!isSteps(v)) return v;
  let chosen: DriverStep<T> | undefined;
  for (const step of v) {
    if (driverAtLeast(driver, step.from)) chosen = step;
  }
  const first = v[0];
  if (chosen) return chosen.value;
  if (first) return first.value;
  throw new SlicecheckError("INTERNAL", "empty driver-dependent value in the MIG catalogue");
}
