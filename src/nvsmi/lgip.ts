// `nvidia-smi mig -lgip`: the GPU-instance profiles of each GPU, two rows per profile
// (GPU, name, ID, free/total, memory, P2P, SM, DEC, ENC; then CE, JPEG, OFA).

import { columnLayout, RecordFields, requireColumns, scanBoxListings } from "./boxlisting.js";
import type { GpuInstanceProfile, LgipResult } from "./types.js";

const KIND = "lgip";

const VOCAB = {
  primary: {
    GPU: ["gpu"],
    Name: ["name"],
    ID: ["id"],
    Instances: ["instances"],
    Memory: ["memory"],
    P2P: ["p2p"],
  },
  continuations: ["Free/Total", "GiB"],
};

const REQUIRED = ["gpu", "name", "id", "instances", "memory", "p2p"] as const;
const ENGINES = ["sm", "dec", "enc", "ce", "jpeg", "ofa"] as const;

export function parseLgip(text: string): LgipResult {
  const scan = scanBoxListings(KIND, text, /^GPU instance profiles:$/);
  const gpus: LgipResult["gpus"] = [];
  for (const table of scan.tables) {
    const rows = columnLayout(KIND, table.header, VOCAB);
    requireColumns(KIND, table.header, rows, [...REQUIRED, ...ENGINES]);
    for (const record of table.records) {
      const f = RecordFields.of(KIND, record, rows);
      const [free, total] = f.ratio("instances");
      const p2p = f.match("p2p", /^(Yes|No)$/, "'Yes' or 'No' for P2P")[1] === "Yes";
      const profile: GpuInstanceProfile = {
        name: f.profileName("name"),
        id: f.int("id"),
        free,
        total,
        memoryGiB: f.num("memory"),
        p2p,
        sm: f.int("sm"),
        dec: f.int("dec"),
        enc: f.int("enc"),
        ce: f.int("ce"),
        jpeg: f.int("jpeg"),
        ofa: f.int("ofa"),
      };
      const index = f.int("gpu");
      let gpu = gpus.find((g) => g.index === index);
      if (!gpu) {
        gpu = { index, profiles: [] };
        gpus.push(gpu);
      }
      gpu.profiles.push(profile);
    }
  }
  return scan.notices.length > 0 ? { gpus, notices: scan.notices } : { gpus };
}
