// A recorded workload that perl's supervisor starts itself (supervisor-perl.ts, its `r`
// request): the same process as wrapCommand's line makes of it, without the three processes
// in between. That line is `sh -c` (the wrapper), which execs `timeout` (the node's deadline),
// which forks the recorder's bash (its start, end and exit status, RECORDER), which forks the
// command: about 21 ms of CPU a workload on 2 cores where the command's own fork is 6
// (`perf`, 28 workloads started at once). perl keeps what they give, by the same rules:
// - the pgid marker first on stderr, the command leading its own session;
// - the tags and the environment, in wrapCommand's order, stdin /dev/null; SLICECHECK_JOB is
//   the supervisor's own, which its login shell expanded from the same SLURM_JOB_ID (JOB_TAG);
// - the deadline as `timeout -k GRACE_S` keeps it: TERM (then CONT) to the command's group at
//   DEADLINE s, KILL GRACE_S later if it still runs; exit 124, or 137 after the KILL;
// - the end record (END_MARKER) as the recorder prints it: the exit status (128 + a signal),
//   start and end on the node's clock to the microsecond (Time::HiRes, which perl offers only
//   where it has it: its `ready` frame says so), the CPU stall between from PSI; after what the
//   command had written on stderr before it ended; none after a KILL, which the recorder
//   would not have outlived either.
// Only what needs nothing more: a command under sudo, with data for its stdin, or at a start
// gate keeps wrapCommand's line.
import { envEntries, GRACE_S, type WrapOptions } from "./remote-scripts.js";
import type { Command } from "./types.js";

/** The `r` request's text: NUL between fields (no argument or variable can hold one). */
export function directStart(cmd: Command, o: WrapOptions): string | null {
  if (!o.record || o.gate || o.sudo || o.stdin !== undefined || !o.noWatcher) return null;
  const tags = [`SLICECHECK_RUN=${o.runTag}`, `SLICECHECK_CMD=${o.cmdTag}`, ...envEntries(o.env)];
  const argv = "argv" in cmd ? cmd.argv : ["sh", "-c", cmd.shell];
  const deadline = Math.max(1, Math.ceil(o.deadlineS));
  const fields = [String(deadline), String(GRACE_S), String(tags.length), ...tags, ...argv];
  return argv.length > 0 && fields.every((f) => !f.includes("\0")) ? fields.join("\0") : null;
}
