// `slicecheck rollout`: a maintenance window node by node. The selected nodes are verified in
// batches of at most --max-unavailable: each batch is one `run` of the chosen suites over its
// nodes, their Slurm nodes drained first and resumed only when every check of the node passed
// (a failed or broken node stays drained, the check in its reason). The rollout stops after the
// first batch with a node that did not pass (--keep-going goes on), keeps its state in a file
// after every batch (an interrupted rollout resumes with the same command), prints one line per
// node and ends with a summary of the window (per node: verdict, duration, driver before/after).
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { SlicecheckError } from "../../errors.js";
import type { NodeSpec } from "../../inventory/types.js";
import { dbPath } from "../../store/db.js";
import { previousDriver } from "../../store/query.js";
import { openStore } from "../../store/store.js";
import { newRunId } from "../../transport/open.js";
import { storedStatus, worstStatus } from "../../util/status.js";
import { displayPath, loadSelected, type Out, table } from "../context.js";
import {
  newState,
  nextBatch,
  type RolloutNode,
  type RolloutState,
  resumeOrStart,
  writeState,
} from "./rollout-state.js";
import { runCommand } from "./run.js";
import type { RunCliOptions } from "./run-options.js";

export interface RolloutCliOptions extends RunCliOptions {
  maxUnavailable?: number;
  keepGoing?: boolean;
  state?: string;
}

const INTERRUPTED = new Set([130, 143]);

function refuseRunOnly(o: RolloutCliOptions): void {
  const bad = (
    [
      ["--list", o.list],
      ["--json", o.json],
      ["--local", o.local],
      ["--drain", o.drain],
      ["--out", o.out],
      ["--run-id", o.runId],
    ] as const
  ).filter(([, v]) => v !== undefined && v !== false);
  if (bad.length)
    throw new SlicecheckError(
      "USAGE",
      `rollout: ${bad.map(([f]) => f).join(", ")} ${bad.length === 1 ? "is" : "are"} run's; a rollout drains the nodes that have slurm_node itself, writes each batch under the state file's folder and resumes from --state`,
    );
}

export async function rolloutCommand(o: RolloutCliOptions, io: Out): Promise<number> {
  refuseRunOnly(o);
  const { inventory, nodes } = loadSelected(o, io);
  const stateFile = resolve(o.state ?? join("reports", "rollout.json"));
  const max = o.maxUnavailable ?? 1;
  const plan = {
    inventory: inventory.file,
    suites: o.suites ?? "",
    maxUnavailable: max,
    keepGoing: o.keepGoing ?? false,
    via: o.via ?? null,
  };
  const id = `ro-${newRunId().replace(/^sc-/, "")}`;
  const { state, resumed } = resumeOrStart(
    stateFile,
    newState(
      id,
      plan,
      nodes.map((n) => n.name),
    ),
  );
  writeState(stateFile, state);
  io.err(header(state, resumed, stateFile));
  let stop: NodeJS.Signals | null = null;
  const onSignal = (sig: NodeJS.Signals) => {
    stop ??= sig;
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    const code = await batches(o, { state, stateFile, nodes, io, stopped: () => stop });
    if (code !== null) return code;
  } finally {
    process.removeListener("SIGINT", onSignal);
    process.removeListener("SIGTERM", onSignal);
  }
  return finish(state, stateFile, io);
}

function header(s: RolloutState, resumed: boolean, file: string): string {
  const done = s.nodes.filter((n) => n.state === "passed").length;
  const how = `at most ${s.plan.maxUnavailable} at a time, suites ${s.plan.suites || "(default)"}; state in ${displayPath(file)}`;
  return resumed
    ? `rollout ${s.id}: resuming: ${done} of ${s.nodes.length} node(s) passed already; ${how}`
    : `rollout ${s.id}: ${s.nodes.length} node(s), ${how}`;
}

interface Ctx {
  state: RolloutState;
  stateFile: string;
  nodes: readonly NodeSpec[];
  io: Out;
  stopped(): NodeJS.Signals | null;
}

