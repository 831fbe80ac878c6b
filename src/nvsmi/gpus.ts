// `nvidia-smi -L`: one line per GPU, then one indented line per MIG device. The device UUID is
// `MIG-GPU-<gpu uuid>/<GI>/<CI>` before R470 (the only form that names GI and CI) and
// `MIG-<uuid>` after; from R570 every CI of a subdivided GI gets its own line and UUID.

import { parseError, significantLines } from "./text.js";
import type { GpuListing, GpusResult } from "./types.js";

const KIND = "gpus";
const UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";

const GPU_LINE = new RegExp(`^GPU (\\d+): (.+?) \\(UUID: (GPU-${UUID})\\)$`);
const MIG_LINE = /^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-\S+)\)$/;
const OLD_MIG_UUID = new RegExp(`^MIG-GPU-${UUID}/(\\d+)/(\\d+)$`);
const NEW_MIG_UUID = new RegExp(`^MIG-${UUID}$`);

export function parseGpus(text: string): GpusResult {
  const gpus: GpuListing[] = [];
  for (const line of significantLines(text)) {
    const t = line.text.trimEnd();
    // What nvidia-smi prints on a host without GPUs: an empty listing, not garbage.
    if (/^No devices were found\.?$/.test(t.trim())) continue;
    const g = GPU_LINE.exec(t);
    if (g) {
      gpus.push({ index: Number(g[1]), name: g[2]!, uuid: g[3]!, migDevices: [] });
      continue;
    }
    const m = MIG_LINE.exec(t);
    if (!m) {
      throw parseError(
        KIND,
        line.no,
        "'GPU <n>: <name> (UUID: GPU-…)' or '  MIG <profile> Device <n>: (UUID: MIG-…)'",
        line.text,
      );
    }
    const parent = gpus.at(-1);
    if (!parent) throw parseError(KIND, line.no, "a 'GPU <n>:' line before MIG devices", t);
    const uuid = m[3]!;
    const old = OLD_MIG_UUID.exec(uuid);
    if (!old && !NEW_MIG_UUID.test(uuid)) {
      throw parseError(KIND, line.no, "a 'MIG-<uuid>' or 'MIG-GPU-<uuid>/<gi>/<ci>' UUID", uuid);
    }
    parent.migDevices.push({
      name: m[1]!,
      index: Number(m[2]),
      uuid,
      gpuInstanceId: old ? Number(old[1]) : null,
      computeInstanceId: old ? Number(old[2]) : null,
    });
  }
  return { gpus };
}
