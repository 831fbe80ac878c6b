// The kill of a command whose processes all stay in its process group (ExecOptions.staysInGroup):
// TERM to the group, then KILL to what is left of it, without the scans of every process's
// environment that a kill by tag makes (killSequence: two to five greps of /proc/*/environ and
// at least one 0.1-s wait before it can say that nothing is left). The utilization sampler's
// loop (sleep, nvidia-smi, dcgmi) is stopped so at the end of every stress phase: 0.3 s of the
// phase's end on one simulated node, spent on the scans and waits of a kill by tag.
//
// Only for commands that start nothing outside their group (no setsid, no daemon): a process
// that left it is not found here. The run's end still finds it: the lease's release stops
// everything that carries the run's tag (killRunScript).

/** Whether `pgid` is a process group a command's kill may signal: never 0 (the killer's own
 * group) nor 1 (`kill -1` is every process the user may signal). */
export function isProcessGroup(pgid: number | null): pgid is number {
  return pgid !== null && Number.isInteger(pgid) && pgid > 1;
}

/** Polls of the group's leader after TERM (every 10 ms: 2 s, the grace a kill by tag gives). */
const GRACE_POLLS = 200;

/**
 * The kill script for the group `pgid`, with a kill by tag's output (`alive=`, `killed=`).
 * `kill -SIG -PGID`, never `kill -SIG -- -PGID`: dash, the `sh` of Debian and Ubuntu, takes no
 * `--` there ("Illegal number: -") and signals nothing. The grace waits for the group's leader
 * (pid = pgid: the command's shell, reaped at once by whoever waits for the command), not for
 * the whole group: members orphaned by the TERM are reaped by the node's init, which may take
 * a second or two (this machine's PID 1 does), and `kill -0` answers for a zombie as for a live
 * process. What outlives the leader gets the KILL.
 */
export function killGroupScript(pgid: number): string {
  if (!isProcessGroup(pgid)) throw new Error(`${pgid} is not a process group a command can have`);
  return [
    `a=0; kill -0 ${pgid} 2>/dev/null && a=1; echo "alive=$a"; c=0;`,
    `if [ "$a" -gt 0 ]; then kill -TERM -${pgid} 2>/dev/null && c=1; i=0;`,
    `while [ "$i" -lt ${GRACE_POLLS} ] && kill -0 ${pgid} 2>/dev/null; do sleep 0.01; i=$((i+1)); done;`,
    `fi; kill -KILL -${pgid} 2>/dev/null; echo "killed=$c"`,
  ].join(" ");
}
