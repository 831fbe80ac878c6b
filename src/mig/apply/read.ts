// Reads what a node's GPUs look like now: MIG mode, GPU and compute instances, compute
// processes, the live profile catalogue, the driver clients that block a mode change, and the
// Slurm node's state. Every read is a plain nvidia-smi (or pgrep/lsmod/scontrol) call parsed by
// the nvsmi parsers; they run side by side on one connection.

import { SlicecheckError } from "../../errors.js";
import { expandHostlist } from "../../inventory/slurm-hostlist.js";
import type { NodeSpec } from "../../inventory/types.js";
import {
  type Argv,
  DEFAULT_APP_FIELDS,
  type ListingNotice,
  listComputeInstances,
  listGpuInstancePlacements,
  listGpuInstanceProfiles,
  listGpuInstances,
  parseComputeApps,
  parseLci,
  parseLgi,
  parseLgip,
  parseLgipp,
  parseQueryGpu,
  type QueryRow,
  queryComputeApps,
  queryGpu,
} from "../../nvsmi/index.js";
import { parseVgpuHosts, type VgpuHost } from "../../nvsmi/virt.js";
import type { Transport } from "../../transport/types.js";
import { quote } from "../../util/shell.js";
import { normaliseDeviceId } from "../layout/index.js";
import { type Output, type Read, readBundle } from "./bundle.js";
import { faultRefusals } from "./interlocks.js";
import type {
  GiState,
  GpuListings,
  GpuMigState,
  GpuProcess,
  GpuSnapshot,
  NodeSnapshot,
  SlurmView,
} from "./types.js";

const GPU_FIELDS = [
  "index",
  "uuid",
  "name",
  "pci.bus_id",
  "pci.device_id",
  "driver_version",
  "mig.mode.current",
  "mig.mode.pending",
];

/**
 * Clients that keep a GPU open without being CUDA processes. A real node shows the daemons in
 * its process table and nvidia_drm in its module list (lsmod, else /sys/module).
 */
const HOLDER_PROBE = [
  'for p in nvidia-persistenced nv-hostengine; do pgrep -x "$p" >/dev/null 2>&1 && echo "holder=$p"; done',
  "if command -v lsmod >/dev/null 2>&1; then lsmod | grep -q '^nvidia_drm ' && echo holder=nvidia_drm;",
  "elif [ -d /sys/module/nvidia_drm ]; then echo holder=nvidia_drm; fi",
  "true",
].join("\n");

export function nodeCommandError(
  node: string,
  argv: Argv | string,
  r: Output | null,
  why: string,
): SlicecheckError {
  const cmd = typeof argv === "string" ? argv : argv.join(" ");
  const out = r ? `${r.stdout}${r.stderr}`.trim().split("\n").slice(-4).join(" | ") : "";
  return new SlicecheckError(
    "NODE_COMMAND",
    `${node}: \`${cmd}\` ${why}${r ? ` (exit ${r.timedOut ? "timeout" : String(r.exitCode)})` : ""}${out ? `: ${out}` : ""}`,
    { node, command: cmd, exitCode: r?.exitCode ?? null },
  );
}

