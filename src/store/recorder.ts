// What `slicecheck run` writes into the records database: a start row first, each node's
// inventory, topology and measurements as that node finishes, the finish status at the end.
// Every call is its own transaction, so a run killed half-way keeps every node that finished
// (and its run row says `running`, which is how diff and readers tell it was cut short).
// Calls return at once and are written in order behind them (a shared PostgreSQL must not
// hold a measurement up); flush() waits for them and says whether any failed. Every call is
// bounded by --db-timeout; after one ran out, the rest are dropped unsent (the database is not
// answering, and each would wait as long again), so a stopped server costs one timeout.

import type { StepTimings } from "../mig/apply/types.js";
import { resolveProduct } from "../mig/catalog/catalog.js";
import { hasRole } from "../util/suite-registry.js";
import { type CheckRecord, checkKey } from "../verdicts/checks.js";
import type { Measurement } from "../workloads/launcher.js";
import type { NodeRunResult } from "../workloads/node-run.js";
import { controllerOf, markAbandoned } from "./abandoned.js";
import { isDbTimeout, openStore, type Sql, type Store } from "./store.js";
import type { GpuTopology } from "./topology.js";

export type RunStatus = "running" | "passed" | "failed" | "broken" | "interrupted" | "abandoned";

/** SQL for a status's rank: a failed check outranks an undecided one, as in the exit code. */
const RANK = (x: string) =>
  `(CASE ${x} WHEN 'interrupted' THEN 4 WHEN 'failed' THEN 3 WHEN 'broken' THEN 2 WHEN 'passed' THEN 1 ELSE 0 END)`;

export interface VerdictRecord {
  node: string;
  gpuUuid: string | null;
  instanceUuid: string | null;
  name: string;
  status: string;
  summary: string;
  evidence: unknown;
}

/** The catalogue key (`H100-80GB`) when nvidia-smi's name is known, so runs compare by product. */
export function productKey(name: string): string {
  return resolveProduct(name) ?? name;
}

export class Recorder {
  private queue: Promise<void> = Promise.resolve();
  private failure: Error | null = null;
  /** Writes done, and how long they took (bench: time per recorded measurement). */
  readonly stats = { writes: 0, ms: 0 };

  private constructor(
    readonly store: Store,
    readonly runId: string,
  ) {}

  get location(): string {
    return this.store.location;
  }

  static async start(
    location: string,
    run: { runId: string; label?: string; argv: string[]; timeoutMs?: number },
  ): Promise<Recorder> {
    const store = await openStore(location, { timeoutMs: run.timeoutMs });
    try {
      await store.run(
        // A run of many jobs (run --via slurm) shares one id: the first job's row stands.
        `INSERT INTO runs (id, label, started, status, argv, seq, host, pid)
         VALUES (?, ?, ?, 'running', ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM runs), ?, ?)
         ON CONFLICT (id) DO NOTHING`,
        [
          run.runId,
          run.label ?? null,
          new Date().toISOString(),
          JSON.stringify(run.argv),
          ...controllerOf(),
        ],
      );
      // Runs of this machine whose controller died (kill -9) stop reading as `running`.
      await markAbandoned(store, run.runId);
    } catch (e) {
      // A database that stops answering here must not keep the controller alive either.
      await store.close().catch(() => {});
      throw e;
    }
    return new Recorder(store, run.runId);
  }

  /** Queues one transaction; the first failure is kept for flush(); later writes still try,
   * unless it was a timeout. */
  private write(fn: (tx: Sql) => Promise<void>): void {
    this.queue = this.queue.then(async () => {
      if (isDbTimeout(this.failure)) return;
      const t0 = performance.now();
      try {
        await this.store.transaction(fn);
        this.stats.writes++;
        this.stats.ms += performance.now() - t0;
      } catch (e) {
        this.failure ??= e instanceof Error ? e : new Error(String(e));
      }
    });
  }

  /** Waits for every queued write; the first error any of them met, or null. */
  async flush(): Promise<Error | null> {
    await this.queue;
    return this.failure;
  }

  /** The node's drivers, GPUs and MIG instances (GI ids, placements) and the live catalogue. */
  node(r: NodeRunResult, topology: Map<number, GpuTopology>, layout: string | null): void {
    const inv = r.inventory;
    this.write(async (tx) => {
      await tx.run(
        `INSERT INTO nodes (run_id, node, driver, cuda, error) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (run_id, node) DO UPDATE SET driver = excluded.driver, cuda = excluded.cuda,
           error = excluded.error`,
        [this.runId, r.node, inv?.driver ?? null, inv?.cuda ?? null, r.error],
      );
      const byGpu = new Map<string, NonNullable<typeof inv>["instances"]>();
      for (const i of inv?.instances ?? [])
        byGpu.set(i.gpuUuid, [...(byGpu.get(i.gpuUuid) ?? []), i]);
      for (const [uuid, list] of byGpu) {
        const first = list[0];
        if (!first) continue;
        await tx.run(
          `INSERT INTO gpus (run_id, node, uuid, idx, product, driver, cuda, vbios)
           VALUES (?, ?, ?, ?, ?, ?, ?, NULL)
           ON CONFLICT (run_id, uuid) DO UPDATE SET node = excluded.node, idx = excluded.idx,
             product = excluded.product, driver = excluded.driver, cuda = excluded.cuda`,
          [
            this.runId,
            r.node,
            uuid,
            first.gpu,
            productKey(first.gpuName),
            inv?.driver ?? null,
            inv?.cuda ?? null,
          ],
        );
        const topo = topology.get(first.gpu);
        const instances = list
          .filter((i) => i.gpuInstanceId !== null)
          .map((i) => ({
            profile: i.profile,
            gi: i.gpuInstanceId,
            ci: i.computeInstanceId,
            placement: i.placement,
            sm: i.sm,
            memoryMiB: i.memoryMiB,
          }));
        await tx.run(
          `INSERT INTO topology (run_id, node, gpu_uuid, layout, lgip, lgipp, instances)
           VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (run_id, gpu_uuid) DO UPDATE SET node = excluded.node,
             layout = excluded.layout, lgip = excluded.lgip, lgipp = excluded.lgipp,
             instances = excluded.instances`,
          [
            this.runId,
            r.node,
            uuid,
            layout,
            topo ? JSON.stringify(topo.profiles) : null,
            topo ? JSON.stringify(topo.placements) : null,
            JSON.stringify(instances),
          ],
        );
      }
    });
  }

