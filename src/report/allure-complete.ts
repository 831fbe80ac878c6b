// The Allure results of a run made to match its check records one to one. allure-mocha writes
// a result for each test that ran; a check the harness decided itself (an unreachable node, the
// tests below a failed hook, reports that could not be written, a node whose Slurm job left
// nothing) never ran as a test, so it gets its result here; and where a written result's status
// differs from its record's (the record is what the terminal, JUnit and the compliance page
// count), the record's wins. Allure then counts exactly what every other report counts.
import { createHash, randomUUID } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type CheckRecord, checkKey } from "../verdicts/checks.js";

interface ResultFile {
  status?: string;
  statusDetails?: { message?: string; trace?: string };
  parameters?: { name: string; value: string }[];
}

const idOf = (r: ResultFile) => r.parameters?.find((p) => p.name === "check")?.value;

/** The Allure result of a check no test wrote: its title, status, message, steps and labels. */
/** A check's step as an Allure step result, with the step's own status. */
export function allureStepOf(s: CheckRecord["steps"][number]) {
  return {
    name: s.name,
    status: s.status,
    stage: "finished" as const,
    start: s.startMs,
    stop: s.stopMs,
    steps: [],
    attachments: [],
    parameters: [],
    statusDetails: {},
  };
}

export function allureResultOf(c: CheckRecord): Record<string, unknown> {
  const inst = c.instance ? `${c.instance.profile}@${c.instance.placement ?? "-"}` : null;
  const where = [c.node, c.gpu === null ? null : `GPU ${c.gpu}`, inst];
  return {
    uuid: randomUUID(),
    historyId: createHash("md5").update(checkKey(c)).digest("hex"),
    name: c.title,
    fullName: `${c.suite}: ${c.fullTitle}`,
    status: c.status,
    statusDetails: c.status === "passed" ? {} : { message: `[${c.code}] ${c.message}` },
    stage: "finished",
    start: c.startMs,
    stop: c.stopMs,
    labels: [
      { name: "parentSuite", value: c.node ?? "run" },
      { name: "suite", value: c.gpu === null ? c.suite : `GPU ${c.gpu}` },
      { name: "subSuite", value: c.instance?.profile ?? c.suite },
      { name: "host", value: c.node ?? "run" },
      { name: "feature", value: c.suite },
    ],
    parameters: [
      ...(c.node ? [{ name: "node", value: c.node }] : []),
      { name: "check", value: c.id, excluded: true, mode: "hidden" },
    ],
    description: where.filter(Boolean).join(" "),
    steps: c.steps.map(allureStepOf),
    attachments: [],
  };
}

/** Adds the missing results and aligns the statuses; returns how many results it wrote. */
export function completeAllureResults(dir: string, checks: readonly CheckRecord[]): number {
  const byId = new Map(checks.map((c) => [c.id, c]));
  const seen = new Set<string>();
  let n = 0;
  for (const f of readdirSync(dir).filter((x) => x.endsWith("-result.json"))) {
    const file = join(dir, f);
    const r = JSON.parse(readFileSync(file, "utf8")) as ResultFile;
    const id = idOf(r);
    const c = id ? byId.get(id) : undefined;
    if (!c || !id) continue;
    seen.add(id);
    if (r.status === c.status) continue;
    r.status = c.status;
    r.statusDetails =
      c.status === "passed" ? {} : { ...r.statusDetails, message: `[${c.code}] ${c.message}` };
    writeFileSync(file, JSON.stringify(r));
    n++;
  }
  for (const c of checks) {
    if (seen.has(c.id)) continue;
    const r = allureResultOf(c);
    writeFileSync(join(dir, `${r.uuid}-result.json`), JSON.stringify(r));
    n++;
  }
  return n;
}
