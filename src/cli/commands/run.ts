// `slicecheck run`: the suites on every selected node. This issue's suites are `stress` and
// `nccl`: one workload on every MIG instance of a node at once, nodes in parallel, live progress,
// a per-instance table, and every measurement written as it arrives, even when interrupted.
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pLimit from "p-limit";
import { SlicecheckError } from "../../errors.js";
import type { NodeSpec } from "../../inventory/types.js";
import {
  applyLayout,
  DEFAULT_JOURNAL_DIR,
  restoreNodes,
  validateOffline,
} from "../../mig/apply/index.js";
import { loadLayout, selectConfig } from "../../mig/layout/index.js";
import { newRunId } from "../../transport/open.js";
import type { InstanceOutcome } from "../../workloads/launcher.js";
import {
  instanceLabel,
  type NodeRunResult,
  runNode,
  type SuiteName,
} from "../../workloads/node-run.js";
import { displayPath, loadSelected, type NodeOptions, type Out, table } from "../context.js";
import { printChangeReports, worstExit } from "./apply.js";

export const RUN_SUITES: readonly SuiteName[] = ["stress", "nccl"];

export interface RunCliOptions extends NodeOptions {
  suites: string;
  layout?: string;
  config?: string;
  keep?: boolean;
  allowReset?: boolean;
  journalDir?: string;
  duration: number;
  out?: string;
  json?: boolean;
  concurrency?: number;
}

export function parseSuites(s: string): SuiteName[] {
  const list = s
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);
  const bad = list.filter((x) => !(RUN_SUITES as readonly string[]).includes(x));
  if (bad.length || list.length === 0) {
    throw new SlicecheckError(
      "USAGE",
      `--suites: unknown suite ${bad.map((b) => `'${b}'`).join(", ") || "(none given)"}; available: ${RUN_SUITES.join(", ")}`,
    );
  }
  return [...new Set(list)] as SuiteName[];
}

async function restoreAfter(
  nodes: NodeSpec[],
  session: { runId: string; journalDir: string; allowReset: boolean },
  io: Out,
): Promise<void> {
  io.err("restoring the original MIG layout (use --keep to leave the run's layout in place)");
  const restored = await restoreNodes(nodes, session);
  if (worstExit(restored) !== 0) {
    printChangeReports(restored, "restore", "the journal", io);
    io.err(
      "slicecheck: the original layout could not be restored everywhere; run `slicecheck restore` once the cause is fixed",
    );
  }
}

export type InstanceStatus = "ok" | "failed" | "broken";

/** A died or erroring workload is a failed check; one the harness could not run is broken. */
export function statusOf(o: InstanceOutcome): InstanceStatus {
  if (o.harnessError) return "broken";
  if (o.died || o.timedOut) return "failed";
  const errors = o.measurements.find(
    (m) => m.metric === "errors" || m.metric === "wrong" || m.metric === "faulty",
  );
  if (errors && errors.value > 0) return "failed";
  if (o.parseError || o.measurements.length === 0) return "broken";
  return "ok";
}

