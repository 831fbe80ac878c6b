// `slicecheck diff --before X --after Y`: what changed between two recorded runs (X and Y: a run
// id, a `run --label`, or a driver version). Exit 1 when something regressed, 2 when nothing did
// but a compared run did not finish (abandoned or still running: what it never recorded cannot
// show as a change), 0 otherwise, 3 when a selector matches nothing.
import { SlicecheckError } from "../../errors.js";
import { markAbandoned, unfinishedWhy } from "../../store/abandoned.js";
import { dbPath } from "../../store/db.js";
import { type DiffResult, diffSnapshots, type Finding } from "../../store/diff.js";
import { type Snapshot, snapshot } from "../../store/query.js";
import { openStore } from "../../store/store.js";
import type { Out } from "../context.js";

export interface DiffOptions {
  before: string;
  after: string;
  db?: string;
  dbTimeout?: number;
  /** A fraction (0.05 = 5 %), as `parsePercent` gives it. */
  tolerance?: number;
  json?: boolean;
}

function side(s: Snapshot) {
  return {
    selector: s.selector,
    kind: s.kind,
    runs: s.picked.map((p) => ({
      runId: p.runId,
      node: p.node,
      label: p.label,
      driver: p.driver,
      started: p.started,
      status: p.status,
    })),
  };
}

function describe(s: Snapshot): string {
  const runs = [...new Set(s.picked.map((p) => p.runId))];
  const drivers = [...new Set(s.picked.map((p) => p.driver ?? "?"))];
  const nodes = s.picked.map((p) => p.node);
  return `${s.selector} (${s.kind}; run ${runs.join(", ")}; driver ${drivers.join(", ")}; ${nodes.join(", ")})`;
}

function printArea(io: Out, title: string, list: Finding[]): void {
  if (list.length === 0) {
    io.out(`${title}: no change`);
    return;
  }
  io.out(`${title}:`);
  for (const f of list)
    io.out(`  ${f.regression ? "REGRESSED" : "CHANGED  "}  ${f.subject}: ${f.detail}`);
}

export async function diffCommand(o: DiffOptions, io: Out): Promise<number> {
  const tolerance = o.tolerance ?? 0.05;
  if (!(tolerance > 0 && tolerance <= 1)) {
    throw new SlicecheckError(
      "USAGE",
      `--tolerance expects a percentage above 0 and at most 100, got ${tolerance * 100}%`,
    );
  }
  const tolerancePct = Number((tolerance * 100).toFixed(4));
  const path = dbPath(o.db);
  const db = await openStore(path, {
    mustExist: true,
    timeoutMs: o.dbTimeout === undefined ? undefined : o.dbTimeout * 1000,
  });
  let before: Snapshot;
  let after: Snapshot;
  let result: DiffResult;
  try {
    // A run of this machine whose controller was killed still reads `running`: marked first.
    await markAbandoned(db, null);
    before = await snapshot(db, o.before);
    after = await snapshot(db, o.after);
    result = diffSnapshots(before, after, tolerance);
  } finally {
    await db.close();
  }
  const unfinished = unfinishedRuns([before, after]);
  for (const u of unfinished) io.err(`slicecheck diff: warning: run ${u.runId} is ${u.why}`);
  if (o.json) {
    io.out(
      JSON.stringify(
        {
          before: side(before),
          after: side(after),
          unfinished,
          tolerance: result.tolerance,
          compared: result.compared,
          regressions: result.regressions,
          findings: result.findings,
        },
        null,
        2,
      ),
    );
  } else {
    io.out(`before: ${describe(before)}`);
    io.out(`after:  ${describe(after)}`);
    // Utilization is an area only where an observation (`slicecheck observe`) is compared.
    const observed = before.observations.length + after.observations.length > 0;
    for (const area of ["topology", "performance", "behaviour", "utilization"] as const)
      if (area !== "utilization" || observed)
        printArea(
          io,
          area,
          result.findings.filter((f) => f.area === area),
        );
    const other = result.findings.length - result.regressions;
    io.out(
      `${result.regressions} regression(s), ${other} other change(s); ${result.compared} performance group(s) compared at ±${tolerancePct}%`,
    );
  }
  return result.regressions > 0 ? 1 : unfinished.length > 0 ? 2 : 0;
}

/** The compared runs that did not finish, once each. */
function unfinishedRuns(
  sides: readonly Snapshot[],
): { runId: string; status: string; why: string }[] {
  const out = new Map<string, { runId: string; status: string; why: string }>();
  for (const p of sides.flatMap((s) => s.picked)) {
    const why = unfinishedWhy(p.status);
    if (why && !out.has(p.runId)) out.set(p.runId, { runId: p.runId, status: p.status, why });
  }
  return [...out.values()];
}
