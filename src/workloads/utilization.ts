// Per-instance utilization while a workload runs: SM activity and memory in use, sampled on the
// node every interval. Where nv-hostengine runs, `dcgmi dmon` gives both (profiling field 1002
// SM active, 252 framebuffer used); otherwise the default `nvidia-smi` table gives the memory
// in use per MIG device (per GI: its CIs share the GI's memory) or per whole GPU, and no SM
// activity (`utilization.gpu` reads N/A under MIG, mig-reference.md §4). Parsing and the
// figures are pure; the sampler runs one command at a time over the node's session.
import { parseTable } from "../nvsmi/table.js";
import type { Supervisor, Transport } from "../transport/types.js";
import { sharedAbort } from "../util/abort.js";
import type { Instance } from "./instances.js";
import { type InstanceOutcome, openSupervisor } from "./launcher.js";
import type { Metric } from "./specs.js";
import {
  DISCOVERY_ARGV,
  DMON_ARGV,
  type Reading,
  ReadingParser,
  samplerLoopScript,
} from "./utilization-loop.js";

export { DISCOVERY_ARGV, DMON_ARGV };

export type UtilizationSource = "dcgm" | "nvidia-smi";

export interface UtilizationSample {
  /** ms since the sampler started. */
  t: number;
  /** 0-1 fraction of the instance's SMs active; null where the source has none. */
  smActive: number | null;
  memUsedMiB: number | null;
}

interface DmonRow {
  gpu: number;
  /** null: the GPU's own row; else the GPU-I entity id. */
  gpuInstance: number | null;
  smActive: number | null;
  memUsedMiB: number | null;
}

/** `dcgmi dmon -e 1002,252` rows: `GPU <n>` rows, each followed by its `GPU-I <id>` rows. The
 * columns are found by their header (SMACT, FBUSD); `N/A` is null. */
