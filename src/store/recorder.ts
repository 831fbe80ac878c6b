// What `slicecheck run` writes into the records database: a start row first, each node's
// inventory, topology and measurements as that node finishes, the finish status at the end.
// Every call is one write that commits whole or not at all (writes queued together share a
// commit: batch.ts), so a run killed half-way keeps every node that finished (and its run row
// says `running`, which is how diff and readers tell it was cut short).
// Calls return at once and are written in order behind them (a shared PostgreSQL must not
// hold a measurement up); flush() waits for them and says whether any failed. Every call is
// bounded by --db-timeout; after one ran out, the rest are dropped unsent (the database is not
// answering, and each would wait as long again), so a stopped server costs one timeout.
// Writes commit relaxed (they outlast the controller's death, not the database host's crash:
// store/backend.ts WriteOptions); the run's start, settle() and finish() commit durably, and each
// makes every write before it durable too.

import type { StepTimings } from "../mig/apply/types.js";
import { resolveProduct } from "../mig/catalog/catalog.js";
import type { Status, VerdictStatus } from "../util/status.js";
import { hasRole } from "../util/suite-registry.js";
import { type CheckRecord, checkKey } from "../verdicts/checks.js";
import type { Measurement } from "../workloads/launcher.js";
import type { NodeRunResult } from "../workloads/node-run.js";
import { controllerOf, markAbandoned } from "./abandoned.js";
import { applyOps, mergeOps, type Op, type Rows, takeGroup, type Write } from "./batch.js";
import { isDbTimeout, openStore, type Store } from "./store.js";
import type { GpuTopology } from "./topology.js";

/** A run's row: its lifecycle (running; interrupted by a signal; abandoned when its controller
 * died) or, once finished, the verdict of its checks in the one vocabulary (src/util/status.ts). */
export type RunStatus = VerdictStatus | "running" | "interrupted" | "abandoned";

/** SQL for a status's rank: a failed check outranks an undecided one, as in the exit code. */
const RANK = (x: string) =>
  `(CASE ${x} WHEN 'interrupted' THEN 4 WHEN 'failed' THEN 3 WHEN 'broken' THEN 2 WHEN 'passed' THEN 1 ELSE 0 END)`;

export interface VerdictRecord {
  node: string;
  gpuUuid: string | null;
  instanceUuid: string | null;
  name: string;
  status: Status;
  summary: string;
  evidence: unknown;
}

/** The measurements table's columns, in the recorder's order (BENCH=records sends its
 * statement too). */
export const MEASUREMENT_COLUMNS = [
  "run_id",
  "node",
  "gpu_uuid",
  "instance_uuid",
  "product",
  "profile",
  "placement",
  "suite",
  "workload",
  "metric",
  "value",
  "unit",
  "repetition",
] as const;
const VERDICT_COLUMNS = [
  "run_id",
  "node",
  "gpu_uuid",
  "instance_uuid",
  "name",
  "status",
  "summary",
  "evidence",
] as const;
const CHECK_COLUMNS = [
  "run_id",
  "check_id",
  "suite",
  "node",
  "gpu",
  "instance",
  "identity",
  "title",
  "status",
  "code",
  "message",
  "figures",
  "evidence",
  "started",
  "stopped",
] as const;

/** The catalogue key (`H100-80GB`) when nvidia-smi's name is known, so runs compare by product. */
export function productKey(name: string): string {
  return resolveProduct(name) ?? name;
}

export class Recorder {
  private queue: Promise<void> = Promise.resolve();
  /** Writes queued and not yet taken by a commit. */
  private pending: Write[] = [];
  /** The queued writes that must commit durably (settle, finish); all others are relaxed. */
  private readonly durable = new WeakSet<Write>();
  private draining = false;
  private failure: Error | null = null;
  /** Writes done, the commits they took, and how long those took (bench: time per measurement). */
  readonly stats = { writes: 0, commits: 0, ms: 0 };

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

  /**
   * Queues one write (all of its ops commit together or not at all). The queue is drained one
   * commit at a time, each taking every write queued meanwhile (up to GROUP_ROWS rows): the
   * instances of a node, which arrive together, cost one commit and one INSERT per table. A
   * commit holds whole writes only, so a kill between commits keeps whole instances, and a
   * commit is never delayed waiting for more (nothing sits unsent behind a timer).
   */
  private write(w: Write, durable = false): void {
    if (durable) this.durable.add(w);
    this.pending.push(w);
    if (this.draining) return;
    this.draining = true;
    this.queue = this.queue.then(async () => {
      try {
        while (this.pending.length > 0) await this.commit(takeGroup(this.pending));
      } finally {
        this.draining = false;
      }
    });
  }

  /** One commit of `group`. The first failure is kept for flush(); a commit of several writes
   * that fails is retried one write at a time, so a bad write loses only itself, as when each
   * was its own transaction. After a timeout the rest are dropped unsent. */
  private async commit(group: readonly Write[]): Promise<void> {
    if (isDbTimeout(this.failure)) return;
    const t0 = performance.now();
    try {
      const relaxed = !group.some((w) => this.durable.has(w));
      await applyOps(this.store, mergeOps(group.flat()), { relaxed });
      this.stats.writes += group.length;
      this.stats.commits++;
      this.stats.ms += performance.now() - t0;
    } catch (e) {
      if (group.length > 1 && !isDbTimeout(e)) {
        for (const w of group) await this.commit([w]);
        return;
      }
      this.failure ??= e instanceof Error ? e : new Error(String(e));
    }
  }