function parsed<T>(node: string, argv: Argv, r: Output, parse: (s: string) => T): T {
  try {
    return parse(r.stdout);
  } catch (e) {
    throw nodeCommandError(node, argv, r, `printed what slicecheck cannot read: ${errText(e)}`);
  }
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** A listing that printed only "No … found" counts as empty; an error notice does not. */
function listing<T extends { notices?: ListingNotice[] }>(
  node: string,
  argv: Argv,
  r: Output,
  parse: (s: string) => T,
): T {
  const out = parsed(node, argv, r, parse);
  const bad = out.notices?.find((n) => n.kind === "error");
  const empty = out.notices?.some((n) => n.kind !== "error") ?? false;
  if (bad || (r.exitCode !== 0 && !empty)) {
    throw nodeCommandError(node, argv, r, bad ? `failed: ${bad.message}` : "failed");
  }
  return out;
}

function mode(v: unknown): boolean | null {
  if (v === "Enabled") return true;
  if (v === "Disabled") return false;
  return null;
}

function str(v: unknown): string {
  return v === null || v === undefined ? "" : String(v);
}

function gpuRows(node: string, argv: Argv, fields: readonly string[], r: Output): QueryRow[] {
  if (r.exitCode !== 0) throw nodeCommandError(node, argv, r, "failed");
  const rows = parsed(node, argv, r, (s) => parseQueryGpu(s, fields).rows);
  if (rows.length === 0) throw nodeCommandError(node, argv, r, "lists no GPU");
  return rows;
}

/** GIs with their CIs, for every GPU in the listings (keyed by GPU index). */
export function geometry(
  lgi: ReturnType<typeof parseLgi>,
  lci: ReturnType<typeof parseLci>,
): Map<number, GiState[]> {
  const out = new Map<number, GiState[]>();
  for (const g of lgi.gpuInstances) {
    const cis = lci.computeInstances
      .filter((c) => c.gpu === g.gpu && c.gpuInstanceId === g.id)
      .map((c) => ({
        id: c.id,
        profileId: c.profileId,
        profile: c.name,
        start: c.start,
        size: c.size,
      }))
      .sort((a, b) => (a.start ?? a.id) - (b.start ?? b.id) || a.id - b.id);
    const gi: GiState = {
      id: g.id,
      profileId: g.profileId,
      profile: g.name,
      start: g.start,
      size: g.size,
      cis,
    };
    out.set(g.gpu, [...(out.get(g.gpu) ?? []), gi]);
  }
  for (const list of out.values()) list.sort((a, b) => a.start - b.start || a.id - b.id);
  return out;
}

function holdersOf(r: Output): string[] {
  return r.stdout
    .split("\n")
    .filter((l) => l.startsWith("holder="))
    .map((l) => l.slice("holder=".length).trim());
}

function slurmOf(slurmNode: string, r: Output): SlurmView {
  const state = /(?:^|\s)State=(\S+)/m.exec(r.stdout)?.[1] ?? null;
  if (r.exitCode === 0 && state) return { node: slurmNode, state, problem: null };
  const said = `${r.stdout}${r.stderr}`.trim().split("\n")[0] ?? "";
  const problem =
    r.exitCode === 127
      ? "scontrol is not installed on the node"
      : `\`scontrol show node ${quote(slurmNode)}\` ${said ? `said: ${said}` : `failed (exit ${String(r.exitCode)})`}`;
  return { node: slurmNode, state: null, problem };
}

function modeOf(row: QueryRow): { migCurrent: boolean; migPending: boolean } {
  return {
    migCurrent: mode(row["mig.mode.current"]) === true,
    migPending: mode(row["mig.mode.pending"]) === true,
  };
}

/** The MIG mode of one GPU alone: the re-read right after `-mig` or a reset. */
export async function readGpuMode(
  t: Transport,
  gpu: number,
): Promise<{ migCurrent: boolean; migPending: boolean }> {
  const argv = queryGpu(GPU_FIELDS, { gpu });
  const [q] = await readBundle(t, [argv]);
  return modeOf(gpuRows(t.node.name, argv, GPU_FIELDS, q!)[0]!);
}

/** Mode and geometry of one GPU: the re-read after every change. */
export async function readGpuMig(t: Transport, gpu: number): Promise<GpuMigState> {
  const node = t.node.name;
  const reads = [queryGpu(GPU_FIELDS, { gpu }), listGpuInstances(gpu), listComputeInstances(gpu)];
  const [q, lgi, lci] = await readBundle(t, reads);
  const row = gpuRows(node, reads[0]!, GPU_FIELDS, q!)[0]!;
  const geo = geometry(
    listing(node, reads[1]!, lgi!, parseLgi),
    listing(node, reads[2]!, lci!, parseLci),
  );
  return { ...modeOf(row), gis: geo.get(gpu) ?? [] };
}

function listingsOf(node: string, lgip: Output, lgipp: Output): Map<number, GpuListings> {
  const out = new Map<number, GpuListings>();
  // A driver that lists no profiles (MIG off) is not an error: the built-in catalogue stands in.
  if (lgip.exitCode !== 0 || lgipp.exitCode !== 0) return out;
  const profiles = parsed(node, listGpuInstanceProfiles(), lgip, parseLgip);
  const placements = parsed(node, listGpuInstancePlacements(), lgipp, parseLgipp);
  for (const g of profiles.gpus) {
    const p = placements.gpus.find((x) => x.index === g.index);
    if (p && g.profiles.length > 0) {
      out.set(g.index, { profiles: g.profiles, placements: p.placements });
    }
  }
  return out;
}

/** The live catalogue of one GPU (empty when the driver lists none: MIG off). */
export async function readListings(t: Transport, gpu: number): Promise<Map<number, GpuListings>> {
  const [lgip, lgipp] = await readBundle(t, [
    listGpuInstanceProfiles(gpu),
    listGpuInstancePlacements(gpu),
  ]);
  return listingsOf(t.node.name, lgip!, lgipp!);
}

function virtualizationOf(r: Output): Map<number, string> {
  const out = new Map<number, string>();
  if (r.exitCode !== 0) return out;
  try {
    for (const row of parseQueryGpu(r.stdout, VIRT_FIELDS).rows) {
      if (typeof row.index === "number" && row.virtualization_mode !== null) {
        out.set(row.index, str(row.virtualization_mode));
      }
    }
  } catch {
    // An unreadable answer is treated as "not said", as for a driver without the field.
  }
  return out;
}

// Asked apart from the main query: a driver that lacks the field must not fail the snapshot.
const VIRT_FIELDS = ["index", "virtualization_mode"];

export async function readNode(
  t: Transport,
  spec: NodeSpec,
  timeoutMs?: number,
): Promise<NodeSnapshot> {
  const node = spec.name;
  const reads: Read[] = [
    queryGpu(GPU_FIELDS),
    queryComputeApps(DEFAULT_APP_FIELDS),
    listGpuInstances(),
    listComputeInstances(),
    listGpuInstanceProfiles(),
    listGpuInstancePlacements(),
    queryGpu(VIRT_FIELDS),
    ["nvidia-smi", "vgpu", "-q"],
    { shell: HOLDER_PROBE },
    ...(spec.slurmNode ? [["scontrol", "show", "node", spec.slurmNode]] : []),
    // Inside our own job on the node: which jobs run there, and our reservation's extent.
    ...(spec.slurmNode && spec.slurmJob
      ? [
          ["squeue", "-h", "-w", spec.slurmNode, "-t", "all", "-o", "%A %T"],
          ...(spec.slurmJob.reservation
            ? [["scontrol", "show", "reservation", "-o", spec.slurmJob.reservation]]
            : []),
        ]
      : []),
  ];
  const [q, apps, lgi, lci, lgip, lgipp, virt, vgpuQ, holders, slurm, jobs, reservation] =
    await readBundle(t, reads, { timeoutMs });
  const rows = gpuRows(node, queryGpu(GPU_FIELDS), GPU_FIELDS, q!);
  const appsArgv = queryComputeApps(DEFAULT_APP_FIELDS);
  if (apps!.exitCode !== 0) throw nodeCommandError(node, appsArgv, apps!, "failed");
  const appRows = parsed(node, appsArgv, apps!, (s) => parseComputeApps(s, DEFAULT_APP_FIELDS));
  const geo = geometry(
    listing(node, listGpuInstances(), lgi!, parseLgi),
    listing(node, listComputeInstances(), lci!, parseLci),
  );
  const listings = listingsOf(node, lgip!, lgipp!);
  const virtualization = virtualizationOf(virt!);
  // Not a vGPU host: nvidia-smi says so with a non-zero exit; nothing serves vGPUs then.
  const vgpuHosts = vgpuQ?.exitCode === 0 ? parseVgpuHosts(vgpuQ.stdout) : [];
  const gpus: GpuSnapshot[] = rows.map((row) => {
    const index = Number(row.index);
    const uuid = str(row.uuid);
    const processes: GpuProcess[] = appRows.apps
      .filter((a) => a.gpu_uuid === uuid)
      .map((a) => ({
        pid: Number(a.pid),
        name: str(a.process_name),
        usedMiB: typeof a.used_memory === "number" ? a.used_memory : null,
      }));
    const current = mode(row["mig.mode.current"]);
    return {
      index,
      uuid,
      name: str(row.name),
      busId: str(row["pci.bus_id"]),
      pciDeviceId: normaliseDeviceId(str(row["pci.device_id"])),
      migCapable: current !== null,
      ...modeOf(row),
      virtualization: virtualization.get(index) ?? null,
      vgpuHost: vgpuHostOf(vgpuHosts, str(row["pci.bus_id"])),
      gis: geo.get(index) ?? [],
      processes,
      listings: listings.get(index) ?? null,
    };
  });
  return {
    node,
    driver: str(rows[0]?.driver_version),
    gpus,
    holders: holdersOf(holders!),
    slurm:
      spec.slurmNode && slurm
        ? withOwnJob(slurmOf(spec.slurmNode, slurm), spec, jobs, reservation)
        : null,
  };
}

/**
 * A `--via slurm` task's view of its node: held when its own job is the only live job there
 * and the node lies in the task's reservation, active now (Slurm then starts no job of anyone
 * outside the reservation on it). Anything unread or unexpected leaves it not held.
 */
function withOwnJob(
  v: SlurmView,
  spec: NodeSpec,
  jobs: Output | undefined,
  reservation: Output | undefined,
): SlurmView {
  const own = spec.slurmJob;
  if (!own || v.state === null) return v;
  const no = (why: string): SlurmView => ({ ...v, ownJob: { jobId: own.jobId, held: false, why } });
  if (jobs?.exitCode !== 0) return no("squeue could not list the node's jobs");
  const live = jobs.stdout
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter(([id, state]) => id && /^(RUNNING|COMPLETING|SUSPENDED|CONFIGURING)$/.test(state ?? ""))
    .map(([id]) => id as string);
  const others = live.filter((id) => id !== own.jobId);
  if (!live.includes(own.jobId)) return no(`squeue does not show job ${own.jobId} on the node`);
  if (others.length) return no(`job(s) ${others.join(", ")} run there too`);
  if (!own.reservation) return no("no reservation keeps other jobs off the node");
  const r = reservation?.exitCode === 0 ? reservation.stdout : "";
  const state = /(?:^|\s)State=(\S+)/.exec(r)?.[1];
  const nodes = /(?:^|\s)Nodes=(\S+)/.exec(r)?.[1];
  if (!state || !nodes) return no(`reservation ${own.reservation} could not be read`);
  if (state !== "ACTIVE") return no(`reservation ${own.reservation} is ${state}, not ACTIVE`);
  if (!expandHostlist(nodes).includes(v.node))
    return no(`reservation ${own.reservation} (Nodes=${nodes}) does not hold ${v.node}`);
  return { ...v, ownJob: { jobId: own.jobId, held: true, why: null } };
}

function vgpuHostOf(hosts: readonly VgpuHost[], busId: string): GpuSnapshot["vgpuHost"] {
  const key = (b: string) => b.toLowerCase().replace(/^0+/, "");
  const h = hosts.find((x) => key(x.pciBusId) === key(busId));
  if (!h || h.active === 0) return null;
  return {
    active: h.active,
    names: h.vgpus.map((v) => `${v.name ?? `vGPU ${v.id}`}${v.vm ? ` of VM ${v.vm}` : ""}`),
  };
}

/** What stops a suite from faulting this node (see faultRefusals); empty when nothing does. */
export async function interlockRefusals(t: Transport, spec: NodeSpec): Promise<string[]> {
  return faultRefusals(await readNode(t, spec));
}
