// `slicecheck observe`: what the node's real tenants do, sampled without running anything on
// the GPUs. Per GPU (its own figure, also under MIG) and per GPU instance: how busy it is and
// how much memory is in use. Where nv-hostengine runs, `dcgmi dmon -e 1002,252` gives both for
// every GPU and GPU instance (SM active, framebuffer used; mig-reference.md, workloads.md);
// elsewhere nvidia-smi gives `utilization.gpu` for a whole GPU (it reads [N/A] under MIG) and
// the memory in use of every GPU and, from the default table, of every MIG device (per GI: its
// CIs share the GI's memory). Only reads: no workload, no layout change.
import { NVSMI_EXIT_GPU_LOST, splitLostGpus } from "../nvsmi/lost.js";
import { parseQueryGpu } from "../nvsmi/query.js";
import { parseTable } from "../nvsmi/table.js";
import type { ExecResult, Transport } from "../transport/types.js";
import { discoverInstances } from "./instances.js";
import { DISCOVERY_ARGV, DMON_ARGV, parseDcgmHierarchy, parseDmon } from "./utilization.js";

/** What is observed: a GPU (gpuInstanceId null; under MIG the GPU as a whole) or a GI. */
export interface ObservedUnit {
  node: string;
  gpu: number;
  gpuUuid: string;
  gpuName: string;
  gpuInstanceId: number | null;
  /** `whole-gpu` for a GPU's own figure, the GI's profile (`3g.40gb`) for a GI. */
  profile: string;
  placement: string | null;
  /** The memory the unit offers its tenants (the GPU's, or the GI's); null when unread. */
  memoryMiB: number | null;
  /** Unique on the node: the GPU's UUID, `<GPU UUID>/gi<id>` for a GI (GIs have no UUID). */
  key: string;
}

export interface ObserveSample {
  /** ms since the observation started. */
  t: number;
  /** 0-100; null where the source has none (nvidia-smi under MIG). */
  busyPct: number | null;
  memUsedMiB: number | null;
}

export type ObserveSource = "dcgm" | "nvidia-smi";

const READ_TIMEOUT_MS = 15_000;
export const GPU_QUERY = [
  "index",
  "uuid",
  "name",
  "memory.total",
  "utilization.gpu",
  "memory.used",
];
const gpuQueryArgv = [
  "nvidia-smi",
  `--query-gpu=${GPU_QUERY.join(",")}`,
  "--format=csv,noheader,nounits",
];

/** nvidia-smi's output for the GPUs it reached: exit 15 (a GPU fallen off the bus) still
 * answers for the others, without the lost GPU's line. Any other failure throws. */
export function nvsmiText(r: ExecResult, what: string): string {
  if (r.exitCode === 0) return r.stdout;
  if (r.exitCode === NVSMI_EXIT_GPU_LOST) return splitLostGpus(r.stdout).rest;
  throw new Error(
    `${what} failed (exit ${r.exitCode ?? "none"}): ${r.stderr.trim().slice(0, 200)}`,
  );
}

/** The node's GPUs and GPU instances, from one nvidia-smi query and the instance discovery;
 * the GPUs lost at discovery (not observed) by their bus id. */
export async function observedUnits(t: Transport): Promise<{
  units: ObservedUnit[];
  driver: string | null;
  cuda: string | null;
  lost: string[];
}> {
  const q = await t.exec({ argv: gpuQueryArgv }, { timeoutMs: READ_TIMEOUT_MS });
  const rows = parseQueryGpu(nvsmiText(q, "nvidia-smi --query-gpu"), GPU_QUERY).rows;
  const inv = await discoverInstances(t);
  const units: ObservedUnit[] = [];
  for (const r of rows) {
    const uuid = String(r.uuid);
    const gpu = Number(r.index);
    units.push({
      node: t.node.name,
      gpu,
      gpuUuid: uuid,
      gpuName: String(r.name),
      gpuInstanceId: null,
      profile: "whole-gpu",
      placement: null,
      memoryMiB: typeof r["memory.total"] === "number" ? r["memory.total"] : null,
      key: uuid,
    });
    const seen = new Set<number>();
    for (const i of inv.instances) {
      if (i.gpu !== gpu || i.gpuInstanceId === null || seen.has(i.gpuInstanceId)) continue;
      seen.add(i.gpuInstanceId);
      units.push({
        node: t.node.name,
        gpu,
        gpuUuid: uuid,
        gpuName: i.gpuName,
        gpuInstanceId: i.gpuInstanceId,
        // A CI's name is `1c.3g.40gb`; the GI is what holds the memory: `3g.40gb`.
        profile: i.profile.replace(/^\d+c\./, ""),
        placement: i.placement,
        memoryMiB: i.memoryMiB,
        key: `${uuid}/gi${i.gpuInstanceId}`,
      });
    }
  }
  const lost = (inv.lost ?? []).map((g) => `GPU ${g.index ?? "?"} (${g.pciBusId}): ${g.why}`);
  return { units, driver: inv.driver, cuda: inv.cuda, lost };
}

