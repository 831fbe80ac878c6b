// Nodes brought into the state of a captured session, with the simulator's own commands.

import { SimNode } from "./helpers.js";

/** PRICKLE h100-mig: `-cgi 19,19 -C` (scripts/capture-fixtures.sh prep), driver 580.173.02. */
export async function h100TwoSmall(): Promise<SimNode> {
  const n = new SimNode({ product: "H100-80GB", driver: "580.173.02", migEnabled: true });
  await n.setup("mig -cgi 19,19 -C");
  return n;
}

/** PRICKLE h100-mig-mixed: GI 11 re-created as 1g.10gb+me, then a 3g.40gb with one 1c CI. */
export async function h100Mixed(): Promise<SimNode> {
  const n = await h100TwoSmall();
  await n.setup(
    "mig -dci -gi 11",
    "mig -dgi -gi 11",
    "mig -cgi 20 -C",
    "mig -cgi 9",
    "mig -cci 0 -gi 1",
  );
  return n;
}

/** The A30 session of IDX-25510043945: two 1g.6gb, then a 2g.12gb, each with -C. */
export async function a30Three(): Promise<SimNode> {
  const n = new SimNode({ product: "A30", driver: "535.183.01", migEnabled: true });
  await n.setup("mig -cgi 14 -C", "mig -cgi 14 -C", "mig -cgi 5 -C");
  return n;
}

export async function sevenSmall(product: string, driver: string): Promise<SimNode> {
  const n = new SimNode({ product, driver, migEnabled: true });
  await n.setup("mig -cgi 19,19,19,19,19,19,19 -C");
  return n;
}

/** Two 3g GIs numbered as a capture shows (that driver did not use the tree IDs). */
export function twoThreeG(n: SimNode, at0: number, at4: number): void {
  n.gpu((g) => {
    g.gis = [
      { id: at0, profileId: 9, start: 0, size: 4, cis: [] },
      { id: at4, profileId: 9, start: 4, size: 4, cis: [] },
    ].sort((a, b) => a.id - b.id);
  });
}
