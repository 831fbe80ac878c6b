// `nvidia-smi mig -lcip`: the compute-instance profiles of each GPU instance, two rows per
// profile. The default profile's ID carries a `*` (`2*`).

import { columnLayout, RecordFields, requireColumns, scanBoxListings } from "./boxlisting.js";
import type { LcipResult } from "./types.js";

const KIND = "lcip";

const VOCAB = {
  primary: {
    GPU: ["gpu", "gpuInstanceId"],
    Name: ["name"],
    Profile: ["profileId"],
    Instances: ["instances"],
  },
  groups: ["Exclusive", "Shared"],
  continuations: ["Instance", "ID", "Free/Total"],
};

const REQUIRED = ["gpu", "gpuInstanceId", "name", "profileId", "instances"] as const;
const ENGINES = ["sm", "dec", "enc", "ofa", "ce", "jpeg"] as const;

export function parseLcip(text: string): LcipResult {
  const scan = scanBoxListings(KIND, text, /^Compute instance profiles:$/);
  const profiles: LcipResult["profiles"] = [];
  for (const table of scan.tables) {
    const rows = columnLayout(KIND, table.header, VOCAB);
    requireColumns(KIND, table.header, rows, [...REQUIRED, ...ENGINES]);
    for (const record of table.records) {
      const f = RecordFields.of(KIND, record, rows);
      const id = f.match("profileId", /^(\d+)(\*?)$/, "a profile ID, '*' marking the default");
      const [free, total] = f.ratio("instances");
      profiles.push({
        gpu: f.int("gpu"),
        gpuInstanceId: f.int("gpuInstanceId"),
        name: f.profileName("name"),
        id: Number(id[1]),
        isDefault: id[2] === "*",
        free,
        total,
        sm: f.int("sm"),
        dec: f.int("dec"),
        enc: f.int("enc"),
        ofa: f.int("ofa"),
        ce: f.int("ce"),
        jpeg: f.int("jpeg"),
      });
    }
  }
  return scan.notices.length > 0 ? { profiles, notices: scan.notices } : { profiles };
}