/** One DCGM reading per unit: GPU rows for GPUs, GPU-I rows (mapped by `entities`) for GIs. */
export function readingFromDmon(
  text: string,
  units: readonly ObservedUnit[],
  entities: ReadonlyMap<number, { gpu: number; gi: number }>,
): Map<string, Omit<ObserveSample, "t">> {
  const rows = parseDmon(text);
  const out = new Map<string, Omit<ObserveSample, "t">>();
  for (const u of units) {
    const r = rows.find((x) => {
      if (x.gpu !== u.gpu) return false;
      if (u.gpuInstanceId === null || x.gpuInstance === null)
        return u.gpuInstanceId === x.gpuInstance;
      const e = entities.get(x.gpuInstance);
      return e?.gpu === u.gpu && e.gi === u.gpuInstanceId;
    });
    if (r)
      out.set(u.key, {
        busyPct: r.smActive === null ? null : Number((100 * r.smActive).toFixed(1)),
        memUsedMiB: r.memUsedMiB,
      });
  }
  return out;
}

/** One nvidia-smi reading per unit: the GPU query for GPUs, the table's MIG devices for GIs. */
export function readingFromNvsmi(
  queryText: string,
  tableText: string | null,
  units: readonly ObservedUnit[],
): Map<string, Omit<ObserveSample, "t">> {
  const rows = parseQueryGpu(queryText, GPU_QUERY).rows;
  const mig = tableText === null ? [] : parseTable(tableText).migDevices;
  const out = new Map<string, Omit<ObserveSample, "t">>();
  const num = (v: unknown) => (typeof v === "number" ? v : null);
  for (const u of units) {
    if (u.gpuInstanceId === null) {
      const r = rows.find((x) => x.uuid === u.gpuUuid);
      if (r)
        out.set(u.key, { busyPct: num(r["utilization.gpu"]), memUsedMiB: num(r["memory.used"]) });
      continue;
    }
    const d = mig.find((x) => x.gpu === u.gpu && x.gpuInstanceId === u.gpuInstanceId);
    if (d) out.set(u.key, { busyPct: null, memUsedMiB: d.memoryUsedMiB });
  }
  return out;
}

/** Reads one sample of every unit; the source is decided by the first reading (DCGM when
 * `dcgmi dmon` answers, else nvidia-smi) and kept for the whole observation. */
export class NodeObserver {
  source: ObserveSource | null = null;
  private entities: Map<number, { gpu: number; gi: number }> = new Map();
  readonly samples = new Map<string, ObserveSample[]>();
  /** The last reading's trouble, if any (a failed command, an unparsable output). */
  problem: string | null = null;

  constructor(
    private readonly t: Transport,
    readonly units: readonly ObservedUnit[],
    private readonly t0 = Date.now(),
    readonly versions: { driver: string | null; cuda: string | null } = {
      driver: null,
      cuda: null,
    },
    /** GPUs lost at discovery: not observed. */
    readonly lost: readonly string[] = [],
  ) {}

  private async exec(argv: string[]) {
    return this.t.exec({ argv }, { timeoutMs: READ_TIMEOUT_MS });
  }

  private async decide(): Promise<void> {
    const dmon = await this.exec(DMON_ARGV);
    this.source = dmon.exitCode === 0 ? "dcgm" : "nvidia-smi";
    if (this.source === "dcgm" && this.units.some((u) => u.gpuInstanceId !== null)) {
      const d = await this.exec(DISCOVERY_ARGV);
      this.entities = d.exitCode === 0 ? parseDcgmHierarchy(d.stdout) : new Map();
    }
  }

  async tick(): Promise<void> {
    try {
      if (this.source === null) await this.decide();
      const got = this.source === "dcgm" ? await this.readDcgm() : await this.readNvsmi();
      const t = Date.now() - this.t0;
      for (const [key, s] of got)
        this.samples.set(key, [...(this.samples.get(key) ?? []), { t, ...s }]);
      this.problem = null;
    } catch (e) {
      this.problem = (e as Error).message;
    }
  }

  private async readDcgm() {
    const r = await this.exec(DMON_ARGV);
    if (r.exitCode !== 0) throw new Error(`dcgmi dmon failed (exit ${r.exitCode ?? "none"})`);
    return readingFromDmon(r.stdout, this.units, this.entities);
  }

  private async readNvsmi() {
    const q = nvsmiText(await this.exec(gpuQueryArgv), "nvidia-smi --query-gpu");
    const needTable = this.units.some((u) => u.gpuInstanceId !== null);
    const table = needTable ? nvsmiText(await this.exec(["nvidia-smi"]), "nvidia-smi") : null;
    return readingFromNvsmi(q, table, this.units);
  }
}

/** Samples every `intervalMs` until `durationMs` has passed or `signal` aborts; a reading that
 * fails is skipped (its problem kept), never the end of the observation. */
export async function observeNode(
  t: Transport,
  o: {
    durationMs: number;
    intervalMs: number;
    signal?: AbortSignal;
    onTick?: (elapsedMs: number, observer: NodeObserver) => void;
  },
): Promise<NodeObserver> {
  const { units, driver, cuda, lost } = await observedUnits(t);
  const t0 = Date.now();
  const obs = new NodeObserver(t, units, t0, { driver, cuda }, lost);
  for (let n = 0; !o.signal?.aborted; n++) {
    await obs.tick();
    o.onTick?.(Date.now() - t0, obs);
    const next = (n + 1) * o.intervalMs;
    if (next >= o.durationMs || o.signal?.aborted) break;
    await sleep(Math.max(0, next - (Date.now() - t0)), o.signal);
  }
  return obs;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((res) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      res();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
