// `nvidia-smi -q`, read only for what the MIG layer needs: per GPU its bus id, product name,
// UUID and the `MIG Mode` block (`Current` / `Pending`). Captures are often heads of the
// output, so the text may stop anywhere except inside the MIG Mode block.

import { PCI_BUS_ID, parseError, significantLines } from "./text.js";
import type { QMigGpu, QMigResult } from "./types.js";

const KIND = "q";
const GPU_HEAD = new RegExp(`^GPU (${PCI_BUS_ID})$`);
const FIELD = /^\s*([A-Za-z][\w .()/-]*?)\s*:\s*(.*)$/;

function value(v: string): string | null {
  const t = v.trim();
  return t === "" || t === "N/A" ? null : t;
}

export function parseQMig(text: string): QMigResult {
  const result: QMigResult = { driverVersion: null, cudaVersion: null, gpus: [] };
  const lines = significantLines(text);
  let gpu: QMigGpu | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const t = line.text.trimEnd();
    const head = GPU_HEAD.exec(t);
    if (head) {
      gpu = {
        pci: head[1]!,
        productName: null,
        uuid: null,
        migModeCurrent: null,
        migModePending: null,
      };
      result.gpus.push(gpu);
      continue;
    }
    if (t.trim() === "MIG Mode" && gpu) {
      // The block is exactly two fields; a cut or reordered block must not pass as "unknown".
      for (const [label, key] of [
        ["Current", "migModeCurrent"],
        ["Pending", "migModePending"],
      ] as const) {
        const next = lines[++i];
        const f = next ? FIELD.exec(next.text) : null;
        if (!f || f[1] !== label) {
          const no = next?.no ?? lines[i - 1]!.no + 1;
          throw parseError(KIND, no, `'${label} : <mode>'`, next?.text ?? null);
        }
        gpu[key] = value(f[2]!);
      }
      continue;
    }
    const f = FIELD.exec(t);
    if (!f) continue;
    const [, label, v] = f;
    if (!gpu && label === "Driver Version") result.driverVersion = value(v!);
    else if (!gpu && label === "CUDA Version") {
      const cuda = value(v!);
      result.cudaVersion = cuda === "Not Found" ? null : cuda;
    } else if (gpu && label === "Product Name") gpu.productName = value(v!);
    else if (gpu && label === "GPU UUID") gpu.uuid = value(v!);
  }
  return result;
}