export function parseDmon(text: string): DmonRow[] {
  const lines = text.split(/\r?\n/);
  const head = lines.find((l) => /^#\s*Entity/.test(l));
  if (!head) throw new Error("dcgmi dmon: no #Entity header");
  const cols = head
    .replace(/^#\s*Entity\s*/, "")
    .trim()
    .split(/\s+/);
  const rows: DmonRow[] = [];
  let gpu: number | null = null;
  for (const l of lines) {
    const m = /^(GPU-I|GPU)\s+(\d+)\s+(.*)$/.exec(l.trim());
    if (!m) continue;
    const vals = m[3]!.trim().split(/\s+/);
    const get = (name: string) => {
      const k = cols.indexOf(name);
      const x = k >= 0 ? Number(vals[k]) : Number.NaN;
      return Number.isFinite(x) ? x : null;
    };
    if (m[1] === "GPU") gpu = Number(m[2]);
    if (gpu === null) continue;
    rows.push({
      gpu,
      gpuInstance: m[1] === "GPU-I" ? Number(m[2]) : null,
      smActive: get("SMACT"),
      memUsedMiB: get("FBUSD"),
    });
  }
  return rows;
}

/** DCGM's GPU-I entity id → the MIG GPU instance it is (`gpu/gi`), from `dcgmi discovery -c`:
 * `-> I <gpu>/<gi>` rows carrying `GPU Instance (EntityID: <n>)`. DCGM numbers GPU instances
 * itself, so dmon's `GPU-I <n>` is not the GI id. Layout reconstructed from DCGM's user guide
 * (the reference holds no capture). */
export function parseDcgmHierarchy(text: string): Map<number, { gpu: number; gi: number }> {
  const out = new Map<number, { gpu: number; gi: number }>();
  for (const l of text.split(/\r?\n/)) {
    const m = /->\s*I\s+(\d+)\/(\d+)\s*\|\s*GPU Instance \(EntityID:\s*(\d+)\)/.exec(l);
    if (m) out.set(Number(m[3]), { gpu: Number(m[1]), gi: Number(m[2]) });
  }
  return out;
}

/** One sample per instance from one dmon reading; a GPU-I row counts only through `entities`
 * (dcgmi discovery -c): without the map, no MIG instance is attributed a row. */
export function fromDmon(
  rows: readonly DmonRow[],
  instances: readonly Instance[],
  entities: ReadonlyMap<number, { gpu: number; gi: number }> = new Map(),
) {
  const out = new Map<string, Omit<UtilizationSample, "t">>();
  for (const i of instances) {
    const r = rows.find((x) => {
      if (x.gpu !== i.gpu) return false;
      if (x.gpuInstance === null || i.gpuInstanceId === null)
        return x.gpuInstance === i.gpuInstanceId;
      const e = entities.get(x.gpuInstance);
      return e !== undefined && e.gpu === i.gpu && e.gi === i.gpuInstanceId;
    });
    if (r) out.set(i.uuid, { smActive: r.smActive, memUsedMiB: r.memUsedMiB });
  }
  return out;
}

/** One sample per instance from the default table: memory only. */
export function fromTable(text: string, instances: readonly Instance[]) {
  const t = parseTable(text);
  const out = new Map<string, Omit<UtilizationSample, "t">>();
  for (const i of instances) {
    const mem =
      i.gpuInstanceId === null
        ? t.gpus.find((g) => g.index === i.gpu)?.memoryUsedMiB
        : t.migDevices.find((d) => d.gpu === i.gpu && d.gpuInstanceId === i.gpuInstanceId)
            ?.memoryUsedMiB;
    if (mem !== undefined) out.set(i.uuid, { smActive: null, memUsedMiB: mem });
  }
  return out;
}

export interface UtilizationResult {
  source: UtilizationSource | null;
  /** Per instance uuid. */
  samples: Map<string, UtilizationSample[]>;
  /** Why nothing could be sampled, when nothing was. */
  problem: string | null;
  /** Per instance uuid: why its figures are insufficient (too few samples, a peak below what
   * the workload holds); those figures are not recorded. */
  insufficient: Map<string, string>;
}

/** A transport that can decline a command rather than open another connection (the run's node
 * session: harness/session.ts execIfFree). */
interface SpareChannel {
  execIfFree(
    c: { argv: string[] },
    o: { timeoutMs: number },
  ): Promise<{ exitCode: number | null; stdout: string } | null>;
}
const spare = (t: Transport): SpareChannel | null =>
  typeof (t as unknown as Partial<SpareChannel>).execIfFree === "function"
    ? (t as unknown as SpareChannel)
    : null;

/** Samples every `intervalMs` from start() until stop(). Through the node's supervisor when
 * one runs (one looping command for the phase: utilization-loop.ts); otherwise one command per
 * tick, in flight one at a time and only on a channel that is free: a tick without one is
 * skipped, never a second connection. */
export class UtilizationSampler {
  private running = false;
  private loop: Promise<void> | null = null;
  private readonly result: UtilizationResult = {
    source: null,
    samples: new Map(),
    problem: null,
    insufficient: new Map(),
  };
  private skipped = 0;
  private t0 = 0;
  /** Ends the wait between ticks at once on stop(): the phase's end never waits an interval. */
  private wake: () => void = () => {};
  /** Stops the looping command (supervised sampling). */
  private readonly halt = sharedAbort();
  /** DCGM's GPU-I entity ids, read once `dcgmi discovery -c` answers. */
  private entities: Map<number, { gpu: number; gi: number }> | null = null;
  constructor(
    private readonly t: Transport,
    private readonly instances: readonly Instance[],
    private readonly intervalMs: number,
    private readonly supervisor: Supervisor | null = null,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.t0 = Date.now();
    const sup = this.supervisor;
    this.loop = sup && sup.fallback === null ? this.supervised(sup) : this.ticks();
  }

  /** One command per tick. The first reading waits one interval: the workloads start first,
   * and a sampler's nvidia-smi never competes with their start for the node's state. */
  private async ticks(): Promise<void> {
    const sleep = () =>
      new Promise<void>((res) => {
        const timer = setTimeout(res, this.intervalMs);
        this.wake = () => {
          clearTimeout(timer);
          res();
        };
      });
    await sleep();
    while (this.running) {
      await this.tick();
      if (this.running) await sleep();
    }
  }

  /** The looping command through the supervisor; if it ends early, ticks take over. */
  private async supervised(sup: Supervisor): Promise<void> {
    const parser = new ReadingParser();
    const timeoutMs = 24 * 3600_000;
    try {
      await sup.exec(
        { shell: samplerLoopScript(this.intervalMs) },
        {
          timeoutMs,
          signal: this.halt.signal,
          // sleep, nvidia-smi and dcgmi: stopped with their group, not a scan of the node.
          staysInGroup: true,
          onStdout: (c) => {
            for (const r of parser.feed(c)) this.take(r);
          },
        },
      );
    } catch {
      /* stopped (INTERRUPTED), or its supervisor is gone: the ticks below, if still running */
    }
    if (this.running) await this.ticks();
  }

  /** One reading of the looping command, judged as the per-tick sampler judges its own. */
  private take(r: Reading): void {
    if (r.kind === "discovery") {
      this.result.source = "dcgm";
      this.readEntities(r.code, r.out);
    } else if (r.kind === "dmon" && r.code !== 0 && this.result.source === null)
      this.result.source = "nvidia-smi";
    else {
      this.result.source ??= r.kind === "dmon" ? "dcgm" : "nvidia-smi";
      this.record({ code: r.code, out: r.out });
    }
  }

  private readEntities(code: number | null, out: string): void {
    this.entities = code === 0 ? parseDcgmHierarchy(out) : new Map();
    if (this.entities.size === 0 && this.instances.some((i) => i.gpuInstanceId !== null))
      this.result.problem = `dcgmi discovery -c did not map DCGM's GPU-I ids to MIG instances (exit ${code ?? "none"}): no MIG instance is given a DCGM row`;
  }

  /** One reading; the source is decided by the first dmon that gets a channel. */
  private async tick(): Promise<void> {
    let r: { code: number | null; out: string } | null = null;
    if (this.result.source === null) {
      const dmon = await this.exec(DMON_ARGV);
      if (dmon === null) return;
      this.result.source = dmon.code === 0 ? "dcgm" : "nvidia-smi";
      // The reading that found DCGM is a sample already: every tick counts (few samples make
      // an insufficient figure).
      if (dmon.code === 0) r = dmon;
    }
    if (this.result.source === "dcgm" && this.entities === null) {
      const d = await this.exec(DISCOVERY_ARGV);
      if (d === null) return;
      this.readEntities(d.code, d.out);
    }
    r ??= await this.exec(this.result.source === "dcgm" ? DMON_ARGV : ["nvidia-smi"]);
    if (r !== null) this.record(r);
  }

  /** A reading's samples, per instance. */
  private record(r: { code: number | null; out: string }): void {
    if (r.code !== 0) {
      this.result.problem = `the sample command failed (exit ${r.code ?? "none"})`;
      return;
    }
    try {
      const got =
        this.result.source === "dcgm"
          ? fromDmon(parseDmon(r.out), this.instances, this.entities ?? new Map())
          : fromTable(r.out, this.instances);
      for (const [uuid, s] of got)
        this.result.samples.set(uuid, [
          ...(this.result.samples.get(uuid) ?? []),
          { t: Date.now() - this.t0, ...s },
        ]);
    } catch (e) {
      this.result.problem = (e as Error).message;
    }
  }

  async stop(): Promise<UtilizationResult> {
    this.running = false;
    this.wake();
    this.halt.abort("the phase ended");
    await this.loop;
    if (this.result.samples.size > 0) this.result.problem = null;
    else if (this.skipped > 0)
      this.result.problem = `no SSH channel was free to sample (${this.skipped} tick(s)): the workloads and the lock fill the connection's budget`;
    return this.result;
  }

  private async exec(argv: string[]): Promise<{ code: number | null; out: string } | null> {
    try {
      const s = spare(this.t);
      const r = s
        ? await s.execIfFree({ argv }, { timeoutMs: 15_000 })
        : await this.t.exec({ argv }, { timeoutMs: 15_000 });
      if (r === null) this.skipped++;
      return r ? { code: r.exitCode, out: r.stdout } : null;
    } catch {
      return null;
    }
  }
}

/** Fewer samples than this are no measurement of a workload's activity: one reading can fall
 * before the workload started or after it stopped (a 7-instance GPU gave one each). */
export const MIN_UTIL_SAMPLES = 3;

/** Every CUDA process holds at least its context while it runs (hundreds of MiB on A100/H100;
 * taken low here, so that only a reading that plainly missed the workload is refused): a peak
 * below it (12 MiB: an idle MIG device) means no sample saw the workload, not that it used
 * that little. */
export const CUDA_CONTEXT_FLOOR_MIB = 64;

/** An instance's samples judged: the figures worth recording, or why they are insufficient. */
export function judgeUtilization(samples: readonly UtilizationSample[]): {
  metrics: Metric[];
  insufficient: string | null;
} {
  if (samples.length === 0) return { metrics: [], insufficient: null };
  const count: Metric = { metric: "utilization_samples", value: samples.length, unit: "count" };
  if (samples.length < MIN_UTIL_SAMPLES)
    return {
      metrics: [count],
      insufficient: `${samples.length} sample(s), fewer than the ${MIN_UTIL_SAMPLES} a figure needs: not a measurement`,
    };
  const mem = samples.map((s) => s.memUsedMiB).filter((x): x is number => x !== null);
  const peak = mem.length ? Math.max(...mem) : null;
  if (peak !== null && peak < CUDA_CONTEXT_FLOOR_MIB)
    return {
      metrics: [count],
      insufficient: `memory in use peaked at ${peak} MiB, below the ${CUDA_CONTEXT_FLOOR_MIB} MiB any running CUDA workload holds (its context): the samples missed the workload, not a measurement`,
    };
  return { metrics: utilizationMetrics(samples), insufficient: null };
}

/** An instance's samples as measurements recorded with the run (and shown as check figures).
 * Too few samples give the count alone (judgeUtilization says why). */
export function utilizationMetrics(samples: readonly UtilizationSample[]): Metric[] {
  if (samples.length === 0) return [];
  if (samples.length < MIN_UTIL_SAMPLES)
    return [{ metric: "utilization_samples", value: samples.length, unit: "count" }];
  const sm = samples.map((s) => s.smActive).filter((x): x is number => x !== null);
  const mem = samples.map((s) => s.memUsedMiB).filter((x): x is number => x !== null);
  const out: Metric[] = [{ metric: "utilization_samples", value: samples.length, unit: "count" }];
  if (sm.length) {
    out.push({
      metric: "sm_active_mean",
      value: Number(((100 * sm.reduce((a, b) => a + b, 0)) / sm.length).toFixed(1)),
      unit: "%",
    });
    out.push({
      metric: "sm_active_max",
      value: Number((100 * Math.max(...sm)).toFixed(1)),
      unit: "%",
    });
  }
  if (mem.length) out.push({ metric: "memory_used_max", value: Math.max(...mem), unit: "MiB" });
  return out;
}

/** The node's supervisor a sampled phase shares with its workloads, and when it was asked for. */
export type SharedPhase = { supervisor: Supervisor; phaseStartMs: number };

/** Runs `work` with a sampler over `instances` when `sample` is set; the outcomes get the
 * utilization measurements of their instance (recorded with the run like any other). With a
 * sampler, the node's supervisor is opened here and handed to `work` with the time it was asked
 * for: the workloads and the sampler share its one login (the phase's only one), and the phase
 * counts from before that login. */
export async function withUtilization<T extends { outcomes: InstanceOutcome[] }>(
  t: Transport,
  instances: readonly Instance[],
  o: { sample: boolean; durationS: number },
  work: (shared: SharedPhase | null) => Promise<T>,
): Promise<{ result: T; util: UtilizationResult | null }> {
  if (!o.sample) return { result: await work(null), util: null };
  const phaseStartMs = Date.now();
  const supervisor = await openSupervisor(t);
  const interval = Math.max(500, (o.durationS * 1000) / 10);
  const sampler = new UtilizationSampler(t, instances, interval, supervisor);
  let result: T;
  try {
    const working = work({ supervisor, phaseStartMs });
    // Its failure is taken by the await below, not reported as unhandled while the turn passes.
    working.catch(() => {});
    // The workloads' requests go first (sent before the next turn of the event loop): the
    // sampler's command, which waits an interval before its first reading anyway, is started
    // after them rather than ahead of them on a node whose cores every launch shares.
    await new Promise((r) => setImmediate(r));
    sampler.start();
    result = await working;
  } finally {
    await sampler.stop();
    await supervisor.close();
  }
  const util = await sampler.stop();
  for (const out of result.outcomes) {
    const first = out.measurements[0];
    const i = out.instance;
    const judged = judgeUtilization(util.samples.get(i.uuid) ?? []);
    if (judged.insufficient) util.insufficient.set(i.uuid, judged.insufficient);
    for (const m of judged.metrics)
      out.measurements.push({
        node: i.node,
        gpuUuid: i.gpuUuid,
        instanceUuid: i.uuid,
        profile: i.profile,
        placement: i.placement,
        workload: first?.workload ?? "stress",
        repetition: first?.repetition ?? 1,
        ...m,
      });
  }
  return { result, util };
}
