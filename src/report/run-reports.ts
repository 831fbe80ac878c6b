// What `run` writes at its end besides its tables: run.json (the context every report reads),
// junit.xml, results-summary.json, and (unless --no-allure) the Allure results.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { IsolationSummary } from "../chaos/isolation.js";
import type { NodeRunResult } from "../workloads/node-run.js";
import type { RunRow } from "../workloads/summary.js";
import {
  type ContextNode,
  type ContextRow,
  type ExtraCheck,
  RUN_CONTEXT_FILE,
  type RunContext,
} from "./context.js";
import { jsonSummary, junitXml } from "./junit.js";

export async function writeRunReports(
  ctx: RunContext,
  outDir: string,
  o: { allure: boolean },
): Promise<{ allureResults: string | null }> {
  writeFileSync(join(outDir, RUN_CONTEXT_FILE), `${JSON.stringify(ctx, null, 2)}\n`);
  writeFileSync(join(outDir, "junit.xml"), junitXml(ctx));
  writeFileSync(
    join(outDir, "results-summary.json"),
    `${JSON.stringify(jsonSummary(ctx), null, 2)}\n`,
  );
  if (!o.allure) return { allureResults: null };
  const dir = join(outDir, "allure-results");
  const { writeAllureResults } = await import("./suites.js");
  await writeAllureResults(ctx, dir);
  return { allureResults: dir };
}

export interface RunFacts {
  runId: string;
  label: string | null;
  startedMs: number;
  exitCode: number;
  layout: { file: string; config: string } | null;
  suites: string[];
  results: NodeRunResult[];
  rows: RunRow[];
  problems: { node: string; suite: string | null; message: string }[];
  isolation: IsolationSummary | null;
  /** The layout, health and regression suites' checks. */
  checks?: ExtraCheck[];
}

export function buildRunContext(f: RunFacts): RunContext {
  const nodes: ContextNode[] = f.results
    .map((r) => {
      const gpus = new Map<number, { index: number; name: string; uuid: string }>();
      for (const i of r.inventory?.instances ?? [])
        gpus.set(i.gpu, { index: i.gpu, name: i.gpuName, uuid: i.gpuUuid });
      return {
        node: r.node,
        driver: r.inventory?.driver ?? null,
        cuda: r.inventory?.cuda ?? null,
        gpus: [...gpus.values()].sort((a, b) => a.index - b.index),
        error: r.error,
      };
    })
    .sort((a, b) => a.node.localeCompare(b.node));
  for (const v of [...(f.isolation?.rows ?? []), ...(f.checks ?? [])])
    if (!nodes.some((n) => n.node === v.node))
      nodes.push({ node: v.node, driver: null, cuda: null, gpus: [], error: null });
  const instances = f.results.flatMap((r) => r.inventory?.instances ?? []);
  const rows: ContextRow[] = f.rows.map((r) => {
    const inst = instances.find((i) => i.node === r.node && i.uuid === r.instanceUuid);
    return { ...r, gpu: inst?.gpu ?? null, gpuName: inst?.gpuName ?? null };
  });
  return {
    runId: f.runId,
    label: f.label,
    startedAt: new Date(f.startedMs).toISOString(),
    finishedAt: new Date().toISOString(),
    durationS: (Date.now() - f.startedMs) / 1000,
    exitCode: f.exitCode,
    layout: f.layout,
    suites: f.suites,
    nodes,
    rows,
    isolation: f.isolation?.rows ?? [],
    problems: [
      ...f.problems,
      ...(f.isolation?.problems ?? []).map((p) => ({ ...p, suite: "isolation" })),
    ],
    checks: f.checks ?? [],
  };
}

/** The one call at the end of `run`: every report file, and a line saying where they are. */
export async function reportRun(
  f: RunFacts,
  outDir: string,
  o: { allure: boolean },
  io: { err(line: string): void },
): Promise<void> {
  try {
    const ctx = buildRunContext(f);
    const { allureResults } = await writeRunReports(ctx, outDir, o);
    io.err(
      `reports: ${join(outDir, "junit.xml")}, ${join(outDir, "results-summary.json")}${allureResults ? `, Allure results in ${allureResults} (\`slicecheck report --results ${allureResults}\`)` : ""}`,
    );
  } catch (e) {
    // A report that cannot be written never changes the run's verdict; say so and go on.
    io.err(`slicecheck: could not write the run's reports: ${(e as Error).stack ?? e}`);
  }
}
