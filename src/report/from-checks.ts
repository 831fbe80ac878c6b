// What a run writes at its end, all from the one stream of check records: run.json (the run's
// facts, no count: the records themselves are checks.jsonl, written by the sink as checks end),
// junit.xml, results-summary.json, verdicts.json (the isolation checks as rows) and the Allure
// executor.json. The Allure results were written live by allure-mocha and are completed here,
// one per check with the record's status.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { IsolationRow } from "../chaos/isolation.js";
import { hasRole, suiteOf } from "../util/suite-registry.js";
import { type CheckRecord, countOf, passKindOf } from "../verdicts/checks.js";
import type { Instance } from "../workloads/instances.js";
import { instanceLabel } from "../workloads/node-run.js";
import { completeAllureResults } from "./allure-complete.js";
import { enrichAllureResults, environmentProperties, writeEnvironment } from "./allure-extra.js";
import {
  type ContextNode,
  RUN_CONTEXT_FILE,
  type RunContext,
  type RunFacts,
  type RunScope,
} from "./context.js";

export interface CheckReportFacts {
  runId: string;
  label: string | null;
  exitCode: number;
  interrupted: boolean;
  suites: string[];
  layout: { file: string; config: string } | null;
  checks: readonly CheckRecord[];
  nodes: {
    node: string;
    driver: string | null;
    cuda: string | null;
    instances: Instance[];
    error: string | null;
  }[];
  history: string;
  outDir: string;
  allure: boolean;
  executor: Record<string, unknown>;
  /** When the run began and ended (default: its first check's start, and now). */
  startedMs?: number;
  finishedMs?: number;
  /** Write an Allure result for every check that has none (false: the caller merges results
   * from elsewhere first and completes them itself, as `run --via slurm` does). */
  completeAllure?: boolean;
  /** What the run was asked to cover and the sign-off policy (the compliance page's scope). */
  scope?: RunScope;
}

/** The run's facts as run.json keeps them: no check and no count (those are checks.jsonl's). */
export function factsOf(f: CheckReportFacts): RunFacts {
  const first = f.startedMs ?? Math.min(...f.checks.map((c) => c.startMs), Date.now());
  const last = f.finishedMs ?? Date.now();
  const nodes: ContextNode[] = f.nodes
    .map((n) => {
      const gpus = new Map<number, { index: number; name: string; uuid: string }>();
      for (const i of n.instances)
        gpus.set(i.gpu, { index: i.gpu, name: i.gpuName, uuid: i.gpuUuid });
      return {
        node: n.node,
        driver: n.driver,
        cuda: n.cuda,
        gpus: [...gpus.values()].sort((a, b) => a.index - b.index),
        error: n.error,
        instances: n.instances.map((i) => ({
          gpu: i.gpu,
          label: instanceLabel(i),
          profile: i.profile,
          placement: i.placement,
          sm: i.sm,
          uuid: i.uuid,
          mig: i.gpuInstanceId !== null,
        })),
      };
    })
    .sort((a, b) => a.node.localeCompare(b.node));
  return {
    runId: f.runId,
    label: f.label,
    startedAt: new Date(first).toISOString(),
    finishedAt: new Date(last).toISOString(),
    durationS: (last - first) / 1000,
    exitCode: f.exitCode,
    layout: f.layout,
    suites: f.suites,
    nodes,
    ...(f.scope ? { scope: f.scope } : {}),
  };
}

/** What every report reads: the facts and the check records themselves. */
export function contextOf(f: CheckReportFacts): RunContext {
  return { ...factsOf(f), allChecks: [...f.checks] };
}

/** verdicts.json: the isolation checks as earlier versions listed them (one row per verdict
 * with its evidence), for scripts that read it; a view of the records, never counted from. */
function isolationRows(checks: readonly CheckRecord[]): IsolationRow[] {
  return checks
    .filter((c) => hasRole(c.suite, "matrix") && c.node && c.status !== "skipped")
    .map((c) => ({
      mode: (c.parameters.mode ?? "mig") as IsolationRow["mode"],
      route: c.parameters.route ?? "MIG",
      characterisation: passKindOf(c) === "characterised",
      node: c.node as string,
      gpu: c.gpu ?? 0,
      aggressor: c.parameters.aggressor ?? c.instance?.label ?? "?",
      profile: c.instance?.profile ?? c.parameters.profile ?? "?",
      fault: (c.parameters.fault ?? "oom") as IsolationRow["fault"],
      verdict: c.parameters.verdict ?? c.title,
      status: c.status as IsolationRow["status"],
      summary: c.message,
      evidence: {
        figures: c.figures,
        logLines: c.evidence
          .filter((e) => e.content)
          .flatMap((e) => (e.content ?? "").split("\n"))
          .slice(0, 50),
      },
    }));
}