export async function runCommand(o: RunCliOptions, io: Out): Promise<number> {
  const suites = parseSuites(o.suites);
  // The layout is checked before any node is touched, like everything else about the input.
  const config = o.layout ? selectConfig(loadLayout(o.layout), o.config) : null;
  if (config && o.layout) validateOffline(config, o.layout);
  if (!o.layout && o.config)
    throw new SlicecheckError(
      "USAGE",
      "-c/--config names a config of a --layout file; give --layout too",
    );
  const { nodes } = loadSelected(o);
  const runId = newRunId();
  const session = {
    runId,
    journalDir: o.journalDir ?? DEFAULT_JOURNAL_DIR,
    allowReset: o.allowReset ?? false,
    keep: o.keep ?? false,
  };
  const outDir = o.out ?? join("reports", "runs", runId);
  mkdirSync(outDir, { recursive: true });
  const measurementsFile = join(outDir, "measurements.jsonl");
  const started = Date.now();
  const ac = new AbortController();
  const onSigint = () => {
    io.err("slicecheck: interrupted; stopping the workloads and writing what was measured");
    ac.abort();
  };
  process.once("SIGINT", onSigint);
  process.once("SIGTERM", onSigint);
  io.err(
    `run ${runId}: ${suites.join(",")} on ${nodes.length} node(s), ${o.duration} s each; output in ${displayPath(outDir)}`,
  );

  const results: NodeRunResult[] = [];
  if (config && o.layout) {
    io.err(`applying config '${config.name}' of ${o.layout}`);
    const applied = await applyLayout(nodes, config, {
      ...session,
      dryRun: false,
      layout: { file: o.layout, config: config.name },
    });
    const worst = worstExit(applied);
    if (worst !== 0) {
      printChangeReports(applied, "apply", `config '${config.name}'`, io);
      // Whatever was changed before the failure is put back; a refused apply changed nothing.
      if (!o.keep) await restoreAfter(nodes, session, io);
      return worst;
    }
  }
  try {
    const limit = pLimit(o.concurrency ?? 64);
    await Promise.all(
      nodes.map((node) =>
        limit(async () => {
          const r = await runNode(node, {
            runId,
            suites,
            durationS: o.duration,
            outDir,
            signal: ac.signal,
            onLine: (inst, line) => {
              if (!o.json && /^SLICECHECK stress |^# Avg bus bandwidth/.test(line)) {
                io.err(
                  `[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${inst.node} ${instanceLabel(inst)} ${line.replace(/^SLICECHECK /, "")}`,
                );
              }
            },
          });
          // Written as each node finishes, so an interrupted run keeps what it measured.
          for (const s of r.suites) {
            for (const out of s.outcomes) {
              for (const m of out.measurements)
                appendFileSync(
                  measurementsFile,
                  `${JSON.stringify({ runId, suite: s.suite, ...m })}\n`,
                );
            }
          }
          results.push(r);
        }),
      ),
    );
  } finally {
    process.removeListener("SIGINT", onSigint);
    process.removeListener("SIGTERM", onSigint);
    if (config && !o.keep) await restoreAfter(nodes, session, io);
  }

  const summary = summarize(runId, results);
  writeFileSync(join(outDir, "summary.json"), `${JSON.stringify(summary, null, 2)}\n`);
  if (o.json) io.out(JSON.stringify(summary, null, 2));
  else printRun(summary, io, outDir, Date.now() - started);
  if (ac.signal.aborted) return 2;
  if (summary.rows.some((r) => r.status === "failed")) return 1;
  if (summary.rows.some((r) => r.status === "broken") || summary.problems.length) return 2;
  return 0;
}

export interface RunRow {
  node: string;
  instance: string;
  gpuUuid: string;
  instanceUuid: string;
  profile: string;
  placement: string | null;
  sm: number | null;
  suite: string;
  metrics: Record<string, number>;
  exitCode: number | null;
  status: InstanceStatus;
  log: string;
  note: string | null;
}

export function summarize(runId: string, results: NodeRunResult[]) {
  const rows: RunRow[] = [];
  const problems: { node: string; suite: string | null; message: string }[] = [];
  for (const r of [...results].sort((a, b) => a.node.localeCompare(b.node))) {
    if (r.error) problems.push({ node: r.node, suite: null, message: r.error });
    for (const s of r.suites) {
      if (s.skipped) problems.push({ node: r.node, suite: s.suite, message: s.skipped });
      for (const out of s.outcomes) {
        const status = statusOf(out);
        rows.push({
          node: r.node,
          instance: instanceLabel(out.instance),
          gpuUuid: out.instance.gpuUuid,
          instanceUuid: out.instance.uuid,
          profile: out.instance.profile,
          placement: out.instance.placement,
          sm: out.instance.sm,
          suite: s.suite,
          metrics: Object.fromEntries(out.measurements.map((m) => [m.metric, m.value])),
          exitCode: out.exitCode,
          status,
          log: out.log,
          note:
            out.harnessError ??
            out.parseError ??
            (out.timedOut
              ? "killed at its deadline"
              : out.died
                ? `exit ${out.exitCode ?? out.signal}`
                : null),
        });
      }
    }
  }
  return { runId, rows, problems };
}

function printRun(s: ReturnType<typeof summarize>, io: Out, outDir: string, ms: number): void {
  const fmt = (v: number | undefined, d = 2) => (v === undefined ? "-" : v.toFixed(d));
  io.out(
    table([
      [
        "NODE",
        "INSTANCE",
        "PROFILE",
        "SLICES",
        "SUITE",
        "TFLOP/S",
        "ALGBW GB/S",
        "ERRORS",
        "STATUS",
        "NOTE",
      ],
      ...s.rows.map((r) => [
        r.node,
        r.instance,
        r.profile,
        r.placement ?? "-",
        r.suite,
        fmt(r.metrics.tflops),
        fmt(r.metrics.algbw),
        fmt(r.metrics.errors ?? r.metrics.wrong, 0),
        r.status.toUpperCase(),
        r.note ?? "",
      ]),
    ]),
  );
  for (const p of s.problems) io.out(`  ${p.node}${p.suite ? ` (${p.suite})` : ""}: ${p.message}`);
  const counts = ["ok", "failed", "broken"]
    .map((k) => `${s.rows.filter((r) => r.status === k).length} ${k}`)
    .join(", ");
  io.out(`${counts}; ${(ms / 1000).toFixed(1)} s; results in ${displayPath(outDir)}`);
}