  /** One instance's figures of one workload, one transaction: a kill keeps whole results, never half. */
  measurements(suite: string, ms: readonly Measurement[], gpuName: string): void {
    if (ms.length === 0) return;
    this.write(async (tx) => {
      for (const m of ms)
        await tx.run(
          `INSERT INTO measurements (run_id, node, gpu_uuid, instance_uuid, product, profile, placement,
            suite, workload, metric, value, unit, repetition) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          [
            this.runId,
            m.node,
            m.gpuUuid,
            m.instanceUuid,
            productKey(gpuName),
            m.profile,
            m.placement,
            suite,
            m.workload,
            m.metric,
            m.value,
            m.unit,
            m.repetition,
          ],
        );
    });
  }

  /** Apply step times of one GPU, by its index as the apply report names it. */
  steps(node: string, gpu: number, timings: StepTimings, prefix = ""): void {
    this.write(async (tx) => {
      for (const [k, ms] of Object.entries(timings)) {
        if (typeof ms === "number")
          await tx.run(
            "INSERT INTO step_durations (run_id, node, gpu, step, ms) VALUES (?, ?, ?, ?, ?)",
            [this.runId, node, gpu, prefix + k.replace(/Ms$/, ""), ms],
          );
      }
    });
  }

  verdict(v: VerdictRecord): void {
    this.write((tx) => this.insertVerdict(tx, v));
  }

  private insertVerdict(tx: Sql, v: VerdictRecord): Promise<void> {
    return tx.run(
      "INSERT INTO verdicts (run_id, node, gpu_uuid, instance_uuid, name, status, summary, evidence) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      [
        this.runId,
        v.node,
        v.gpuUuid,
        v.instanceUuid,
        v.name,
        v.status,
        v.summary,
        JSON.stringify(v.evidence ?? {}),
      ],
    );
  }

  /** One check, one transaction; isolation verdicts also go to `verdicts` (diff's history). */
  check(c: CheckRecord): void {
    this.write(async (tx) => {
      await tx.run(
        `INSERT INTO checks (run_id, check_id, suite, node, gpu, instance, identity, title, status, code,
          message, figures, evidence, started, stopped) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          this.runId,
          c.id,
          c.suite,
          c.node,
          c.gpu,
          c.instance ? JSON.stringify(c.instance) : null,
          checkKey(c),
          c.title,
          c.status,
          c.code,
          c.message,
          JSON.stringify(c.figures),
          JSON.stringify(c.evidence.map((e) => ({ ...e, content: e.content?.slice(0, 4000) }))),
          new Date(c.startMs).toISOString(),
          new Date(c.stopMs).toISOString(),
        ],
      );
      if (hasRole(c.suite, "matrix") && c.node)
        await this.insertVerdict(tx, {
          node: c.node,
          gpuUuid: c.parameters["GPU UUID"] ?? null,
          instanceUuid: c.instance?.uuid ?? null,
          name: checkKey(c),
          status: c.status,
          summary: c.message,
          evidence: c.figures,
        });
    });
  }

  /** Xid lines the kernel log gained during the run. */
  xid(
    node: string,
    x: {
      pci: string | null;
      xid: number;
      gpuInstanceId: number | null;
      computeInstanceId: number | null;
      line: string;
    },
  ): void {
    this.write((tx) =>
      tx.run(
        "INSERT INTO xids (run_id, node, pci, xid, gpu_instance, compute_instance, line) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [this.runId, node, x.pci, x.xid, x.gpuInstanceId, x.computeInstanceId, x.line],
      ),
    );
  }

  /** The finish status, after every queued write; closes the store. The first failed write. */
  async finish(status: RunStatus): Promise<Error | null> {
    this.write((tx) =>
      // The worst status of the run's jobs wins (one job per node under --via slurm).
      tx.run(
        `UPDATE runs SET finished = ?, status = CASE WHEN ${RANK("?")} >= ${RANK("status")}
         THEN ? ELSE status END WHERE id = ?`,
        [new Date().toISOString(), status, status, this.runId],
      ),
    );
    const failure = await this.flush();
    await this.store.close().catch(() => {});
    return failure;
  }
}