const esc = (s: string) =>
  // XML 1.0 forbids these control characters even as references.
  s
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, "")
    .replace(
      /[<>&"']/g,
      (c) => `&${{ "<": "lt", ">": "gt", "&": "amp", '"': "quot", "'": "apos" }[c]};`,
    );

/** Per node what JUnit's `<properties>` say about it: driver, CUDA, layout and route. */
function nodeProperties(f: CheckReportFacts, node: string): [string, string][] {
  const n = f.nodes.find((x) => x.node === node);
  if (!n) return [];
  const gpus = [...new Set(n.instances.map((i) => i.gpu))].sort((a, b) => a - b);
  const route = gpus
    .map((g) => {
      const mine = n.instances.filter((i) => i.gpu === g);
      return `GPU ${g}: ${mine.some((i) => i.gpuInstanceId !== null) ? `MIG, ${mine.length} instance(s)` : "whole GPU (no partitioning)"}`;
    })
    .join("; ");
  return [
    [`${node}.driver`, n.driver ?? "unknown"],
    [`${node}.cuda`, n.cuda ?? "unknown"],
    [
      `${node}.layout`,
      `${f.layout ? `${f.layout.file} -c ${f.layout.config}` : "as found"}: ${n.instances.map((i) => `${i.profile}${i.placement ? `@${i.placement}` : ""}`).join(", ") || "no instance"}`,
    ],
    [`${node}.route`, n.error ? `could not be checked: ${n.error}` : route || "unknown"],
  ];
}

/** The last `lines` lines of a check's workload log, or null when it has none (or it is gone). */
function logTail(c: CheckRecord, lines = 40): string | null {
  const path = c.evidence.find((e) => e.path)?.path;
  if (!path) return null;
  try {
    const all = readFileSync(path, "utf8").replace(/\n$/, "").split("\n");
    return `${path} (last ${Math.min(lines, all.length)} of ${all.length} lines)\n${all.slice(-lines).join("\n")}`;
  } catch {
    return null;
  }
}

/** Seconds covered by the union of the checks' spans: a suite's wall time. Its checks' work
 * overlaps (every instance stressed at once, four verdicts judging one isolation scenario), so
 * a sum would count the same seconds many times over and exceed the whole run. */
export function wallSeconds(list: readonly Pick<CheckRecord, "startMs" | "stopMs">[]): number {
  const spans = list
    .map((c) => [c.startMs, Math.max(c.startMs, c.stopMs)] as const)
    .sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = Number.NEGATIVE_INFINITY;
  for (const [a, b] of spans) {
    if (b <= end) continue;
    total += b - Math.max(a, end);
    end = b;
  }
  return total / 1000;
}

/** A JUnit classname that stays the same across runs, so that CI history (Jenkins, GitLab)
 * follows one check: suite, node, GPU index, and the instance by profile and placement start,
 * never by its GI/CI ids, which change on every re-create of the same layout. Jenkins reads
 * the dots as package.class, so the instance part keeps none (`3g_40gb@4`: class under
 * package suite.node.gpuN), and no part keeps a `/`. */
export function junitClassname(
  c: Pick<CheckRecord, "suite" | "node" | "gpu" | "instance">,
): string {
  const inst = c.instance
    ? `${c.instance.profile}@${c.instance.placement?.split(":")[0] ?? "whole"}`.replace(
        /[./]/g,
        "_",
      )
    : null;
  return [c.suite, c.node ?? "run", c.gpu === null ? null : `gpu${c.gpu}`, inst]
    .filter((x): x is string => x !== null)
    .join(".")
    .replaceAll("/", "_");
}

/** ISO 8601 in UTC to the second (`2026-12-03T20:52:21Z`): what JUnit readers parse. */
const isoSeconds = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

/** JUnit from the checks (Jenkins xunit's junit-10.xsd): one testcase per check, with its own
 * span, each testsuite with its wall time (wallSeconds) and, when it did not pass, a failure (the node broke a promise) or an error (the harness could
 * not decide); the workload log's tail as its system-out; per testsuite the nodes' properties. */
export function junitOf(f: CheckReportFacts): string {
  const bySuite = new Map<string, CheckRecord[]>();
  for (const c of f.checks) bySuite.set(c.suite, [...(bySuite.get(c.suite) ?? []), c]);
  const all = countOf(f.checks);
  const span = (c: CheckRecord) => Math.max(0, c.stopMs - c.startMs) / 1000;
  const suites = [...bySuite].map(([suite, list]) => {
    const n = countOf(list);
    const time = wallSeconds(list).toFixed(3);
    const nodes = [...new Set(list.map((c) => c.node).filter((x): x is string => !!x))].sort();
    const props = nodes.flatMap((node) => nodeProperties(f, node));
    const properties = props.length
      ? `    <properties>\n${props.map(([k, v]) => `      <property name="${esc(k)}" value="${esc(v)}"/>`).join("\n")}\n    </properties>\n`
      : "";
    const cases = list.map((c) => {
      const open = `    <testcase classname="${esc(junitClassname(c))}" name="${esc(c.fullTitle)}" time="${span(c).toFixed(3)}"`;
      const inner: string[] = [];
      if (c.status === "skipped") inner.push(`      <skipped message="${esc(c.message)}"/>`);
      else if (c.status !== "passed") {
        const tag = c.status === "failed" ? "failure" : "error";
        inner.push(
          `      <${tag} message="${esc(c.message)}" type="${esc(c.code)}">${esc(c.message)}</${tag}>`,
        );
      }
      const tail = logTail(c);
      if (tail !== null) inner.push(`      <system-out>${esc(tail)}</system-out>`);
      return inner.length ? `${open}>\n${inner.join("\n")}\n    </testcase>` : `${open}/>`;
    });
    const started = isoSeconds(Math.min(...list.map((c) => c.startMs)));
    return `  <testsuite name="${esc(suite)}" timestamp="${started}" tests="${list.length}" failures="${n.failed}" errors="${n.broken}" skipped="${n.skipped}" time="${time}">\n${properties}${cases.join("\n")}\n  </testsuite>`;
  });
  const facts = factsOf(f);
  // junit-10.xsd allows no `skipped` on <testsuites>; each <testsuite> carries its own. Its
  // time is the run's wall time, which the suites' (run one after another) add up to at most.
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="slicecheck ${esc(f.runId)}" tests="${f.checks.length}" failures="${all.failed}" errors="${all.broken}" time="${facts.durationS.toFixed(3)}">\n${suites.join("\n")}\n</testsuites>\n`;
}

export function summaryOf(f: CheckReportFacts): Record<string, unknown> {
  return {
    runId: f.runId,
    label: f.label,
    exitCode: f.exitCode,
    interrupted: f.interrupted,
    counts: countOf(f.checks),
    checks: f.checks,
  };
}

export function writeCheckReports(f: CheckReportFacts): void {
  const ctx = contextOf(f);
  writeFileSync(join(f.outDir, RUN_CONTEXT_FILE), `${JSON.stringify(factsOf(f), null, 2)}\n`);
  writeFileSync(join(f.outDir, "junit.xml"), junitOf(f));
  writeFileSync(
    join(f.outDir, "results-summary.json"),
    `${JSON.stringify(summaryOf(f), null, 2)}\n`,
  );
  if (f.suites.includes(suiteOf("matrix"))) {
    const problems = f.checks
      .filter((c) => hasRole(c.suite, "matrix") && !c.node && c.status === "broken")
      .map((c) => ({ node: "run", suite: c.suite, message: `[${c.code}] ${c.message}` }));
    writeFileSync(
      join(f.outDir, "verdicts.json"),
      `${JSON.stringify({ runId: f.runId, rows: isolationRows(f.checks), problems }, null, 2)}\n`,
    );
  }
  if (!f.allure) return;
  const dir = join(f.outDir, "allure-results");
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
  // allure-mocha writes environment.properties and categories.json, never executor.json.
  writeFileSync(join(dir, "executor.json"), `${JSON.stringify(f.executor, null, 2)}\n`);
  writeEnvironment(dir, environmentProperties(ctx, f.executor));
  // Completed first, so that a result written from its record gets its figures too.
  if (f.completeAllure !== false) completeAllureResults(dir, f.checks);
  enrichAllureResults(dir, ctx);
}
