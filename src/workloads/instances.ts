// Where workloads run: every MIG device of every GPU of a node (one CUDA process sees one MIG
// device), or the whole GPU where MIG is off. Built from three outputs, because none says it
// all: `-L` has the UUIDs, the table's MIG section maps device indices to GI/CI ids and SMs,
// and `-lgi` gives each GI's profile and placement.
import { SlicecheckError } from "../errors.js";
import {
  type BundleOptions,
  type Read as BundleRead,
  type Output,
  readBundle,
} from "../mig/apply/bundle.js";
import type { Argv } from "../nvsmi/commands.js";
import { parseGpus } from "../nvsmi/gpus.js";
import { parseLgi } from "../nvsmi/lgi.js";
import { type LostGpu, NVSMI_EXIT_GPU_LOST, splitLostGpus } from "../nvsmi/lost.js";
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
  /** On a vGPU guest's GPU (virtualization mode VGPU): its framebuffer in MiB as nvidia-smi's
   * memory.total shows it, null when unreadable; absent on any other GPU. */
  vgpuFramebufferMiB?: number | null;
}

/** A GPU nvidia-smi could not reach at discovery (fallen off the bus): no instance runs there,
 * and the health suite fails it by name. */
export interface LostGpuView extends LostGpu {
  /** Its index (the place the listing left for it); null when that cannot be told. */
  index: number | null;
}

export interface NodeInventory {
  driver: string | null;
  cuda: string | null;
  instances: Instance[];
  /** GPUs lost at discovery; absent or empty when every GPU answered. */
  lost?: LostGpuView[];
  /** GPUs in MIG mode with no instance (a node back from a driver upgrade): nothing can run
   * there, but the layout and health suites still judge them. */
  empty?: EmptyGpu[];
}

export interface EmptyGpu {
  index: number;
  uuid: string;
  name: string;
}

/** nvidia-smi answers these in seconds; one that does not is hung (a wedged driver or GPU). */
export const NVSMI_TIMEOUT_MS = 30_000;

interface Read {
  text: string;
  lost: LostGpu[];
}

/** One read's answer; a lost GPU's line is taken out of the output (exit 15 with it is an answer
 * for the GPUs still on the bus, not a missing tool). */
function judged(node: string, argv: readonly string[], what: string, r: Output): Read {
  // A hung tool is not a missing one: killed at its deadline, it is a timeout of that command.
  if (r.timedOut) {
    throw new SlicecheckError(
      "COMMAND_TIMEOUT",
      `${node}: \`${argv.join(" ")}\` did not answer within ${NVSMI_TIMEOUT_MS / 1000} s while reading ${what}, and was killed: a hung driver or GPU? Check \`nvidia-smi\` on the node and its kernel log`,
      { node, command: argv.join(" ") },
    );
  }
  const split = splitLostGpus(r.stdout + (r.exitCode === 0 ? "" : `\n${r.stderr}`));
  if (r.exitCode === NVSMI_EXIT_GPU_LOST && split.lost.length > 0)
    return { text: split.rest, lost: split.lost };
  if (r.exitCode !== 0) {
    throw new SlicecheckError(
      "TOOL_MISSING",
      `${node}: \`${argv.join(" ")}\` failed (exit ${r.exitCode}) while reading ${what}: ${(r.stdout + r.stderr).trim().slice(0, 300)}`,
      { node },
    );
  }
  return { text: r.stdout, lost: [] };
}

/** The lost GPUs with their indices: GPUs enumerate in PCI bus order and a lost one keeps its
 * place, so the indices the listing skipped, in order, are the lost GPUs' in bus order. */
