// The node side of the node lease, as shell text. A holder shell takes flock(1) on
// node.lock and keeps a lease in node.lease, one line `GENERATION EXPIRES STATE RUNTAG`
// (EXPIRES in the node's epoch seconds, STATE held, released or expired): every heartbeat
// byte the controller writes on its stdin renews it for LEASE seconds and is answered with a
// `RENEWED` line. A lease is held until it is released (the channel ends: the controller
// closed it, died, or its connection dropped), or until LEASE seconds pass without a
// heartbeat: then it is marked expired first (so that the run's own guarded commands refuse
// from then on), the run's processes are stopped (the fence), and only then is flock dropped.
// A release (RELEASE_BYTE, then the end of input) stops what the run left on the node too (TERM,
// a short grace, KILL) before the lease says released: the run's own teardown without a login
// of its own for it, and a node no other run can lock while the last of its processes die.
//
// A second controller gets flock only once the holder is gone; it still refuses a lease that
// says `held` and has not expired (its holder was killed, its controller may still be
// working), and takes over one that ran out: fencing the dead run's processes first. Every
// change the controller makes runs behind `leaseCheck`, in the same shell, on the node.
import { CONNECTION_BOUND } from "../transport/fork-count.js";
import { fenceRunScript, killRunScript } from "../transport/remote-scripts.js";
import { quote } from "../util/shell.js";

// Where the node keeps slicecheck's files (the journal's copy lives there too):
// $SLICECHECK_STATE_DIR as the command sees it on the node, else /var/tmp/slicecheck. Nodes that
// share one machine (the simulated cluster's) each set their own, so their locks stay apart.
// biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion, on the node
const LOCK_DIR = '"${SLICECHECK_STATE_DIR:-/var/tmp/slicecheck}"';
const LOCK_FILE = `${LOCK_DIR}/node.lock`;
export const INFO_FILE = `${LOCK_DIR}/node.lock.json`;
export const LEASE_FILE = `${LOCK_DIR}/node.lease`;
/** What the controller writes to release its lease (any other byte is a heartbeat). */
export const RELEASE_BYTE = "r";
/** BSD sysexits EX_TEMPFAIL: someone else holds the lease. */
export const LOCKED_EXIT = 75;
/** What a guarded command prints on stderr when the lease is not this run's any more. */
export const LEASE_LOST_MARKER = "@@slicecheck:lease-lost";

/** Reads the lease line into g e s t, digits only where numbers are expected. */
const READ_LEASE = `g=0; e=0; s=none; t=; { read g e s t < ${LEASE_FILE}; } 2>/dev/null; case "$g" in ''|*[!0-9]*) g=0;; esac; case "$e" in ''|*[!0-9]*) e=0;; esac;`;

/** The node's epoch seconds into the variable `v`: bash's printf %()T where the shell is bash,
 * else date (a fork and an exec: at every renewal of an sh holder, at every turn of leaseAwait's
 * wait, and before every guarded command, which run under `sh -c`). */
const clock = (v: string) =>
  `{ [ -n "\${BASH_VERSION:-}" ] && printf -v ${v} '%(%s)T' -1 2>/dev/null && [ -n "$${v}" ]; } || ${v}=$(date +%s);`;

/**
 * `now` puts the node's epoch seconds into $N (clock), and `rb` reads one byte of the
 * controller's into $c with the lease as its timeout ($rc 124 when none came, as `timeout`
 * says). bash does both with its builtins (printf's %()T and read -t); sh pays `date`, and
 * `timeout` with `dd`: three processes every heartbeat, for as long as a run holds the node.
 */
function builtins(leaseS: number): string {
  return `now() { ${clock("N")} }; if [ -n "\${BASH_VERSION:-}" ] && printf -v N '%(%s)T' -1 2>/dev/null && [ -n "$N" ]; then rb() { c=; IFS= read -r -n 1 -t ${leaseS} c; rc=$?; [ "$rc" -gt 128 ] && rc=124; [ "$rc" -eq 0 ] || c=; }; else rb() { c=$(timeout ${leaseS} dd bs=1 count=1 2>/dev/null); rc=$?; }; fi;`;
}

/** Before a refusal is described: a holder that has just taken flock writes its info file and
 * its lease a few commands later, so a refusal read in between would name no run (or the last
 * holder's). Waits up to 3 s for a lease held and unexpired, which the holder writes last; a
 * holder that never gets there (stopped between the two) is described as found. */
