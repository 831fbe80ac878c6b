// `run --drain`: before anything touches them, the run drains the Slurm nodes it tests (reason
// "slicecheck <run id>") and waits, up to a deadline, for the jobs on them to end; at teardown
// it resumes only the nodes it drained itself, and only while its own reason is still theirs
// (an admin who re-drained one meanwhile keeps it). `--report-to-slurm` leaves a node drained
// whose check failed in a suite that declared it `unfitOnFailure`, the failed check in its reason.
//
// A drained node takes no job at all, the run's own probe jobs (the slurm suite) included. So
// the run opens a node it drained to its own jobs only (SlurmJobWindows): a maintenance
// reservation of its own on the node (Flags=MAINT, for this user), then resume: Slurm starts
// nobody else's job on a reserved node. Closing drains it again with the run's reason, then
// deletes the reservation; the teardown closes whatever is still open before resuming.

import { SlicecheckError } from "../errors.js";
import type { Status } from "../util/status.js";
import { HARNESS_SUITE } from "../util/suite-registry.js";
import type { CheckRecord } from "../verdicts/checks.js";
import { parseNodes, type SlurmNodeInfo } from "../verdicts/slurm.js";
import type { SlurmJobsWindow } from "./context.js";
import type { PreCheck } from "./mocha-run.js";
import type { NodeSession } from "./session.js";
import { slurmCommand } from "./slurm-sh.js";
import type { TaskList } from "./tasks.js";

export interface DrainOptions {
  runId: string;
  /** Where the run opens its drained nodes to its own jobs (created by the run). */
  windows: SlurmJobWindows;
  /** Seconds to wait for a node's jobs to end. */
  timeoutS: number;
  reportToSlurm: boolean;
  /** A rolling maintenance window's rule: a node is resumed only when every check of it
   * passed; one failed or broken stays drained, the first such check in its reason. */
  resumeOnlyOnPass?: boolean;
  /** A rollout's id: drain reasons say `slicecheck <owner> <run id>`, and a node an earlier
   * batch of the same rollout left drained is taken back (re-verified, resumed on pass). */
  owner?: string;
  /** The suites whose failed check leaves the node drained (they declared `unfitOnFailure`). */
  unfitSuites: ReadonlySet<string>;
  err(line: string): void;
  early(c: PreCheck): void;
  checks(): readonly CheckRecord[];
}

const busy = (state: string) => /ALLOCATED|MIXED|COMPLETING/.test(state);

async function show(s: NodeSession, name: string): Promise<SlurmNodeInfo | null> {
  return parseNodes(await exec(s, ["scontrol", "show", "node", "-o", name]))[0] ?? null;
}

async function update(s: NodeSession, words: string[]): Promise<void> {
  await exec(s, ["scontrol", "update", ...words]);
}

/** Drains one node and waits for its jobs; each outcome is the node's harness check. */
async function drainNode(
  s: NodeSession,
  reason: string,
  ours: { s: NodeSession; name: string }[],
  o: DrainOptions,
): Promise<void> {
  const name = s.node.slurmNode;
  if (!name) return;
  // Drained or not: the harness's own check never blames the node (never failed).
  const check = (status: Extract<Status, "passed" | "broken">, code: string, message: string) =>
    o.early({
      suite: HARNESS_SUITE,
      node: s.node.name,
      title: "Slurm node drained for the run",
      status,
      code,
      message,
    });
  try {
    const before = await show(s, name);
    if (!before) throw new Error(`Slurm has no node ${name}`);
    const ownersOld =
      !!o.owner &&
      /DRAIN/.test(before.state) &&
      !/DOWN/.test(before.state) &&
      (before.reason ?? "").startsWith(`slicecheck ${o.owner} `);
    if (/DRAIN|DOWN/.test(before.state) && !ownersOld) {
      check(
        "passed",
        "OK",
        `${name} was already ${before.state}${before.reason ? ` (${before.reason})` : ""}: left as it is, not resumed at the end`,
      );
      return;
    }
    await update(s, [`nodename=${name}`, "state=drain", `reason=${reason}`]);
    ours.push({ s, name });
    o.windows.drained(s, name);
    const t0 = Date.now();
    let now = await show(s, name);
    while (now && busy(now.state) && Date.now() - t0 < o.timeoutS * 1000) {
      await new Promise((r) => setTimeout(r, 500));
      now = await show(s, name);
    }
    const waited = ((Date.now() - t0) / 1000).toFixed(1);
    if (now && busy(now.state)) {
      s.error ??= new SlicecheckError(
        "INTERLOCK",
        `Slurm node ${name} still runs jobs after ${o.timeoutS} s of draining`,
      );
      check(
        "broken",
        "INTERLOCK",
        `${name} is ${now.state} after ${waited} s: its jobs did not end within --drain-timeout ${o.timeoutS}; nothing was touched`,
      );
      return;
    }
    check(
      "passed",
      "OK",
      ownersOld
        ? `took back ${name}, left drained by this rollout ("${before.reason}"); reason now "${reason}"`
        : `drained ${name} (was ${before.state}; reason "${reason}"), its jobs ended after ${waited} s`,
    );
  } catch (e) {
    check("broken", "SLURM", `could not drain ${name}: ${(e as Error).message}`);
  }
}