  /** Waits for every queued write; the first error any of them met, or null. */
  async flush(): Promise<Error | null> {
    await this.queue;
    return this.failure;
  }

  /**
   * Waits for every queued write and makes them durable: one durable commit after them (the
   * run's row, unchanged), which on PostgreSQL also fails if the server restarted since the
   * relaxed ones (pg-commit.ts). What a run calls before it says its records are written.
   */
  async settle(): Promise<Error | null> {
    this.write(
      [(tx) => tx.run("UPDATE runs SET status = status WHERE id = ?", [this.runId])],
      true,
    );
    return this.flush();
  }

  /** The node's drivers, GPUs and MIG instances (GI ids, placements) and the live catalogue. */
  node(r: NodeRunResult, topology: Map<number, GpuTopology>, layout: string | null): void {
    const inv = r.inventory;
    // Upserts (a node recorded twice keeps one row): statements of its own, not rows.
    this.write([
      async (tx) => {
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
      },
    ]);
  }

  /** A node seen by `slicecheck observe`: its row and its GPUs' (what diff pairs GPUs by),
   * without topology (an observation changes and applies no layout). */
  observedNode(
    node: string,
    inv: { driver: string | null; cuda: string | null },
    gpus: readonly { uuid: string; index: number; name: string }[],
  ): void {
    this.write([
      {
        table: "nodes",
        columns: ["run_id", "node", "driver", "cuda", "error"],
        rows: [[this.runId, node, inv.driver, inv.cuda, null]],
      },
      {
        table: "gpus",
        columns: ["run_id", "node", "uuid", "idx", "product", "driver", "cuda", "vbios"],
        rows: gpus.map((g) => [
          this.runId,
          node,
          g.uuid,
          g.index,
          productKey(g.name),
          inv.driver,
          inv.cuda,
          null,
        ]),
      },
    ]);
  }

  /** One instance's figures of one workload, one write: a kill keeps whole results, never half. */
  measurements(suite: string, ms: readonly Measurement[], gpuName: string): void {
    if (ms.length === 0) return;
    const product = productKey(gpuName);
    this.write([
      {
        table: "measurements",
        columns: MEASUREMENT_COLUMNS,
        rows: ms.map((m) => [
          this.runId,
          m.node,
          m.gpuUuid,
          m.instanceUuid,
          product,
          m.profile,
          m.placement,
          suite,
          m.workload,
          m.metric,
          m.value,
          m.unit,
          m.repetition,
        ]),
      },
    ]);
  }

  /** Apply step times of one GPU, by its index as the apply report names it. */
  steps(node: string, gpu: number, timings: StepTimings, prefix = ""): void {
    const rows = Object.entries(timings).flatMap(([k, ms]) =>
      typeof ms === "number" ? [[this.runId, node, gpu, prefix + k.replace(/Ms$/, ""), ms]] : [],
    );
    this.write([
      { table: "step_durations", columns: ["run_id", "node", "gpu", "step", "ms"], rows },
    ]);
  }

  verdict(v: VerdictRecord): void {
    this.write([this.verdictRows(v)]);
  }

  private verdictRows(v: VerdictRecord): Rows {
    return {
      table: "verdicts",
      columns: VERDICT_COLUMNS,
      rows: [
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
      ],
    };
  }

  /** One check, one write; isolation verdicts also go to `verdicts` (diff's history). */
  check(c: CheckRecord): void {
    const row = [
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
    ];
    const ops: Op[] = [{ table: "checks", columns: CHECK_COLUMNS, rows: [row] }];
    if (hasRole(c.suite, "matrix") && c.node)
      ops.push(
        this.verdictRows({
          node: c.node,
          gpuUuid: c.parameters["GPU UUID"] ?? null,
          instanceUuid: c.instance?.uuid ?? null,
          name: checkKey(c),
          status: c.status,
          summary: c.message,
          evidence: c.figures,
        }),
      );
    this.write(ops);
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
    this.write([
      {
        table: "xids",
        columns: ["run_id", "node", "pci", "xid", "gpu_instance", "compute_instance", "line"],
        rows: [[this.runId, node, x.pci, x.xid, x.gpuInstanceId, x.computeInstanceId, x.line]],
      },
    ]);
  }

  /** The finish status, after every queued write; closes the store. The first failed write. */
  async finish(status: RunStatus): Promise<Error | null> {
    this.write(
      [
        (tx) =>
          // The worst status of the run's jobs wins (one job per node under --via slurm).
          tx.run(
            `UPDATE runs SET finished = ?, status = CASE WHEN ${RANK("?")} >= ${RANK("status")}
           THEN ? ELSE status END WHERE id = ?`,
            [new Date().toISOString(), status, status, this.runId],
          ),
      ],
      true,
    );
    const failure = await this.flush();
    await this.store.close().catch(() => {});
    return failure;
  }
}