const AWAIT_HOLDER = `i=0; while [ "$i" -lt 30 ]; do ${READ_LEASE} now; [ "$s" = held ] && [ "$e" -gt "$N" ] && break; sleep 0.1 2>/dev/null || sleep 1; i=$((i + 1)); done;`;

export function lockScript(o: { info: string; leaseS: number; runTag: string }): string {
  const L = Math.ceil(o.leaseS);
  // Written under a temporary name and renamed: a reader never sees half a lease.
  const write = `w() { printf '%s %s %s %s\\n' "$gen" "$1" "$2" ${quote(o.runTag)} > ${LEASE_FILE}.tmp && mv -f ${LEASE_FILE}.tmp ${LEASE_FILE}; };`;
  return [
    builtins(L),
    `{ [ -d ${LOCK_DIR} ] || mkdir -p ${LOCK_DIR}; } && exec 9>>${LOCK_FILE} || { echo "LOCK_ERROR cannot open "${LOCK_FILE}; exit 70; };`,
    "command -v flock >/dev/null 2>&1 || { echo 'LOCK_ERROR flock (util-linux) is not installed'; exit 70; };",
    `if ! flock -n 9; then ${AWAIT_HOLDER} now; echo "LOCK_HELD $N"; cat ${LEASE_FILE} 2>/dev/null || echo; cat ${INFO_FILE} 2>/dev/null; echo; exit ${LOCKED_EXIT}; fi;`,
    // What the release's scan may pass over: the processes from before this connection.
    CONNECTION_BOUND,
    READ_LEASE,
    // A lease still held by nobody alive: its holder was killed, its controller may still be
    // changing the node over another channel until the lease runs out.
    `now; if [ "$s" = held ] && [ "$e" -gt "$N" ]; then echo "LEASE_UNEXPIRED $N"; cat ${LEASE_FILE}; cat ${INFO_FILE} 2>/dev/null; echo; exit ${LOCKED_EXIT}; fi;`,
    // Ran out with nobody to fence it: the dead run's processes are stopped before the takeover.
    `if [ "$s" = held ] && [ -n "$t" ]; then { ${fenceRunScript("t")}; } >/dev/null 2>&1; fi;`,
    // An info file that outlived its holder: the holder was killed or its lease expired.
    // The info file is one line of JSON (written below): a builtin read, where `$(cat)` was a
    // fork and an exec on the lock's own path, as was mkdir for a folder already there.
    `prev=; { read -r prev < ${INFO_FILE}; } 2>/dev/null; ps=$s; gen=$((g + 1)); ${write}`,
    `printf '%s\\n' ${quote(o.info)} > ${INFO_FILE}.tmp && mv -f ${INFO_FILE}.tmp ${INFO_FILE};`,
    `now; x=$((N + ${L})); w "$x" held || { echo "LOCK_ERROR cannot write "${LEASE_FILE}; exit 70; };`,
    `echo "LOCK_OK $gen $x $ps $prev";`,
    // One byte, one renewal, one answer. `timeout` exits 124 when no byte came for a lease.
    // The byte RELEASE_BYTE is the controller's release: the run's leftovers are stopped first.
    // A bare end of input (a controller killed, a connection dropped) releases at once, as
    // before: the commands' own watchdogs stop them, and the node is free for a restore.
    `rel=; while :; do rb; [ -n "$c" ] || break; [ "$c" = ${RELEASE_BYTE} ] && { rel=1; break; }; now; x=$((N + ${L})); w "$x" held; echo "RENEWED $gen $x"; done;`,
    `now; if [ "$rc" -eq 124 ]; then w "$N" expired; t=${quote(o.runTag)}; { ${fenceRunScript("t")}; } >/dev/null 2>&1; echo LEASE_EXPIRED; else [ -z "$rel" ] || { ${killRunScript(o.runTag, { since: '"$KS"', forks: '"$KF"' })}; } >/dev/null 2>&1; w "$N" released; rm -f ${INFO_FILE}; echo RELEASED; fi`,
  ].join(" ");
}