/** Batch after batch; a non-null result is the exit code of a rollout that was interrupted. */
async function batches(o: RolloutCliOptions, c: Ctx): Promise<number | null> {
  for (;;) {
    const early = c.stopped();
    if (early) {
      c.state.status = "stopped";
      writeState(c.stateFile, c.state);
      c.io.err(
        `rollout ${c.state.id}: interrupted between batches; run the same command to resume`,
      );
      return early === "SIGTERM" ? 143 : 130;
    }
    const batch = nextBatch(c.state, c.state.plan.maxUnavailable);
    if (batch.length === 0) return null;
    const code = await runBatch(o, batch, c);
    writeState(c.stateFile, c.state);
    for (const n of batch) c.io.out(nodeLine(n));
    const sig = c.stopped();
    if (INTERRUPTED.has(code) || sig) {
      for (const n of batch) if (n.state === "running") n.state = "pending";
      c.state.status = "stopped";
      writeState(c.stateFile, c.state);
      c.io.err(
        `rollout ${c.state.id}: interrupted; run the same command to resume (state in ${displayPath(c.stateFile)})`,
      );
      return INTERRUPTED.has(code) ? code : sig === "SIGTERM" ? 143 : 130;
    }
    const bad = batch.filter((n) => n.state !== "passed");
    if (bad.length > 0 && !c.state.plan.keepGoing) {
      c.state.status = "stopped";
      const left = c.state.nodes.filter((n) => n.state === "pending").map((n) => n.name);
      c.io.err(
        `rollout ${c.state.id}: stopped after ${bad.map((n) => `${n.name} (${n.state})`).join(", ")}; ${left.length ? `not started: ${left.join(", ")}` : "no node left"}. Fix it and run the same command to resume, or add --keep-going`,
      );
      return null;
    }
  }
}

/** One `run` over the batch's nodes; their verdicts from its checks and run.json. */
async function runBatch(o: RolloutCliOptions, batch: RolloutNode[], c: Ctx): Promise<number> {
  const specs = batch.map((b) => c.nodes.find((n) => n.name === b.name)).filter((n) => !!n);
  const runId = newRunId();
  const out = join(dirname(c.stateFile), c.state.id, `${runId}`);
  mkdirSync(out, { recursive: true });
  const started = Date.now();
  const before = await driversBefore(o, batch);
  for (const n of batch)
    Object.assign(n, {
      state: "running",
      runId,
      out,
      startedAt: new Date(started).toISOString(),
      // A node run again after a resume keeps the driver it had before the window.
      driverBefore: n.driverBefore ?? before.get(n.name) ?? null,
    });
  writeState(c.stateFile, c.state);
  c.io.err(
    `rollout ${c.state.id}: ${batch.map((n) => n.name).join(", ")}: running (log ${displayPath(join(out, "run.log"))})`,
  );
  const drain = !o.via && specs.some((n) => n.slurmNode);
  const log = join(out, "run.log");
  const logIo: Out = {
    out: (l) => appendFileSync(log, `${l}\n`),
    err: (l) => appendFileSync(log, `${l}\n`),
  };
  const code = await runCommand(
    {
      ...o,
      nodes: batch.map((n) => n.name).join(","),
      out,
      runId,
      drain: drain || undefined,
      resumeOnlyOnPass: drain,
      drainOwner: drain ? c.state.id : undefined,
      quiet: true,
    },
    logIo,
  ).catch((e: unknown) => {
    logIo.err(`slicecheck rollout: ${(e as Error).message}`);
    return 2;
  });
  judgeBatch(batch, out, (Date.now() - started) / 1000);
  return code;
}

async function driversBefore(o: RolloutCliOptions, batch: readonly RolloutNode[]) {
  const out = new Map<string, string>();
  const path = dbPath(o.db);
  if (!path.includes("://") && !existsSync(path)) return out;
  try {
    const db = await openStore(path, { mustExist: true });
    try {
      for (const n of batch) {
        const d = await previousDriver(db, n.name);
        if (d) out.set(n.name, d);
      }
    } finally {
      await db.close();
    }
  } catch {
    // The summary says "?" where no earlier record could be read: not a reason to stop.
  }
  return out;
}

