// What a run writes at its end, all from the one stream of check records: run.json (the context
// `slicecheck report` and the compliance page read), junit.xml, results-summary.json and the
// Allure executor.json. The Allure results themselves were written live by allure-mocha.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type CheckRecord, countOf } from "../verdicts/checks.js";
import type { Instance } from "../workloads/instances.js";
import { instanceLabel } from "../workloads/node-run.js";
import { enrichAllureResults, environmentProperties, writeEnvironment } from "./allure-extra.js";
import {
  type ContextNode,
  type ContextRow,
  type ExtraCheck,
  RUN_CONTEXT_FILE,
  type RunContext,
  type RunScope,
  type TestStatus,
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
  /** What the run was asked to cover and the sign-off policy (the compliance page's scope). */
  scope?: RunScope;
}

const EXTRA = new Set(["layout", "health", "regression"]);

function status(c: CheckRecord): TestStatus {
  return c.status === "skipped" ? "passed" : c.status;
}

export function contextOf(f: CheckReportFacts): RunContext {
  const first = Math.min(...f.checks.map((c) => c.startMs), Date.now());
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
  const inst = (c: CheckRecord) =>
    f.nodes.find((n) => n.node === c.node)?.instances.find((i) => i.uuid === c.instance?.uuid);
  const rows: ContextRow[] = [];
  const isolation: RunContext["isolation"] = [];
  const checks: ExtraCheck[] = [];
  const problems: RunContext["problems"] = [];
  for (const c of f.checks) {
    if ((c.suite === "stress" || c.suite === "nccl") && c.instance && c.node) {
      const i = inst(c);
      rows.push({
        node: c.node,
        gpu: c.gpu,
        gpuName: i?.gpuName ?? null,
        instance: c.instance.label,
        instanceUuid: c.instance.uuid,
        profile: c.instance.profile,
        placement: c.instance.placement,
        sm: i?.sm ?? null,
        suite: c.suite,
        metrics: Object.fromEntries(
          Object.entries(c.figures).filter((e): e is [string, number] => typeof e[1] === "number"),
        ),
        status: c.status === "passed" ? "ok" : c.status === "failed" ? "failed" : "broken",
        note: c.status === "passed" ? null : c.message,
        log: c.evidence.find((e) => e.path)?.path ?? "",
      });
    } else if (c.suite === "isolation" && c.node) {
      isolation.push({
        mode: (c.parameters.mode ?? "mig") as RunContext["isolation"][number]["mode"],
        route: c.parameters.route ?? "MIG",
        characterisation: c.code === "CHARACTERISED",
        node: c.node,
        gpu: c.gpu ?? 0,
        aggressor: c.parameters.aggressor ?? c.instance?.label ?? "?",
        profile: c.instance?.profile ?? c.parameters.profile ?? "?",
        fault: (c.parameters.fault ?? "oom") as RunContext["isolation"][number]["fault"],
        verdict: c.parameters.verdict ?? c.title,
        status: status(c),
        summary: c.message,
        evidence: {
          figures: c.figures,
          logLines: c.evidence
            .filter((e) => e.content)
            .flatMap((e) => (e.content ?? "").split("\n"))
            .slice(0, 50),
        },
      });
    } else if (EXTRA.has(c.suite) && c.node) {
      checks.push({
        suite: c.suite as ExtraCheck["suite"],
        node: c.node,
        gpu: c.gpu,
        title: c.title,
        status: status(c),
        message: c.message,
        parameters: Object.fromEntries(Object.entries(c.figures).map(([k, v]) => [k, String(v)])),
        attachment: c.evidence[0]?.content
          ? { name: c.evidence[0].name, content: c.evidence[0].content }
          : null,
      });
    } else if (c.status === "broken") {
      problems.push({ node: c.node ?? "run", suite: c.suite, message: `[${c.code}] ${c.message}` });
    }
  }
  return {
    runId: f.runId,
    label: f.label,
    startedAt: new Date(first).toISOString(),
    finishedAt: new Date().toISOString(),
    durationS: (Date.now() - first) / 1000,
    exitCode: f.exitCode,
    layout: f.layout,
    suites: f.suites,
    nodes,
    rows,
    isolation,
    problems,
    checks,
    allChecks: [...f.checks],
    ...(f.scope ? { scope: f.scope } : {}),
  };
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

/** JUnit from the checks (Jenkins xunit's junit-10.xsd): one testcase per check, with its time
 * and, when it did not pass, a failure (the node broke a promise) or an error (the harness could
 * not decide); the workload log's tail as its system-out; per testsuite the nodes' properties. */
export function junitOf(f: CheckReportFacts): string {
  const bySuite = new Map<string, CheckRecord[]>();
  for (const c of f.checks) bySuite.set(c.suite, [...(bySuite.get(c.suite) ?? []), c]);
  const all = countOf(f.checks);
  const span = (c: CheckRecord) => Math.max(0, c.stopMs - c.startMs) / 1000;
  const suites = [...bySuite].map(([suite, list]) => {
    const n = countOf(list);
    const time = list.reduce((a, c) => a + span(c), 0).toFixed(3);
    const nodes = [...new Set(list.map((c) => c.node).filter((x): x is string => !!x))].sort();
    const props = nodes.flatMap((node) => nodeProperties(f, node));
    const properties = props.length
      ? `    <properties>\n${props.map(([k, v]) => `      <property name="${esc(k)}" value="${esc(v)}"/>`).join("\n")}\n    </properties>\n`
      : "";
    const cases = list.map((c) => {
      const cls = [
        c.node ?? "run",
        c.gpu === null ? null : `gpu${c.gpu}`,
        c.instance?.label ?? null,
      ]
        .filter(Boolean)
        .join(".");
      const open = `    <testcase classname="${esc(`${suite}.${cls}`)}" name="${esc(c.fullTitle)}" time="${span(c).toFixed(3)}"`;
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
    return `  <testsuite name="${esc(suite)}" tests="${list.length}" failures="${n.failed}" errors="${n.broken}" skipped="${n.skipped}" time="${time}">\n${properties}${cases.join("\n")}\n  </testsuite>`;
  });
  // junit-10.xsd allows no `skipped` on <testsuites>; each <testsuite> carries its own.
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="slicecheck ${esc(f.runId)}" tests="${f.checks.length}" failures="${all.failed}" errors="${all.broken}">\n${suites.join("\n")}\n</testsuites>\n`;
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
  writeFileSync(join(f.outDir, RUN_CONTEXT_FILE), `${JSON.stringify(ctx, null, 2)}\n`);
  writeFileSync(join(f.outDir, "junit.xml"), junitOf(f));
  writeFileSync(
    join(f.outDir, "results-summary.json"),
    `${JSON.stringify(summaryOf(f), null, 2)}\n`,
  );
  if (f.suites.includes("isolation"))
    // The isolation verdicts with their evidence, as earlier versions wrote them.
    writeFileSync(
      join(f.outDir, "verdicts.json"),
      `${JSON.stringify({ runId: f.runId, rows: ctx.isolation, problems: ctx.problems.filter((p) => p.suite === "isolation") }, null, 2)}\n`,
    );
  if (!f.allure) return;
  const dir = join(f.outDir, "allure-results");
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
  // allure-mocha writes environment.properties and categories.json, never executor.json.
  writeFileSync(join(dir, "executor.json"), `${JSON.stringify(f.executor, null, 2)}\n`);
  writeEnvironment(dir, environmentProperties(ctx, f.executor));
  enrichAllureResults(dir, ctx);
}
