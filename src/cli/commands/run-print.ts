// The end of `slicecheck run` on stdout: every check that did not pass (where, its stable code,
// why, and where its evidence is), a table of the counts per node, where the reports are, and
// the verdict as the very last line, so `tail -1` of a CI log says how the run went.
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { styleText } from "node:util";
import type { HarnessRunResult } from "../../harness/run.js";
import { signoffLines, signoffOfRun } from "../../report/signoff/summary.js";
import type { PassKind, Status } from "../../util/status.js";
import { type CheckRecord, countOf, passKindOf } from "../../verdicts/checks.js";
import { displayPath, type Out, table } from "../context.js";

/** How the terminal marks each status (a presentation: "ok" here is passed, not a fifth word). */
export const MARK = {
  passed: "ok",
  failed: "FAILED",
  broken: "BROKEN",
  skipped: "skipped",
} as const satisfies Record<Status, string>;

/** Colour only on a terminal, and never with NO_COLOR set (https://no-color.org). */
export function painter(io: Out, env = process.env) {
  const on = io.outTty === true && !env.NO_COLOR;
  return (style: "red" | "green" | "yellow" | "bold", text: string) =>
    on ? styleText(style, text, { validateStream: false }) : text;
}

export function where(c: CheckRecord): string {
  return [
    c.node,
    c.gpu === null ? null : `GPU ${c.gpu}`,
    c.instance ? `${c.instance.profile}@${c.instance.placement ?? "-"}` : null,
  ]
    .filter(Boolean)
    .join(" ");
}

/** The check's own evidence file; a check with none is found by its id in checks.jsonl. */
export function evidenceOf(c: CheckRecord, outDir: string): string {
  const file = c.evidence.find((e) => e.path)?.path;
  return file ? displayPath(file) : `${displayPath(join(outDir, "checks.jsonl"))} (check ${c.id})`;
}

export function verdictOf(r: Pick<HarnessRunResult, "interrupted" | "exitCode">): string {
  return r.interrupted
    ? "INTERRUPTED: the figures measured so far are kept; the run is recorded as interrupted"
    : r.exitCode === 0
      ? "PASSED: every check passed"
      : r.exitCode === 1
        ? "FAILED: a check failed (see above)"
        : "BROKEN: some checks could not be decided (see above); nothing failed";
}

/** Why some passes verify no promise, read from the checks' kinds: the counts above include
 * them as passed, so the terminal says how many, as the sign-off does per check. */
export function kindNotes(checks: readonly CheckRecord[]): string[] {
  const n = (k: PassKind) => checks.filter((c) => passKindOf(c) === k).length;
  const out: string[] = [];
  const soft = n("characterised");
  if (soft > 0)
    out.push(
      `note: ${soft} passed check(s) are characterisations: time-slicing and MPS are soft routes, not isolation: processes share the GPU's throughput (and, without a pinned memory limit, its memory), and under MPS one client's fatal fault kills the others; what a route does not promise is reported as a characterisation (code CHARACTERISED) with its figure, and only a broken promise fails`,
    );
  const documented = n("documented-constraint");
  if (documented > 0)
    out.push(
      `note: ${documented} passed check(s) are documented constraints (code DOCUMENTED_CONSTRAINT): a limit the platform documents, observed as documented, never a failure of the node`,
    );
  return out;
}

function perNode(checks: readonly CheckRecord[]): string {
  const nodes = [...new Set(checks.map((c) => c.node ?? "(run)"))];
  return table([
    ["NODE", "PASSED", "FAILED", "BROKEN", "SKIPPED"],
    ...nodes.map((n) => {
      const k = countOf(checks.filter((c) => (c.node ?? "(run)") === n));
      return [n, String(k.passed), String(k.failed), String(k.broken), String(k.skipped)];
    }),
  ]);
}