/**
 * `zz`, leaseAwait's 20 ms between turns: under bash a `read -t` on a pipe it holds both ends of
 * (one fork, for the process substitution that makes it), under sh a `sleep` process every turn.
 * Three reads beside the lock on each node turned for as long as the lock took to answer (100 to
 * 200 ms for 4 simulated nodes on 2 cores), each turn a fork and an exec taken from the lock's
 * own login. NAP_END closes the pipe before the read's own command is exec'd.
 */
const NAP = `zf=; if [ -n "\${BASH_VERSION:-}" ] && eval 'exec {zf}<> <(:)' 2>/dev/null && [ -n "$zf" ]; then zz() { read -r -t 0.02 -u "$zf" _; }; else zz() { sleep 0.02 2>/dev/null || sleep 1; }; fi;`;
const NAP_END = `[ -z "$zf" ] || eval 'exec {zf}<&-';`;

/** How long a read started beside the lock waits on the node for the lease (leaseAwait). */
export const LEASE_AWAIT_S = 20;

/**
 * Shell text that holds what follows until the lease is this run's (held, unexpired, its tag):
 * for a read started beside the lease's own command, so that its login is not paid after the
 * lock answered. Polled every 20 ms (NAP). After LEASE_AWAIT_S without it, or at once where this
 * login cannot read the lease (a state folder made by sudo under a strict umask, or under a
 * folder this login may not enter; a lease that is no file), prints the marker with what it
 * found and exits LOCKED_EXIT: what follows never ran, and the controller reads once the lock
 * has answered (NodeSession.awaitingLease).
 */
export function leaseAwait(runTag: string): string {
  const tries = LEASE_AWAIT_S * 50;
  // The folder, or the nearest folder above it that this login sees, shuts it out: test(1)
  // cannot tell a folder it may not see from one not made yet, which the lock may still make.
  const shut = `ld=${LOCK_DIR}; while [ -n "$ld" ] && ! [ -d "$ld" ]; do case $ld in */*) ld=\${ld%/*} ;; *) ld= ;; esac; done; [ -n "$ld" ] && ! [ -x "$ld" ]`;
  const unreadable = `{ ${shut}; } || { [ -e ${LEASE_FILE} ] && ! { [ -f ${LEASE_FILE} ] && [ -r ${LEASE_FILE} ]; }; }`;
  // The clock is read once the lease is held under the run's tag, not at every turn: under sh
  // (a node without bash) it is a date process each time.
  return `${NAP} i=0; while :; do ${READ_LEASE} [ "$s" = held ] && [ "$t" = ${quote(runTag)} ] && { ${clock("n")} [ "$e" -gt "$n" ]; } && break; if ${unreadable}; then ${clock("n")} echo "${LEASE_LOST_MARKER} $n 0 0 unreadable" >&2; exit ${LOCKED_EXIT}; fi; i=$((i + 1)); if [ "$i" -ge ${tries} ]; then ${clock("n")} echo "${LEASE_LOST_MARKER} $n $g $e $s $t" >&2; exit ${LOCKED_EXIT}; fi; zz; done; ${NAP_END}`;
}

/**
 * Shell text that lets what follows run only while the lease is this run's generation, held,
 * and not expired by the node's clock; else it prints the marker with what it found and exits
 * LOCKED_EXIT. Run inside the command's own tagged process, so the fence covers what it starts.
 */
export function leaseCheck(generation: number, runTag: string): string {
  return `${READ_LEASE} ${clock("n")} if [ "$g" != ${generation} ] || [ "$s" != held ] || [ "$e" -le "$n" ] || [ "$t" != ${quote(runTag)} ]; then echo "${LEASE_LOST_MARKER} $n $g $e $s $t" >&2; exit ${LOCKED_EXIT}; fi;`;
}

/** What a guarded command found instead of this run's lease, in words; null: not the marker. */
export function leaseFound(stderr: string): string | null {
  const line = stderr.split("\n").find((l) => l.startsWith(LEASE_LOST_MARKER));
  if (!line) return null;
  const [now, gen, exp, state, ...tag] = line.slice(LEASE_LOST_MARKER.length).trim().split(" ");
  const owner = tag.join(" ") || "nobody";
  if (state === "held" && Number(exp) > Number(now))
    return `the node's lease is now generation ${gen}, held by ${owner}`;
  return `the node's lease is generation ${gen}, ${state === "held" ? "expired" : state} ${Math.max(0, Number(now) - Number(exp))} s ago (last holder ${owner})`;
}
