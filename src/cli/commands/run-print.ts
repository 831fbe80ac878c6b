// What `slicecheck run` prints: a line per check as it ends, and at the end every check that
// did not pass with its reason and evidence, the counts, and the verdict as the last line.
import { join } from "node:path";
import type { HarnessRunResult } from "../../harness/run.js";
import { type CheckRecord, countOf } from "../../verdicts/checks.js";
import { displayPath, type Out } from "../context.js";

const MARK = { passed: "ok", failed: "FAILED", broken: "BROKEN", skipped: "skipped" } as const;

function where(c: CheckRecord): string {
  return [
    c.node,
    c.gpu === null ? null : `GPU ${c.gpu}`,
    c.instance ? `${c.instance.profile}@${c.instance.placement ?? "-"}` : null,
  ]
    .filter(Boolean)
    .join(" ");
}

function figure(c: CheckRecord): string {
  const f = c.figures;
  if (typeof f.tflops === "number") return ` ${f.tflops.toFixed(2)} TFLOP/s`;
  if (typeof f.algbw === "number") return ` ${f.algbw.toFixed(2)} GB/s`;
  return "";
}

export function checkLine(c: CheckRecord): string {
  return `${MARK[c.status]} ${c.suite} ${where(c)}: ${c.title}${figure(c)}`;
}

export function printRunEnd(
  r: HarnessRunResult,
  o: { outDir: string; allure: boolean },
  io: Out,
): void {
  const counts = countOf(r.checks);
  const bad = r.checks.filter((c) => c.status === "failed" || c.status === "broken");
  if (bad.length > 0) {
    io.out("");
    io.out("Checks that did not pass:");
    for (const c of bad) {
      const ev = c.evidence.find((e) => e.path)?.path;
      io.out(`  ${MARK[c.status]} [${c.code}] ${c.suite} ${where(c)}: ${c.title}`);
      io.out(`      ${c.message}`);
      if (ev) io.out(`      evidence: ${displayPath(ev)}`);
    }
  }
  if (
    r.checks.some(
      (c) => c.suite === "isolation" && c.parameters.mode && c.parameters.mode !== "mig",
    )
  )
    io.out(
      "note: time-slicing and MPS are soft partitioning, not isolation: processes share the GPU's throughput and memory, and under MPS one client's fatal fault kills the others",
    );
  const results = join(o.outDir, "allure-results");
  io.out("");
  io.out(
    `reports: ${displayPath(join(o.outDir, "junit.xml"))}, ${displayPath(join(o.outDir, "checks.jsonl"))}${o.allure ? `, Allure results in ${displayPath(results)} (\`slicecheck report --results ${results}\`)` : ""}`,
  );
  io.out(
    `${counts.passed} passed, ${counts.failed} failed, ${counts.broken} broken, ${counts.skipped} skipped`,
  );
  const verdict = r.interrupted
    ? "INTERRUPTED: the figures measured so far are kept; the run is recorded as interrupted"
    : r.exitCode === 0
      ? "PASSED: every check passed"
      : r.exitCode === 1
        ? "FAILED: a check failed (see above)"
        : "BROKEN: some checks could not be decided (see above); nothing failed";
  io.out(`run ${r.runId}: ${verdict}`);
}
