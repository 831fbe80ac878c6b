// Which output layout a driver prints (mig-reference.md §4-§6). Each switch point is the first
// driver where a capture shows the new form; where captures leave a gap, the comment says which
// side was chosen.

import { driverAtLeast } from "../../../src/mig/catalog/driver.js";

export type TableStyle = "t79" | "t89" | "t91-550" | "t91-560" | "t91-580";

export interface Layout {
  /** `-lgip` name column: 14 (R450, 76 cols), 17 (R470–R575, 79 cols), 19 (R580, 81 cols). */
  lgipName: number;
  /** `-lgi` name column: 15 (R450/R460, 54 cols), 18 (57 cols), 20 (R580, 59 cols). */
  lgiName: number;
  /** `-lci` has the Placement column (70 cols) rather than 57 cols. */
  lciPlacement: boolean;
  /** `-cci` success lines name the new CI ID. */
  cciNamesId: boolean;
  /** MIG devices are `MIG-GPU-<uuid>/<gi>/<ci>` and `-L` lines use single spaces. */
  legacyMigNames: boolean;
  /** Product names carry the `NVIDIA ` prefix. */
  nvidiaPrefix: boolean;
  table: TableStyle;
  /** `-lgip`/`-lgipp` answer while MIG mode is disabled. */
  profilesWithMigDisabled: boolean;
}

export function layoutFor(driver: string): Layout {
  // R450/R460 print the narrow tables (CND 460.73.01 -lgi, the R450 -lgip in IDX-8235278810);
  // the R470-era A100-40GB capture (IDX-42708883739) already has the wider ones, the Placement
  // column in -lci and the CI ID in -cci messages, so all switch at R470.
  const r470 = driverAtLeast(driver, "470");
  const r580 = driverAtLeast(driver, "580");
  let table: TableStyle = "t79";
  if (driverAtLeast(driver, "535")) table = "t89";
  if (driverAtLeast(driver, "550")) table = "t91-550";
  // R560 changed the Shared header of `MIG devices` (AZ-H100NVL). R570/R575 tables were not
  // captured; they are assumed to look like R560.
  if (driverAtLeast(driver, "560")) table = "t91-560";
  if (r580) table = "t91-580";
  return {
    lgipName: r580 ? 19 : r470 ? 17 : 14,
    lgiName: r580 ? 20 : r470 ? 18 : 15,
    lciPlacement: r470,
    cciNamesId: r470,
    legacyMigNames: !r470,
    // R450, R460 and the GUIDE's R470 example print bare names; 515.86.01 has the prefix. The
    // change lies in 495–515 and is put at R510 (unverified).
    nvidiaPrefix: driverAtLeast(driver, "510"),
    table,
    // The GPU Operator docs say the 535 branch cannot list profiles with MIG off; 580.173.02 can
    // (PRICKLE), and so could the likely-R575 STACKHPC host, whose -lgip listed GPUs 1-3 after
    // enabling MIG on GPU 0 only. R550-R570 were not captured and are treated like 535.
    profilesWithMigDisabled: driverAtLeast(driver, "575"),
  };
}
