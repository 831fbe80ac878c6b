// What `slicecheck run` writes into the records database: a start row first, each node's
// inventory, topology and measurements as that node finishes, the finish status at the end.
// Every call is its own transaction, so a run killed half-way keeps every node that finished
// (and its run row says `running`, which is how diff and readers tell it was cut short).

import type { StepTimings } from "../mig/apply/types.js";
import { resolveProduct } from "../mig/catalog/catalog.js";
import { type CheckRecord, checkKey } from "../verdicts/checks.js";
import type { Measurement } from "../workloads/launcher.js";
import type { NodeRunResult } from "../workloads/node-run.js";
import { type Db, openDb } from "./db.js";
import type { GpuTopology } from "./topology.js";

export type RunStatus = "running" | "passed" | "failed" | "broken" | "interrupted";

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
  private constructor(
    private readonly db: Db,
    readonly runId: string,
    readonly path: string,
  ) {}

  static start(path: string, run: { runId: string; label?: string; argv: string[] }): Recorder {
    const db = openDb(path);
    db.prepare(
      "INSERT INTO runs (id, label, started, status, argv) VALUES (?, ?, ?, 'running', ?)",
    ).run(run.runId, run.label ?? null, new Date().toISOString(), JSON.stringify(run.argv));
    return new Recorder(db, run.runId, path);
  }

  /** The node's drivers, GPUs and MIG instances (GI ids, placements) and the live catalogue. */
  node(r: NodeRunResult, topology: Map<number, GpuTopology>, layout: string | null): void {
    const inv = r.inventory;
    this.db.transaction(() => {
      this.db
        .prepare(
          "INSERT OR REPLACE INTO nodes (run_id, node, driver, cuda, error) VALUES (?, ?, ?, ?, ?)",
        )
        .run(this.runId, r.node, inv?.driver ?? null, inv?.cuda ?? null, r.error);
      const byGpu = new Map<string, NonNullable<typeof inv>["instances"]>();
      for (const i of inv?.instances ?? [])
        byGpu.set(i.gpuUuid, [...(byGpu.get(i.gpuUuid) ?? []), i]);
      for (const [uuid, list] of byGpu) {
        const first = list[0];
        if (!first) continue;
        this.db
          .prepare(
            "INSERT OR REPLACE INTO gpus (run_id, node, uuid, idx, product, driver, cuda, vbios) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
          )
          .run(
            this.runId,
            r.node,
            uuid,
            first.gpu,
            productKey(first.gpuName),
            inv?.driver ?? null,
            inv?.cuda ?? null,
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
        this.db
          .prepare(
            "INSERT OR REPLACE INTO topology (run_id, node, gpu_uuid, layout, lgip, lgipp, instances) VALUES (?, ?, ?, ?, ?, ?, ?)",
          )
          .run(
            this.runId,
            r.node,
            uuid,
            layout,
            topo ? JSON.stringify(topo.profiles) : null,
            topo ? JSON.stringify(topo.placements) : null,
            JSON.stringify(instances),
          );
      }
    })();
  }

  /** One measurement, one transaction: what was measured before a kill stays. */
  measurement(suite: string, m: Measurement, gpuName: string): void {
    this.db
      .prepare(
        `INSERT INTO measurements (run_id, node, gpu_uuid, instance_uuid, product, profile, placement,
          suite, workload, metric, value, unit, repetition) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
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
      );
  }

  /** Apply step times of one GPU, by its index as the apply report names it. */
  steps(node: string, gpu: number, timings: StepTimings, prefix = ""): void {
    const ins = this.db.prepare(
      "INSERT INTO step_durations (run_id, node, gpu, step, ms) VALUES (?, ?, ?, ?, ?)",
    );
    this.db.transaction(() => {
      for (const [k, ms] of Object.entries(timings)) {
        if (typeof ms === "number")
          ins.run(this.runId, node, gpu, prefix + k.replace(/Ms$/, ""), ms);
      }
    })();
  }

  verdict(v: VerdictRecord): void {
    this.db
      .prepare(
        "INSERT INTO verdicts (run_id, node, gpu_uuid, instance_uuid, name, status, summary, evidence) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      )
      .run(
        this.runId,
        v.node,
        v.gpuUuid,
        v.instanceUuid,
        v.name,
        v.status,
        v.summary,
        JSON.stringify(v.evidence ?? {}),
      );
  }

  /** One check, one transaction; isolation verdicts also go to `verdicts` (diff's history). */
  check(c: CheckRecord): void {
    this.db.transaction(() => {
      this.db
        .prepare(
          `INSERT INTO checks (run_id, check_id, suite, node, gpu, instance, identity, title, status, code,
            message, figures, evidence, started, stopped) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
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
        );
      if (c.suite === "isolation" && c.node)
        this.verdict({
          node: c.node,
          gpuUuid: c.parameters["GPU UUID"] ?? null,
          instanceUuid: c.instance?.uuid ?? null,
          name: checkKey(c),
          status: c.status,
          summary: c.message,
          evidence: c.figures,
        });
    })();
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
    this.db
      .prepare(
        "INSERT INTO xids (run_id, node, pci, xid, gpu_instance, compute_instance, line) VALUES (?, ?, ?, ?, ?, ?, ?)",
      )
      .run(this.runId, node, x.pci, x.xid, x.gpuInstanceId, x.computeInstanceId, x.line);
  }

  finish(status: RunStatus): void {
    this.db
      .prepare("UPDATE runs SET finished = ?, status = ? WHERE id = ?")
      .run(new Date().toISOString(), status, this.runId);
    this.db.close();
  }
}
