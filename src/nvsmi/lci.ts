// `nvidia-smi mig -lci`: the compute instances that exist. R450-era drivers print no
// Placement column (57 columns); later ones add `Placement / Start:Size` (70 columns).

import { columnLayout, RecordFields, requireColumns, scanBoxListings } from "./boxlisting.js";
import type { LciResult } from "./types.js";

const KIND = "lci";

const VOCAB = {
  // The first `GPU` is the GPU index, the second heads `GPU / Instance / ID`.
  primary: {
    GPU: ["gpu", "gpuInstanceId"],
    Name: ["name"],
    Profile: ["profileId"],
    Instance: ["id"],
    Placement: ["placement"],
  },
  continuations: ["Instance", "ID", "Start:Size"],
};

export function parseLci(text: string): LciResult {
  const scan = scanBoxListings(KIND, text, /^Compute instances:$/);
  const computeInstances: LciResult["computeInstances"] = [];
  for (const table of scan.tables) {
    const rows = columnLayout(KIND, table.header, VOCAB);
    requireColumns(KIND, table.header, rows, ["gpu", "gpuInstanceId", "name", "profileId", "id"]);
    for (const record of table.records) {
      const f = RecordFields.of(KIND, record, rows);
      const [start, size] = f.has("placement") ? f.placement("placement") : [null, null];
      computeInstances.push({
        gpu: f.int("gpu"),
        gpuInstanceId: f.int("gpuInstanceId"),
        name: f.profileName("name"),
        profileId: f.int("profileId"),
        id: f.int("id"),
        start,
        size,
      });
    }
  }
  return scan.notices.length > 0
    ? { computeInstances, notices: scan.notices }
    : { computeInstances };
}
