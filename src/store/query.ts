// Reads what diff compares out of the records: a selector (a run id, a label, or a driver
// version) becomes a set of (run, node) pairs, and those pairs become a Snapshot.
import { SlicecheckError } from "../errors.js";
import type { GpuInstancePlacements, GpuInstanceProfile } from "../nvsmi/types.js";
import { type Status, storedStatus } from "../util/status.js";
import { type ObservationRow, observationRows } from "./observe.js";
import type { Store } from "./store.js";

export interface Picked {
  runId: string;
  node: string;
  label: string | null;
  driver: string | null;
  started: string;
  status: string;
}

export interface GpuTopo {
  node: string;
  gpu: number;
  product: string;
  layout: string | null;
  profiles: GpuInstanceProfile[] | null;
  placements: GpuInstancePlacements[] | null;
  instances: { profile: string; gi: number | null; placement: string | null }[];
}

export interface MeasurementRow {
  node: string;
  product: string;
  profile: string;
  workload: string;
  metric: string;
  unit: string;
  value: number;
  repetition: number;
}

export interface Snapshot {
  selector: string;
  /** How the selector was understood: `run`, `label` or `driver`. */
  kind: "run" | "label" | "driver";
  picked: Picked[];
  topology: GpuTopo[];
  measurements: MeasurementRow[];
  /** Statuses in the one vocabulary: a row an older version wrote as "ok" reads as passed. */
  verdicts: { node: string; gpu: string | null; name: string; status: Status; summary: string }[];
  steps: { node: string; gpu: number | null; step: string; ms: number }[];
  /** Every check of the picked runs (schema 2 on); its identity survives drivers and GI ids. */
  checks: { node: string; identity: string; suite: string; status: Status; message: string }[];
  /** The figures of `slicecheck observe` runs (store/observe.ts), per GPU and GPU instance. */
  observations: ObservationRow[];
}

// Aliases are quoted: PostgreSQL folds unquoted names to lower case (runId → runid).
const PICK = `SELECT r.id AS "runId", n.node AS node, r.label AS label, n.driver AS driver,
  r.started AS started, r.status AS status FROM runs r JOIN nodes n ON n.run_id = r.id`;

/** A run id wins over a label, a label over a driver version: ids and labels are the user's. */
export async function pick(
  db: Store,
  selector: string,
): Promise<{ kind: Snapshot["kind"]; picked: Picked[] }> {
  const byRun = await db.all<Picked>(`${PICK} WHERE r.id = ? ORDER BY n.node`, [selector]);
  if (byRun.length) return { kind: "run", picked: byRun };
  const latest = await db.get<{ id: string }>(
    "SELECT id FROM runs WHERE label = ? ORDER BY started DESC, seq DESC LIMIT 1",
    [selector],
  );
  if (latest) {
    const rows = await db.all<Picked>(`${PICK} WHERE r.id = ? ORDER BY n.node`, [latest.id]);
    return { kind: "label", picked: rows };
  }
  // The latest run on that driver per node: a fleet upgrades node by node, over several runs.
  const byDriver = await db.all<Picked>(
    `${PICK} WHERE n.driver = ? ORDER BY n.node, r.started DESC, r.seq DESC`,
    [selector],
  );
  if (byDriver.length) {
    const seen = new Set<string>();
    return {
      kind: "driver",
      picked: byDriver.filter((p) => !seen.has(p.node) && seen.add(p.node)),
    };
  }
  throw new SlicecheckError(
    "USAGE",
    `'${selector}' is neither a run id, a run label nor a driver version in the records; list them with \`sqlite3 <db> 'select id, label, started from runs'\` (PostgreSQL: \`psql <url> -c 'select id, label, started from runs'\`)`,
    { selector },
  );
}

/** The driver of the node's latest recorded run: what it had before a maintenance window. */
export async function previousDriver(db: Store, node: string): Promise<string | null> {
  const row = await db.get<{ driver: string | null }>(
    `${PICK} WHERE n.node = ? AND n.driver IS NOT NULL ORDER BY r.started DESC, r.seq DESC LIMIT 1`,
    [node],
  );
  return row?.driver ?? null;
}

function json<T>(s: string | null): T | null {
  return s === null ? null : (JSON.parse(s) as T);
}

export async function snapshot(db: Store, selector: string): Promise<Snapshot> {
  const { kind, picked } = await pick(db, selector);
  const snap: Snapshot = {
    selector,
    kind,
    picked,
    topology: [],
    measurements: [],
    verdicts: [],
    steps: [],
    checks: [],
    observations: [],
  };
  for (const p of picked) {
    const topo = await db.all<{
      node: string;
      gpu: number;
      product: string;
      layout: string | null;
      lgip: string | null;
      lgipp: string | null;
      instances: string;
    }>(
      `SELECT t.node AS node, g.idx AS gpu, g.product AS product, t.layout AS layout, t.lgip AS lgip,
          t.lgipp AS lgipp, t.instances AS instances
         FROM topology t JOIN gpus g ON g.run_id = t.run_id AND g.uuid = t.gpu_uuid
         WHERE t.run_id = ? AND t.node = ? ORDER BY g.idx`,
      [p.runId, p.node],
    );
    for (const t of topo) {
      snap.topology.push({
        node: t.node,
        gpu: t.gpu,
        product: t.product,
        layout: t.layout,
        profiles: json(t.lgip),
        placements: json(t.lgipp),
        instances: json(t.instances) ?? [],
      });
    }
    const at = [p.runId, p.node];
    snap.observations.push(...(await observationRows(db, p.runId, p.node)));
    snap.measurements.push(
      ...(await db.all<MeasurementRow>(
        `SELECT node, product, profile, workload, metric, unit, value, repetition FROM measurements
         WHERE run_id = ? AND node = ? ORDER BY id`,
        at,
      )),
    );
    const read = <T extends { status: unknown }>(r: T) => ({
      ...r,
      status: storedStatus(r.status),
    });
    snap.verdicts.push(
      ...(
        await db.all<Snapshot["verdicts"][number]>(
          "SELECT node, gpu_uuid AS gpu, name, status, summary FROM verdicts WHERE run_id = ? AND node = ? ORDER BY id",
          at,
        )
      ).map(read),
    );
    snap.checks.push(
      ...(
        await db.all<Snapshot["checks"][number]>(
          "SELECT node, identity, suite, status, message FROM checks WHERE run_id = ? AND node = ? ORDER BY id",
          at,
        )
      ).map(read),
    );
    snap.steps.push(
      ...(await db.all<Snapshot["steps"][number]>(
        "SELECT node, gpu, step, ms FROM step_durations WHERE run_id = ? AND node = ? ORDER BY id",
        at,
      )),
    );
  }
  return snap;
}
