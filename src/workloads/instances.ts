// Where workloads run: every MIG device of every GPU of a node (one CUDA process sees one MIG
// device), or the whole GPU where MIG is off. Built from three outputs, because none says it
// all: `-L` has the UUIDs, the table's MIG section maps device indices to GI/CI ids and SMs,
// and `-lgi` gives each GI's profile and placement.
import { SlicecheckError } from "../errors.js";
import { parseGpus } from "../nvsmi/gpus.js";
import { parseLgi } from "../nvsmi/lgi.js";
import { parseTable } from "../nvsmi/table.js";
import type { Transport } from "../transport/types.js";

export interface Instance {
  node: string;
  gpu: number;
  gpuUuid: string;
  gpuName: string;
  /** What CUDA_VISIBLE_DEVICES gets: `MIG-…` (or the old `MIG-GPU-…/gi/ci`), or `GPU-…`. */
  uuid: string;
  /** `3g.40gb`, `1c.3g.40gb`; `whole-gpu` when MIG is off. */
  profile: string;
  gpuInstanceId: number | null;
  computeInstanceId: number | null;
  /** Memory-slice placement of the GI, `start:size`; null for a whole GPU. */
  placement: string | null;
  sm: number | null;
  memoryMiB: number | null;
}

export interface NodeInventory {
  driver: string | null;
  cuda: string | null;
  instances: Instance[];
}

/** nvidia-smi answers these in seconds; one that does not is hung (a wedged driver or GPU). */
export const NVSMI_TIMEOUT_MS = 30_000;

async function run(t: Transport, argv: string[], what: string): Promise<string> {
  const r = await t.exec({ argv }, { timeoutMs: NVSMI_TIMEOUT_MS });
  // A hung tool is not a missing one: killed at its deadline, it is a timeout of that command.
  if (r.timedOut) {
    throw new SlicecheckError(
      "COMMAND_TIMEOUT",
      `${t.node.name}: \`${argv.join(" ")}\` did not answer within ${NVSMI_TIMEOUT_MS / 1000} s while reading ${what}, and was killed: a hung driver or GPU? Check \`nvidia-smi\` on the node and its kernel log`,
      { node: t.node.name, command: argv.join(" ") },
    );
  }
  if (r.exitCode !== 0) {
    throw new SlicecheckError(
      "TOOL_MISSING",
      `${t.node.name}: \`${argv.join(" ")}\` failed (exit ${r.exitCode}) while reading ${what}: ${(r.stdout + r.stderr).trim().slice(0, 300)}`,
      {
        node: t.node.name,
      },
    );
  }
  return r.stdout;
}

export function joinInstances(
  node: string,
  listing: ReturnType<typeof parseGpus>,
  table: ReturnType<typeof parseTable>,
  lgi: ReturnType<typeof parseLgi> | null,
): Instance[] {
  const out: Instance[] = [];
  for (const g of listing.gpus) {
    const tg = table.gpus.find((x) => x.index === g.index);
    if (g.migDevices.length === 0) {
      if (tg?.migMode === "Enabled") continue; // MIG on, no instance: nothing can run there
      out.push({
        node,
        gpu: g.index,
        gpuUuid: g.uuid,
        gpuName: g.name,
        uuid: g.uuid,
        profile: "whole-gpu",
        gpuInstanceId: null,
        computeInstanceId: null,
        placement: null,
        sm: null,
        memoryMiB: tg?.memoryTotalMiB ?? null,
      });
      continue;
    }
    for (const d of g.migDevices) {
      const row = table.migDevices.find((m) => m.gpu === g.index && m.device === d.index);
      const giId = d.gpuInstanceId ?? row?.gpuInstanceId ?? null;
      const gi =
        giId === null
          ? undefined
          : lgi?.gpuInstances.find((x) => x.gpu === g.index && x.id === giId);
      out.push({
        node,
        gpu: g.index,
        gpuUuid: g.uuid,
        gpuName: g.name,
        uuid: d.uuid,
        profile: d.name,
        gpuInstanceId: giId,
        computeInstanceId: d.computeInstanceId ?? row?.computeInstanceId ?? null,
        placement: gi ? `${gi.start}:${gi.size}` : null,
        sm: row?.sm ?? null,
        memoryMiB: row?.memoryTotalMiB ?? null,
      });
    }
  }
  return out;
}

export async function discoverInstances(t: Transport): Promise<NodeInventory> {
  // The three reads go at once (each is a channel and a login on the node); -lgi is only used,
  // and its failure only matters, when the GPU listing shows MIG devices.
  // Awaited in this order, so a node whose nvidia-smi hangs is reported by its first read.
  const listingText = run(t, ["nvidia-smi", "-L"], "the GPUs");
  const tableText = run(t, ["nvidia-smi"], "the MIG devices");
  const lgiText = run(t, ["nvidia-smi", "mig", "-lgi"], "the GPU instances");
  for (const p of [tableText, lgiText]) p.catch(() => {});
  const listing = parseGpus(await listingText);
  const table = parseTable(await tableText);
  const anyMig = listing.gpus.some((g) => g.migDevices.length > 0);
  const lgi = anyMig ? parseLgi(await lgiText) : null;
  return {
    driver: table.driverVersion,
    cuda: table.cudaVersion,
    instances: joinInstances(t.node.name, listing, table, lgi),
  };
}