interface CheckLine {
  node: string | null;
  status: string;
  suite: string;
  title: string;
  code?: string;
}

/** A node passes when it has checks and every one passed or was skipped; a check of no node
 * (the run's own) counts for every node of the batch. */
function judgeBatch(batch: RolloutNode[], out: string, seconds: number): void {
  const checksFile = join(out, "checks.jsonl");
  const checks: CheckLine[] = existsSync(checksFile)
    ? readFileSync(checksFile, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as CheckLine)
    : [];
  const drivers = runDrivers(out);
  for (const n of batch) {
    const mine = checks.filter((x) => x.node === n.name || x.node === null);
    const verdict = worstStatus(mine.map((x) => storedStatus(x.status)));
    const worst = mine.find((x) => x.status === verdict && verdict !== "passed");
    // No check at all is no verdict: the node was not verified (a skipped-only node neither).
    n.state = mine.length === 0 || verdict === "skipped" ? "broken" : verdict;
    n.reason = worst
      ? `${worst.status} ${worst.suite}: ${worst.title}${worst.code ? ` [${worst.code}]` : ""}`
      : n.state === "broken"
        ? `${mine.length ? "only skipped checks" : "no check ran"} (see the run's log)`
        : null;
    n.durationS = Math.round(seconds);
    n.driverAfter = drivers.get(n.name) ?? null;
  }
}

function runDrivers(out: string): Map<string, string> {
  const file = join(out, "run.json");
  const m = new Map<string, string>();
  if (!existsSync(file)) return m;
  const j = JSON.parse(readFileSync(file, "utf8")) as {
    nodes?: { node: string; driver: string | null }[];
  };
  for (const n of j.nodes ?? []) if (n.driver) m.set(n.node, n.driver);
  return m;
}

const mmss = (s: number | null) =>
  s === null ? "-" : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;

function nodeLine(n: RolloutNode): string {
  const drivers = `driver ${n.driverBefore ?? "?"} -> ${n.driverAfter ?? "?"}`;
  return `${n.name}: ${n.state.toUpperCase()} in ${mmss(n.durationS)}, ${drivers}${n.reason ? `: ${n.reason}` : ""}`;
}

/** The window's summary (terminal and summary.md beside the state file) and the exit code. */
function finish(s: RolloutState, stateFile: string, io: Out): number {
  // Done only when every node passed: a window with a failed node is resumable (the resume
  // verifies it again), whether it stopped there or went on with --keep-going.
  if (s.nodes.every((n) => n.state === "passed")) {
    s.status = "done";
    s.finishedAt = new Date().toISOString();
  } else s.status = "stopped";
  writeState(stateFile, s);
  const rows = [["NODE", "VERDICT", "DURATION", "DRIVER BEFORE", "DRIVER AFTER", "RUN", "REASON"]];
  for (const n of s.nodes)
    rows.push([
      n.name,
      n.state === "pending" ? "not started" : n.state,
      mmss(n.durationS),
      n.driverBefore ?? "?",
      n.driverAfter ?? "?",
      n.runId ?? "-",
      n.reason ?? "",
    ]);
  const count = (st: string) => s.nodes.filter((n) => n.state === st).length;
  const line = `rollout ${s.id}: ${count("passed")} passed, ${count("failed")} failed, ${count("broken")} broken, ${count("pending")} not started, of ${s.nodes.length} node(s)`;
  const md = join(dirname(stateFile), s.id, "summary.md");
  mkdirSync(dirname(md), { recursive: true });
  writeFileSync(md, `# Rollout ${s.id}\n\n${line}\n\n\`\`\`\n${table(rows)}\n\`\`\`\n`);
  io.out(table(rows));
  io.out(`${line}; summary ${displayPath(md)}`);
  if (count("failed") > 0) return 1;
  return count("broken") > 0 ? 2 : 0;
}
