// `nvidia-smi mig -lgi`: the GPU instances that exist, one row each (GPU, name, profile ID,
// instance ID, start:size). Seen 54, 57 and 59 columns wide; the words stay the same.

import { columnLayout, RecordFields, requireColumns, scanBoxListings } from "./boxlisting.js";
import type { LgiResult } from "./types.js";

const KIND = "lgi";

const VOCAB = {
  primary: {
    GPU: ["gpu"],
    Name: ["name"],
    Profile: ["profileId"],
    Instance: ["id"],
    Placement: ["placement"],
  },
  continuations: ["ID", "Start:Size"],
};

export function parseLgi(text: string): LgiResult {
  const scan = scanBoxListings(KIND, text, /^GPU instances:$/);
  const gpuInstances: LgiResult["gpuInstances"] = [];
  for (const table of scan.tables) {
    const rows = columnLayout(KIND, table.header, VOCAB);
    requireColumns(KIND, table.header, rows, ["gpu", "name", "profileId", "id", "placement"]);
    for (const record of table.records) {
      const f = RecordFields.of(KIND, record, rows);
      const [start, size] = f.placement("placement");
      gpuInstances.push({
        gpu: f.int("gpu"),
        name: f.profileName("name"),
        profileId: f.int("profileId"),
        id: f.int("id"),
        start,
        size,
      });
    }
  }
  return scan.notices.length > 0 ? { gpuInstances, notices: scan.notices } : { gpuInstances };
}