export function printEnd(
  r: HarnessRunResult,
  o: { runId: string; outDir: string; allure: boolean },
  io: Out,
): void {
  const paint = painter(io);
  const bad = r.checks.filter((c) => c.status === "failed" || c.status === "broken");
  if (bad.length > 0) {
    io.out("");
    io.out("Checks that did not pass:");
    for (const c of bad) {
      const mark = paint(c.status === "failed" ? "red" : "yellow", MARK[c.status]);
      io.out(`  ${mark} [${c.code}] ${c.suite} ${where(c)}: ${c.title}`);
      io.out(`      ${c.message}`);
      io.out(`      evidence: ${evidenceOf(c, o.outDir)}`);
    }
  }
  for (const l of kindNotes(r.checks)) io.out(l);
  io.out("");
  if (r.checks.length > 0) io.out(perNode(r.checks));
  io.out(reportsLine(o.outDir, o.allure));
  // The compliance page's headline, judged by the run's sign-off policy (run.json scope); above
  // the counts, so that the last two lines stay the counts and the verdict, as scripts read them.
  const s = r.checks.length > 0 ? signoffOfRun(o.outDir) : null;
  if (s) for (const l of signoffLines(s)) io.out(l);
  const k = countOf(r.checks);
  io.out(`${k.passed} passed, ${k.failed} failed, ${k.broken} broken, ${k.skipped} skipped`);
  const v = verdictOf(r);
  const style = r.exitCode === 0 ? "green" : r.exitCode === 1 ? "red" : "yellow";
  io.out(`run ${o.runId}: ${paint(style, v)}`);
}

/** A file with something in it (a full disk leaves reports created but empty). */
function written(path: string): boolean {
  try {
    return statSync(path).size > 0;
  } catch {
    return false;
  }
}

/** The reports line: only the files that were actually written (a full or read-only --out
 * leaves some missing or empty; the broken [WRITE] check above says why). */
export function reportsLine(outDir: string, allure: boolean): string {
  const files = ["junit.xml", "checks.jsonl"]
    .map((f) => join(outDir, f))
    .filter(written)
    .map(displayPath);
  const results = join(outDir, "allure-results");
  let allureWritten = false;
  try {
    allureWritten = allure && readdirSync(results).some((f) => written(join(results, f)));
  } catch {
    /* not there */
  }
  if (allureWritten)
    files.push(
      `Allure results in ${displayPath(results)} (\`slicecheck report --results ${results}\`)`,
    );
  return files.length > 0
    ? `reports: ${files.join(", ")}`
    : `reports: none written in ${displayPath(outDir)}`;
}

/** A check as it finishes, on the live output: only those that did not pass (the rest are
 * counted in the node's progress line). */
export function liveCheck(c: CheckRecord): string | null {
  if (c.status !== "failed" && c.status !== "broken") return null;
  return `${MARK[c.status]} [${c.code}] ${c.suite} ${where(c)}: ${c.title}`;
}

/** `run --list`: the tests that would run, one line each (or JSON); exit 0. */
export function printList(
  listed: readonly { suite: string; path: string[]; title: string }[],
  suites: number,
  nodes: number,
  runId: string,
  json: boolean | undefined,
  io: Out,
): number {
  if (json) io.out(JSON.stringify({ runId, tests: listed }, null, 2));
  else {
    for (const t of listed) io.out(`${t.suite}: ${[...t.path.slice(1), t.title].join(" › ")}`);
    io.out(`${listed.length} test(s) in ${suites} suite(s) on ${nodes} node(s)`);
  }
  return 0;
}

/** `run --json`: every check, the counts, the nodes and the exit code; returns the exit code. */
export function printJson(r: HarnessRunResult, runId: string, io: Out, outDir?: string): number {
  io.out(
    JSON.stringify(
      {
        runId,
        exitCode: r.exitCode,
        interrupted: r.interrupted,
        counts: countOf(r.checks),
        // The compliance page's headline and coverage (null when run.json could not be written).
        signoff: outDir && r.checks.length > 0 ? signoffOfRun(outDir) : null,
        nodes: r.nodes,
        // Where the run's time went: each task, teardown and end step (spans.ts).
        tasks: r.tasks,
        checks: r.checks,
      },
      null,
      2,
    ),
  );
  return r.exitCode;
}
