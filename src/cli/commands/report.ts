// `slicecheck report`: the Allure report of a run (with history from the previous report), the
// compliance summary as HTML and (with --pdf) as a PDF printed by Chromium, and a short summary.
import { existsSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { SlicecheckError } from "../../errors.js";
import { PREVIOUS_RUN } from "../../harness/out-dir.js";
import { complianceHtml } from "../../report/compliance.js";
import { readRunContext } from "../../report/context.js";
import { generateReport, openReport } from "../../report/generate.js";
import { signoffModel } from "../../report/signoff/model.js";
import { signoffLines, summaryOfModel } from "../../report/signoff/summary.js";
import { countOf } from "../../verdicts/checks.js";
import { displayPath, type Out } from "../context.js";

export interface ReportCliOptions {
  results?: string;
  out?: string;
  singleFile?: boolean;
  pdf?: boolean;
  /** Exit with the run's verdict (run.json exitCode), for CI jobs that only call `report`. */
  exitCode?: boolean;
  /** Serve the report with `allure open` once it is written. */
  open?: boolean;
}

/** The newest run's allure-results under reports/ (runs/<id>/ or any other --out there). */
function latestResults(): string {
  const found: { dir: string; mtime: number }[] = [];
  const look = (d: string, depth: number) => {
    if (!existsSync(d) || depth < 0) return;
    for (const e of readdirSync(d, { withFileTypes: true })) {
      // A reused --out keeps the run before in previous-run/: never the newest.
      if (!e.isDirectory() || e.name === PREVIOUS_RUN) continue;
      const p = join(d, e.name);
      if (e.name === "allure-results") found.push({ dir: p, mtime: statSync(p).mtimeMs });
      else look(p, depth - 1);
    }
  };
  look("reports", 2);
  const best = found.sort((a, b) => b.mtime - a.mtime)[0];
  if (!best)
    throw new SlicecheckError(
      "USAGE",
      "no allure-results under reports/; run `slicecheck run` first or give --results DIR",
    );
  return best.dir;
}

export async function reportCommand(o: ReportCliOptions, io: Out): Promise<number> {
  const results = o.results ?? latestResults();
  const ctx = readRunContext(dirname(resolve(results)));
  const out = o.out ?? join("reports", "allure-report");
  if (o.open && o.out && existsSync(o.out) && !statSync(o.out).isDirectory())
    throw new SlicecheckError("USAGE", `--out ${o.out} is a file; --open needs a report folder`);
  const t0 = Date.now();
  const { index, singleFile } = generateReport({
    results,
    out,
    historyDir: join(dirname(out), "allure-history"),
    singleFile: o.singleFile ?? false,
    name: `slicecheck ${ctx.runId}${ctx.label ? ` (${ctx.label})` : ""}`,
  });
  const html = join(out, "compliance.html");
  const signoff = summaryOfModel(signoffModel(ctx));
  writeFileSync(html, complianceHtml(ctx, relative(out, singleFile ?? index), out));
  let pdf: string | null = null;
  if (o.pdf) {
    pdf = join(out, "compliance.pdf");
    const { printPdf } = await import("../../report/browser.js");
    await printPdf(
      html,
      pdf,
      `slicecheck compliance · run ${ctx.runId} · ${signoff.headline} · ${ctx.startedAt.slice(0, 10)}`,
    );
  }
  // From the check records (checks.jsonl), as the run's own terminal line, JUnit and the
  // compliance page count them: a skipped check is skipped, never passed.
  const c = countOf(ctx.allChecks);
  io.out(
    `run ${ctx.runId}${ctx.label ? ` (${ctx.label})` : ""}: ${c.passed} passed, ${c.failed} failed, ${c.broken} broken, ${c.skipped} skipped on ${ctx.nodes.length} node(s)`,
  );
  io.out(
    `Allure report: ${displayPath(index)} (serve the folder: \`npx allure open ${displayPath(out)}\`)`,
  );
  if (singleFile)
    io.out(`Allure single-file report (opens from file://): ${displayPath(singleFile)}`);
  io.out(`compliance summary: ${displayPath(html)}${pdf ? `, ${displayPath(pdf)}` : ""}`);
  for (const l of signoffLines(signoff)) io.out(l);
  io.out(
    `JUnit: ${displayPath(join(dirname(results), "junit.xml"))}; generated in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
  const verdict = o.exitCode ? ctx.exitCode : 0;
  if (o.exitCode)
    io.out(
      `exit code ${verdict}: the run's verdict (${["passed", "a check failed", "a check could not be decided"][verdict] ?? "interrupted or refused"})`,
    );
  if (o.open) {
    io.out(`serving ${displayPath(out)} with allure open (Ctrl-C stops it)`);
    await openReport(out);
  }
  return verdict;
}
