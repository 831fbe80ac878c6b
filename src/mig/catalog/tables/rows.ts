// The profile tables are written as aligned rows, one per `-lgip` row, so that they can be read
// side by side with mig-reference.md §2; this turns a row into a `GiProfileSpec`.

import type { DriverValue } from "../driver.js";
import type { GiProfileSpec } from "../types.js";

export type ProfileRow = readonly [
  id: number,
  name: string,
  nvmlIndex: number,
  computeSlices: number,
  memorySlices: number,
  memoryGiB: DriverValue<string>,
  sm: number,
  dec: number,
  enc: number,
  ce: number,
  jpeg: number,
  ofa: number,
  instances: number,
  starts: readonly number[],
  defaultCiProfileId: number,
  since?: string,
];

export function fromRows(rows: readonly ProfileRow[]): readonly GiProfileSpec[] {
  return rows.map((r) => {
    const [id, name, nvmlIndex, computeSlices, memorySlices, memoryGiB, sm, dec, enc, ce] = r;
    const [, , , , , , , , , , jpeg, ofa, instances, starts, defaultCiProfileId, since] = r;
    const spec: GiProfileSpec = {
      id,
      name,
      nvmlIndex,
      computeSlices,
      memorySlices,
      memoryGiB,
      sm,
      dec,
      enc,
      ce,
      jpeg,
      ofa,
      instances,
      starts,
      defaultCiProfileId,
    };
    return since === undefined ? spec : { ...spec, since };
  });
}

/** Placements shared by every 8-slice product whose `-lgipp` was captured (§3). */
export const S1 = [0, 1, 2, 3, 4, 5, 6] as const;
export const S2 = [0, 2, 4, 6] as const;
export const S2G = [0, 2, 4] as const;
export const S4 = [0, 4] as const;
export const S0 = [0] as const;

/** A value that changed at `from` (`old` before it). */
export function changedAt(from: string, old: string, now: string): DriverValue<string> {
  return [
    { from: "0", value: old },
    { from, value: now },
  ];
}