/** Drains, waits, and registers the resume; returns the Slurm names this run drained. */
export async function drainForRun(
  tasks: TaskList,
  sessions: readonly NodeSession[],
  o: DrainOptions,
): Promise<string[]> {
  const reason = o.owner ? `slicecheck ${o.owner} ${o.runId}` : `slicecheck ${o.runId}`;
  const ours: { s: NodeSession; name: string }[] = [];
  // Registered first, so that it runs last: after the layout is restored, with every check in.
  tasks.teardown({
    name: "resume the Slurm nodes this run drained",
    // Read when a second interrupt prints what is left: the nodes drained by then.
    get manual() {
      const resume = ours.length
        ? `scontrol update nodename=${ours.map((x) => x.name).join(",")} state=resume`
        : null;
      return [o.windows.manual, resume].filter(Boolean).join("; ") || null;
    },
    run: async () => {
      await o.windows.closeAll((line) => o.err(line));
      await resume(ours, reason, o);
    },
  });
  await Promise.all(sessions.map((s) => drainNode(s, reason, ours, o)));
  return ours.map((x) => x.name);
}

/** The checks that keep a node drained: with --report-to-slurm, its failed checks of the suites
 * that declared unfitOnFailure; in a rollout, every check of it that did not pass. */
function unfitChecks(node: string, o: DrainOptions): CheckRecord[] {
  const mine = o.checks().filter((c) => c.node === node);
  if (o.resumeOnlyOnPass) return mine.filter((c) => c.status === "failed" || c.status === "broken");
  if (!o.reportToSlurm) return [];
  return mine.filter((c) => c.status === "failed" && o.unfitSuites.has(c.suite));
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
    const failed = unfitChecks(s.node.name, o);
    if (failed.length > 0) {
      const first = failed[0] as CheckRecord;
      // Slurm keeps the reason on one line; it is what an admin reads in `sinfo -R`.
      const why =
        `${reason}: ${failed.length} check(s) ${first.status}: ${first.suite}: ${first.title}: ${first.code}`
          .replace(/\s+/g, " ")
          .slice(0, 240);
      await update(s, [`nodename=${name}`, "state=drain", `reason=${why}`]);
      o.err(`${name}: left drained for Slurm: ${why}`);
      continue;
    }
    await update(s, [`nodename=${name}`, "state=resume"]);
  }
}

interface Opened {
  s: NodeSession;
  name: string;
  reservation: string;
}

/** The nodes this run drained, and those it has opened to its own jobs for now. */
export class SlurmJobWindows {
  private readonly ours = new Map<string, { s: NodeSession; name: string }>();
  private readonly opened = new Map<string, Opened>();

  constructor(
    private readonly runId: string,
    /** `--reservation R`: where the run's jobs go on nodes it did not drain itself. */
    private readonly userReservation: string | null,
  ) {}

  drained(s: NodeSession, name: string): void {
    this.ours.set(s.node.name, { s, name });
  }

  /** What a second interrupt prints for the nodes still open. */
  get manual(): string | null {
    const open = [...this.opened.values()];
    return open.length
      ? open
          .map(
            (x) =>
              `scontrol update nodename=${x.name} state=drain reason="slicecheck ${this.runId}"; scontrol delete reservation=${x.reservation}`,
          )
          .join("; ")
      : null;
  }

  for(s: NodeSession): SlurmJobsWindow {
    return { open: () => this.open(s), close: () => this.close(s.node.name) };
  }

  private async open(s: NodeSession): Promise<{ reservation: string | null; opened: boolean }> {
    const mine = this.ours.get(s.node.name);
    if (!mine) return { reservation: this.userReservation, opened: false };
    const already = this.opened.get(s.node.name);
    if (already) return { reservation: already.reservation, opened: true };
    const reservation = `slicecheck-${this.runId}-${mine.name}`;
    // MAINT: a maintenance window (no accounting as idle time); IGNORE_JOBS: the node is
    // drained and empty, but a job still completing must not make the creation fail. No
    // Duration: if the controller dies here the node stays reserved, taking nobody's jobs,
    // until someone deletes the reservation (`manual` says how), never silently reopened.
    const user = (await exec(s, ["id", "-un"])).trim();
    await exec(s, [
      "scontrol",
      "create",
      "reservation",
      `ReservationName=${reservation}`,
      `Nodes=${mine.name}`,
      "StartTime=now",
      "Duration=UNLIMITED",
      `Users=${user}`,
      "Flags=MAINT,IGNORE_JOBS",
    ]);
    this.opened.set(s.node.name, { s, name: mine.name, reservation });
    await update(s, [`nodename=${mine.name}`, "state=resume"]);
    return { reservation, opened: true };
  }

  private async close(node: string): Promise<void> {
    const x = this.opened.get(node);
    if (!x) return;
    // Drained first, then the reservation goes: at no moment is the node open to others.
    await update(x.s, [`nodename=${x.name}`, "state=drain", `reason=slicecheck ${this.runId}`]);
    this.opened.delete(node);
    await exec(x.s, ["scontrol", "delete", `reservation=${x.reservation}`]);
  }

  async closeAll(err: (line: string) => void): Promise<void> {
    for (const node of [...this.opened.keys()])
      await this.close(node).catch((e) =>
        err(`${node}: could not close the run's Slurm reservation: ${(e as Error).message}`),
      );
  }
}

/** A command on the node; a Slurm command is asked again while slurmctld does not answer
 * (slurm-sh.ts), as the rest of the run's Slurm commands are. */
function exec(s: NodeSession, argv: string[]): Promise<string> {
  return slurmCommand((a) => s.exec({ argv: a }, { timeoutMs: 30_000 }), s.node.name, argv);
}
