// `run --drain`: before anything touches them, the run drains the Slurm nodes it tests (reason
// "slicecheck <run id>") and waits, up to a deadline, for the jobs on them to end; at teardown
// it resumes only the nodes it drained itself, and only while its own reason is still theirs
// (an admin who re-drained one meanwhile keeps it). `--report-to-slurm` leaves a node whose
// isolation, health or slurm checks failed drained, the failed check in its reason.

import type { CheckRecord } from "../verdicts/checks.js";
import { parseNodes, type SlurmNodeInfo } from "../verdicts/slurm.js";
import type { PreCheck } from "./mocha-run.js";
import type { NodeSession } from "./session.js";
import type { TaskList } from "./tasks.js";

export interface DrainOptions {
  runId: string;
  /** Seconds to wait for a node's jobs to end. */
  timeoutS: number;
  reportToSlurm: boolean;
  err(line: string): void;
  early(c: PreCheck): void;
  checks(): readonly CheckRecord[];
}

const REPORTED_SUITES = new Set(["isolation", "health", "slurm"]);
const busy = (state: string) => /ALLOCATED|MIXED|COMPLETING/.test(state);

async function show(s: NodeSession, name: string): Promise<SlurmNodeInfo | null> {
  const r = await s.exec({ argv: ["scontrol", "show", "node", "-o", name] }, { timeoutMs: 30_000 });
  if (r.exitCode !== 0) throw new Error(r.stderr.trim() || `scontrol exited ${r.exitCode}`);
  return parseNodes(r.stdout)[0] ?? null;
}

async function update(s: NodeSession, words: string[]): Promise<void> {
  const r = await s.exec({ argv: ["scontrol", "update", ...words] }, { timeoutMs: 30_000 });
  if (r.exitCode !== 0)
    throw new Error(`scontrol update ${words.join(" ")}: ${r.stderr.trim() || r.exitCode}`);
}

/** Drains, waits, and registers the resume; returns the Slurm names this run drained. */
export async function drainForRun(
  tasks: TaskList,
  sessions: readonly NodeSession[],
  o: DrainOptions,
): Promise<string[]> {
  const reason = `slicecheck ${o.runId}`;
  const ours: { s: NodeSession; name: string }[] = [];
  // Registered first, so that it runs last: after the layout is restored, with every check in.
  tasks.teardown({
    name: "resume the Slurm nodes this run drained",
    // Read when a second interrupt prints what is left: the nodes drained by then.
    get manual() {
      return ours.length
        ? `scontrol update nodename=${ours.map((x) => x.name).join(",")} state=resume`
        : null;
    },
    run: () => resume(ours, reason, o),
  });
  await Promise.all(
    sessions.map(async (s) => {
      const name = s.node.slurmNode;
      if (!name) return;
      const title = "Slurm node drained for the run";
      try {
        const before = await show(s, name);
        if (!before) throw new Error(`Slurm has no node ${name}`);
        if (/DRAIN|DOWN/.test(before.state)) {
          o.early({
            suite: "run",
            node: s.node.name,
            title,
            status: "passed",
            code: "OK",
            message: `${name} was already ${before.state}${before.reason ? ` (${before.reason})` : ""}: left as it is, not resumed at the end`,
          });
          return;
        }
        await update(s, [`nodename=${name}`, "state=drain", `reason=${reason}`]);
        ours.push({ s, name });
        const t0 = Date.now();
        let now = await show(s, name);
        while (now && busy(now.state) && Date.now() - t0 < o.timeoutS * 1000) {
          await new Promise((r) => setTimeout(r, 500));
          now = await show(s, name);
        }
        const waited = ((Date.now() - t0) / 1000).toFixed(1);
        if (now && busy(now.state)) {
          s.error ??= new (await import("../errors.js")).SlicecheckError(
            "INTERLOCK",
            `Slurm node ${name} still runs jobs after ${o.timeoutS} s of draining`,
          );
          o.early({
            suite: "run",
            node: s.node.name,
            title,
            status: "broken",
            code: "INTERLOCK",
            message: `${name} is ${now.state} after ${waited} s: its jobs did not end within --drain-timeout ${o.timeoutS}; nothing was touched`,
          });
          return;
        }
        o.early({
          suite: "run",
          node: s.node.name,
          title,
          status: "passed",
          code: "OK",
          message: `drained ${name} (was ${before.state}; reason "${reason}"), its jobs ended after ${waited} s`,
        });
      } catch (e) {
        o.early({
          suite: "run",
          node: s.node.name,
          title,
          status: "broken",
          code: "SLURM",
          message: `could not drain ${name}: ${(e as Error).message}`,
        });
      }
    }),
  );
  return ours.map((x) => x.name);
}

async function resume(
  ours: readonly { s: NodeSession; name: string }[],
  reason: string,
  o: DrainOptions,
): Promise<void> {
  for (const { s, name } of ours) {
    const now = await show(s, name).catch(() => null);
    if (!now || now.reason !== reason) {
      o.err(
        `${name}: not resumed: its drain reason is now "${now?.reason ?? "?"}", not this run's (someone else drained it meanwhile)`,
      );
      continue;
    }
    const failed = o.reportToSlurm
      ? o
          .checks()
          .filter(
            (c) => c.node === s.node.name && c.status === "failed" && REPORTED_SUITES.has(c.suite),
          )
      : [];
    if (failed.length > 0) {
      const first = failed[0] as CheckRecord;
      // Slurm keeps the reason on one line; it is what an admin reads in `sinfo -R`.
      const why =
        `${reason}: ${failed.length} check(s) failed: ${first.suite}: ${first.title}: ${first.code}`
          .replace(/\s+/g, " ")
          .slice(0, 240);
      await update(s, [`nodename=${name}`, "state=drain", `reason=${why}`]);
      o.err(`${name}: left drained for Slurm: ${why}`);
      continue;
    }
    await update(s, [`nodename=${name}`, "state=resume"]);
  }
}