export function lostWithIndices(
  listed: readonly number[],
  lost: readonly LostGpu[],
): LostGpuView[] {
  const total = listed.length + lost.length;
  const have = new Set(listed);
  const missing = Array.from({ length: total }, (_, i) => i).filter((i) => !have.has(i));
  const key = (p: string) => p.toLowerCase().replace(/^0+/, "");
  const sorted = [...lost].sort((a, b) => key(a.pciBusId).localeCompare(key(b.pciBusId)));
  return sorted.map((g, k) => ({
    ...g,
    index: missing.length === sorted.length ? (missing[k] ?? null) : null,
  }));
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

/** The GPUs that are a vGPU guest's (`virtualization_mode` VGPU, NVML's name in a guest) and
 * each one's framebuffer (memory.total, which in a guest is the vGPU's: the cap its memory
 * promise is checked against). A read that fails (an older nvidia-smi without the field) finds
 * none: the GPU is then run as the soft route it looks like, and the route check still reads
 * the mode from `-q`. */
const GUESTS = [
  "nvidia-smi",
  "--query-gpu=index,virtualization_mode,memory.total",
  "--format=csv,noheader,nounits",
];

function vgpuGuests(r: Output): Map<number, number | null> {
  const out = new Map<number, number | null>();
  if (r.exitCode !== 0) return out;
  for (const l of r.stdout.split("\n")) {
    const [i, mode, total] = l.split(",").map((x) => x.trim());
    if (i && /^\d+$/.test(i) && mode === "VGPU")
      out.set(Number(i), total && /^\d+$/.test(total) ? Number(total) : null);
  }
  return out;
}

const LISTING = ["nvidia-smi", "-L"];
const TABLE = ["nvidia-smi"];
const LGI = ["nvidia-smi", "mig", "-lgi"];

/** Discovery's own reads, in the order inventoryOf takes their answers (the workloads bench's
 * floor makes the same reads without the harness). */
export const DISCOVERY_READS: readonly Argv[] = [LISTING, TABLE, LGI, GUESTS];

export function discoverInstances(
  t: Transport,
  exec?: BundleOptions["exec"],
): Promise<NodeInventory> {
  return discoverWith(t, {}, exec).inventory;
}

/** Discovery, with `also`'s reads in the same call (one login, where each would be its own):
 * each key's outputs in its reads' order, under the same per-read deadline. All answer when
 * every read of the call has; `also`'s fail only when the call does, not when the inventory
 * does. */
export function discoverWith(
  t: Transport,
  also: Readonly<Record<string, readonly BundleRead[]>>,
  exec?: BundleOptions["exec"],
): { inventory: Promise<NodeInventory>; also: Map<string, Promise<Output[]>> } {
  // The four reads side by side in one call: one channel and one login on the node, where each
  // of them was its own (a login runs the node's start-up files: 0.2-2 s on real nodes). -lgi
  // is only used, and its failure only matters, when the GPU listing shows MIG devices.
  // Each read under its own deadline: a hung nvidia-smi is that read's timeout, and names it.
  const reads = DISCOVERY_READS;
  const outs = readBundle(t, [...reads, ...Object.values(also).flat()], {
    readTimeoutS: NVSMI_TIMEOUT_MS / 1000,
    privileged: false,
    exec,
  });
  const keyed = new Map<string, Promise<Output[]>>();
  let at = reads.length;
  for (const [key, r] of Object.entries(also)) {
    const from = at;
    at += r.length;
    const mine = outs.then((o) => o.slice(from, from + r.length));
    mine.catch(() => {}); // the call's failure is the inventory's to report
    keyed.set(key, mine);
  }
  return { inventory: outs.then((o) => inventoryOf(t.node.name, o)), also: keyed };
}

/** The node's inventory from discovery's four outputs (LISTING, TABLE, LGI, GUESTS). */
function inventoryOf(node: string, outs: readonly Output[]): NodeInventory {
  const [listingOut, tableOut, lgiOut, guestsOut] = outs;
  // Judged in this order, so a node whose nvidia-smi hangs is reported by its first read.
  const listed = judged(node, LISTING, "the GPUs", listingOut!);
  const listing = parseGpus(listed.text);
  const table = parseTable(judged(node, TABLE, "the MIG devices", tableOut!).text);
  const anyMig = listing.gpus.some((g) => g.migDevices.length > 0);
  const lgi = anyMig ? parseLgi(judged(node, LGI, "the GPU instances", lgiOut!).text) : null;
  const fb = vgpuGuests(guestsOut!);
  const instances = joinInstances(node, listing, table, lgi).map((i) =>
    i.gpuInstanceId === null && fb.has(i.gpu)
      ? { ...i, vgpuFramebufferMiB: fb.get(i.gpu) ?? null }
      : i,
  );
  const empty = listing.gpus
    .filter(
      (g) =>
        g.migDevices.length === 0 &&
        table.gpus.find((x) => x.index === g.index)?.migMode === "Enabled",
    )
    .map((g) => ({ index: g.index, uuid: g.uuid, name: g.name }));
  return {
    driver: table.driverVersion,
    cuda: table.cudaVersion,
    instances,
    empty,
    lost: lostWithIndices(
      listing.gpus.map((g) => g.index),
      listed.lost,
    ),
  };
}
