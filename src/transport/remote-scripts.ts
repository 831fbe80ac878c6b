// The shell text that gives every remote command its lifecycle: its own process group, a hard
// deadline on the node, run and command tags in its environment, and the scripts that kill by
// those tags. Closing an SSH channel does not kill the remote process and sshd ignores signal
// requests for root logins (ecosystem.md §1), so killing is done by a second command.
import { quote, quoteArgv } from "../util/shell.js";
import { parseEndRecord } from "./end-record.js";
import { FORK_MARGIN, STAT_FORKS, WATCHDOG_FORKS } from "./fork-count.js";
import { isProcessGroup } from "./group-kill.js";
import type { Command, EndRecord, StartGate } from "./types.js";

export const PGID_MARKER = "@@slicecheck:pgid=";
export const GRACE_S = 5;

export interface WrapOptions {
  runTag: string;
  cmdTag: string;
  deadlineS: number;
  sudo: boolean;
  env?: Record<string, string>;
  /** Data for the command's stdin (the channel's stdin carries heartbeats). */
  stdin?: string;
  /** The node records the command's exit status and its start and end on its own clock, as
   * the last line of stderr (END_MARKER): what a late exit is judged by. */
  record?: boolean;
  /** With `record`: start only once `count` commands wait at the same gate (or `waitS` passed),
   * so that processes meant to share a device start together on the node, however skewed their
   * launches over SSH were. The recorded start is the gate's opening. */
  gate?: StartGate;
  /** Leave out the per-command stdin watcher: the node's supervisor (supervisor-script.ts)
   * watches the heartbeats of all the commands it started, and their stdin is not a channel. */
  noWatcher?: boolean;
}

export const END_MARKER = "@@slicecheck:end ";
/** The gated recorder's first stderr line, once its gate let it through (after its start was
 * taken): the controller counts a gated command's deadline from it, so that the wait at the gate
 * is not part of it (issue 25: deadlines from each workload's own start). */
export const GATE_MARKER = "@@slicecheck:gate-open";

/**
 * The node's CPU stall time so far, in µs, into $w (empty where the kernel has no PSI): the
 * `total` of /proc/pressure/cpu's `some` line, the time at least one runnable task waited for a
 * CPU. The recorder notes it at the command's start and end, so a command killed at its deadline
 * on a machine too loaded to run it says so (completion.ts starvedAtDeadline) instead of reading
 * as a hung workload. A builtin read: no process is started for it.
 */
const PSI_READ = `q() { w=; read -r _ _ _ _ w 2>/dev/null </proc/pressure/cpu; w=\${w#total=}; case "$w" in ''|*[!0-9]*) w=;; esac; };`;

/**
 * The node's clock, into $v, as seconds with a fraction: bash's own EPOCHREALTIME (5.0 and
 * later; its radix follows the locale, so a comma is turned back into a point) or `date`, a
 * process, where the shell has none. The recorder takes it twice per command.
 */
const CLOCK = `tm() { if [ -n "\${EPOCHREALTIME:-}" ]; then v=$EPOCHREALTIME; case $v in *,*) v=\${v%,*}.\${v#*,} ;; esac; else v=$(date +%s.%N); fi; };`;

/** The end record's line: exit, start and end on the node's clock, and the CPU stall between. */
const END_LINE = `c=; [ -n "$w0" ] && [ -n "$w" ] && c=$((w - w0)); printf '${END_MARKER}rc=%s start=%s end=%s cpuwait=%s\n' "$rc" "$s" "$e" "$c" >&2`;

/**
 * The recorder: a shell between `timeout` and the command that notes, on the node's clock, when
 * the command started and ended and how it exited, and prints that as the last line of stderr.
 * The line travels on the command's own channel ahead of its exit status, so it is there
 * whenever that exit status is, however late the controller hears it. Its traps only defer the
 * run's TERM/HUP/INT until the command is gone (a trapped signal is reset to its default in the
 * command, an ignored one would not be): the command is signalled directly, through its group
 * and tag, and the recorder then still writes its line. A command killed by a signal reads as
 * exit 128+n, as a shell reports it (the recorder cannot re-raise without turning an `exit 143`
 * into a SIGTERM).
 */
const RECORDER = `trap : HUP INT TERM; ${PSI_READ} ${CLOCK} tm; s=$v; q; w0=$w; "$@"; rc=$?; tm; e=$v; q; ${END_LINE}; exit "$rc"`;

/**
 * The gate ahead of the recorder (gate dir, count, wait in s, then the command): each member
 * leaves a mark, the one that sees `count` marks opens the gate for all; after `waitS` a member
 * goes alone (the verdict then sees the windows did not overlap). Its start taken, it says so
 * (GATE_MARKER) before the command runs. The folder is removed when a
 * member ends; one arriving after that waits out `waitS` and runs alone, never hangs. The marks
 * are counted by the shell's own glob (`k`, whose arguments are the marks), not `ls | wc`: a
 * waiting member polls 20 times a second, and three processes a poll for each of a node's
 * members were hundreds of forks a second while they waited.
 */
const GATED_RECORDER = `trap : HUP INT TERM; d=$1; n=$2; w=$3; shift 3; mkdir -p "$d" 2>/dev/null; : > "$d/m.$$"; k() { [ -e "$1" ] && [ "$#" -ge "$n" ]; }; i=0; while [ ! -e "$d/open" ] && [ "$i" -lt $((w*20)) ]; do k "$d"/m.* && : > "$d/open" && break; i=$((i+1)); sleep 0.05; done; ${PSI_READ} ${CLOCK} tm; s=$v; q; w0=$w; echo '${GATE_MARKER}' >&2; "$@"; rc=$?; tm; e=$v; q; rm -rf "$d"; ${END_LINE}; exit "$rc"`;

const GATE_KEY = /^[A-Za-z0-9._-]{1,120}$/;

/**
 * Picks the shell of the node-side helpers (recorder, watchdog) into $b: bash where the node has
 * it, since its builtins (EPOCHREALTIME, `read -t`) spare a process per clock reading and per
 * heartbeat; else sh. By its absolute path, so that sudo's secure_path cannot lose it. A test,
 * not `command -v` in a substitution: no process.
 */
export const PICK_SHELL = `b=sh; [ -x /bin/bash ] && b=/bin/bash;`;

function recorded(argv: readonly string[], gate: StartGate | undefined): string {
  if (!gate) return `"$b" -c ${quote(RECORDER)} slicecheck-record ${quoteArgv(argv)}`;
  if (!GATE_KEY.test(gate.key)) throw new Error(`invalid gate key ${JSON.stringify(gate.key)}`);
  const dir = `/tmp/slicecheck-gate.${gate.key}`;
  const w = String(Math.max(1, Math.ceil(gate.waitS)));
  const args = quoteArgv([dir, String(gate.count), w, ...argv]);
  return `"$b" -c ${quote(GATED_RECORDER)} slicecheck-record ${args}`;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Names a shell keeps for itself: `export` of one fails (bash's read-only variables; in sh an
 * error of a special builtin ends the shell), where `env` passes it on as asked. */
const SHELL_OWNED = new Set(["BASHOPTS", "BASH_VERSINFO", "EUID", "PPID", "SHELLOPTS", "UID"]);

/**
 * How the tags and environment reach the command: exported by the login shell, which then execs
 * `timeout` (no process more), or through `env` where sudo would drop them or a name is the
 * shell's own. `env` was an exec of its own in every remote command: about 4 ms of CPU on 2 cores,
 * some 5 800 times in `npm test`. The watcher is started before, so it never carries the tags.
 */
function tagging(entries: string[], sudo: boolean, names: string[]): string {
  if (sudo) return `exec sudo -n env ${entries.join(" ")}`;
  if (names.some((n) => SHELL_OWNED.has(n))) return `exec env ${entries.join(" ")}`;
  return `export ${entries.join(" ")}; exec`;
}

/**
 * The command's own watchdog, which shares its channel: a background reader of the channel's
 * stdin (where the controller writes a heartbeat byte every few seconds) that, when the
 * heartbeats stop (controller hung, network gone) or the channel ends (the command finished,
 * the controller was killed, the connection dropped), kills the command's process group and
 * anything that carries its tag (a stray that escaped the group). No second channel. Built only
 * for a command that has one: a supervised command's (noWatcher) is its supervisor's.
 *
 * The watchdog's first signal is SIGHUP, which nothing else of the run sends (deadlines and
 * kills send TERM, a tenant's crash is KILL or SEGV): a command that died of it was stopped
 * because the controller went silent, which says nothing about the node (WATCHDOG_SIGNAL).
 * It takes the node's fork count as it starts (WATCHDOG_FORKS), for its end scan.
 *
 * A background job of a non-interactive shell reads /dev/null unless its stdin is given
 * explicitly (POSIX), so the channel's stdin is handed over through fd 3.
 *
 * Where the login shell is bash (BASHPID set), the watchdog is a subshell of it, a fork: a
 * bash of its own was an exec and a start-up more in every remote command (about 5 ms of CPU
 * on 2 cores). It reads the same text through eval, with $1 the command's pid as before; the
 * kill steps know themselves by BASHPID (KILL_BY_TAG). Under sudo, or another login shell,
 * it is "$b" started as before.
 */
function watcherOf(o: WrapOptions): string {
  const watch = `${WATCHDOG_FORKS} ${readBeat()} while r; do :; done; ${watchdogEndScript(o.cmdTag)}`;
  const bg = `<&3 >/dev/null 2>&1 &`;
  const start = o.sudo
    ? `sudo -n "$b" -c ${quote(watch)} watchdog "$$" ${bg}`
    : `wd=${quote(watch)}; if [ -n "\${BASHPID:-}" ]; then (set -- "$$"; eval "$wd") ${bg} else "$b" -c "$wd" watchdog "$$" ${bg} fi;`;
  return `exec 3<&0; ${start} exec 3<&-;`;
}

/** The command's environment as `NAME=value` entries; a name no shell could export throws. */
export function envEntries(env: Record<string, string> | undefined): string[] {
  return Object.entries(env ?? {}).map(([k, v]) => {
    if (!ENV_NAME.test(k))
      throw new Error(`invalid environment variable name ${JSON.stringify(k)}`);
    return `${k}=${v}`;
  });
}

export function wrapCommand(cmd: Command, o: WrapOptions): string {
  const env = envEntries(o.env).map(quote);
  const tags = [
    quote(`SLICECHECK_RUN=${o.runTag}`),
    quote(`SLICECHECK_CMD=${o.cmdTag}`),
    JOB_TAG,
    ...env,
  ];
  const argv = "argv" in cmd ? cmd.argv : ["sh", "-c", cmd.shell];
  const bash = "shell" in cmd && cmd.bash === true && !o.record;
  const plain = o.record
    ? recorded(argv, o.gate)
    : bash
      ? `"$b" -c ${quote(cmd.shell)}`
      : quoteArgv(argv);
  // Data for stdin travels in the command line as base64 in a here-document: its alphabet
  // cannot contain the delimiter, and decoding gives back exactly the bytes (no newline added).
  // That inner sh picks the recorder's shell again: $b is not exported.
  const body =
    o.stdin === undefined
      ? plain
      : `sh -c ${quote(`${PICK_SHELL} base64 -d | ${plain}`)} <<'@@SLICECHECK_STDIN'`;
  const heredoc =
    o.stdin === undefined
      ? ""
      : `\n${(
          Buffer.from(o.stdin)
            .toString("base64")
            .match(/.{1,76}/g) ?? []
        ).join("\n")}\n@@SLICECHECK_STDIN`;
  // sshd starts each exec in a new session, so the shell's $$ is the process group id; `exec`
  // keeps that pid through sudo/env/timeout. The marker goes to stderr and is stripped there;
  // it is printed once the login shell is done, so the controller's deadline counts from it.
  return [
    `echo "${PGID_MARKER}$$" >&2;`,
    o.noWatcher && !o.record && !bash ? "" : PICK_SHELL,
    o.noWatcher ? "" : watcherOf(o),
    tagging(tags, o.sudo, Object.keys(o.env ?? {})),
    `timeout -k ${GRACE_S} ${Math.max(1, Math.ceil(o.deadlineS))}`,
    body,
    // The command never reads the channel: its stdin belongs to the watchdog's heartbeats.
    o.stdin === undefined ? "</dev/null" : "",
  ]
    .filter(Boolean)
    .join(" ")
    .concat(heredoc);
}

/**
 * Shell function `tg NAME=value`: into $T, the pids of the processes whose environment holds
 * exactly `NAME=value`, less the Slurm jobs that inherited it. sbatch and srun hand the
 * submitting environment to the job (--export=ALL, Slurm's default), so a job that `slicecheck
 * exec -- sbatch …` submitted carries the command's tags; it is Slurm's and its owner's (scancel
 * ends it), not a process of the run, and whether a kill reached it would depend on whether it
 * had started yet. Such a job is told by a SLURM_JOB_ID other than the one its tags were given
 * under (SLICECHECK_JOB, empty outside a job): inside a job (run --via slurm), the run's own
 * processes keep their job's id.
 *
 * Every command's watchdog scans twice when its command ends (killSequence), so a scan is one
 * process: the result goes into a variable, not through `$(tg …)`, whose function was a subshell
 * more; the substitution holds only grep, which its subshell execs (the redirection is the
 * function's: one inside the substitution keeps bash 5.2 from that exec); and which of the tagged
 * are in a Slurm job is asked of all of them at once (J), so that a process outside Slurm costs
 * no process of its own.
 */
const TAGGED = `tf() { T=; [ "$#" -gt 0 ] || return 0; J=" "; for f in $(grep -lzsx 'SLURM_JOB_ID=.*' "$@"); do J="$J$f "; done; for f in "$@"; do j=; case $J in *" $f "*) j=$(grep -zsx 'SLURM_JOB_ID=.*' "$f" | tr -d '\\0') ;; esac; if [ -n "$j" ]; then o=$(grep -zsx 'SLICECHECK_JOB=.*' "$f" | tr -d '\\0'); [ "\${j#SLURM_JOB_ID=}" = "\${o#SLICECHECK_JOB=}" ] || continue; fi; p=\${f#/proc/}; T="$T \${p%/environ}"; done; }; tg() { tf $(grep -lzxsF -- "$1" /proc/[0-9]*/environ); } 2>/dev/null;`;

/** Shell function: signal every tagged process (TAGGED's) but this shell; how many, into $n. This
 * shell is $me: bash's BASHPID, which is a subshell's own pid (the watchdog is one where the
 * login shell is bash), else $$. kt runs in the shell itself, never in a command substitution:
 * that subshell would carry the tag too, and a killer that carries it (one of the run's own
 * commands) signalled itself there and lost its count. */
const KILL_BY_TAG = `me=\${BASHPID:-$$}; kt() { n=0; tg "$1"; for p in $T; do [ "$p" = "$me" ] && continue; kill -"$2" "$p" 2>/dev/null && n=$((n+1)); done; };`;

/** The environment entry that says under which Slurm job (if any) a command got its tags. */
export const JOB_TAG = `"SLICECHECK_JOB=\${SLURM_JOB_ID:-}"`;

/** The signal of the node's watchdog when the controller's heartbeats stop. */
export const WATCHDOG_SIGNAL = "HUP";

/** How long a scan that found nothing waits before it looks again (killSequence). */
const EXEC_GAP_S = 0.1;

/**
 * The scan at a command's end, when the node's shell is bash 4.4 or newer: `tn TAG S` sets $T as
 * `tg` does, over the processes whose pid is above S (the command's own, its login shell's) alone,
 * and reads their environ with builtins: no process, where `tg` reads every process's environ with
 * grep. A stray of the command was started after it, so its pid is above S unless the pid counter
 * wrapped since: `nk S F` says whether that is impossible (the last pid given is still above S,
 * and too little time has passed to go round pid_max at 20 000 forks a second, or too few forks
 * since the count F: WATCHDOG_FORKS); if not, the caller scans everything as before. $E says a
 * live process's environ read empty (an exec under way): only then must the caller look again
 * after EXEC_GAP_S. Defined through eval, so that sh (which keeps `tg`) never parses bash's
 * syntax; a kernel thread (no exe) or a zombie is no exec under way. Measured on 2 cores with
 * about 100 processes: 23 ms of CPU for grep, sleep and grep at a command's end, where every
 * command's watchdog ends with one.
 *
 * Only pids up to the last one given (read after the listing) are read: with no wrap since S,
 * every process started after S is at or below it, and one above it was left from before the
 * counter's last round, so began before the command. Without that bound, after a wrap every
 * long-lived process above S was read: on 256 simulated nodes sharing one /proc (pid_max 32768),
 * 256 sshd and more in every node's scan, and `exec -- true` took 140-160 s instead of 8 s. A
 * process's entries are first joined with \x02 (never \x01: bash's own quoting byte in a pattern)
 * and matched as one string; the loop over them runs for a match only, to confirm it as a whole
 * entry and read its job: 0.17 ms a process where the loop over 40 entries took 0.39.
 */
export const NEW_TAGGED = `nt=; [ -z "\${BASH_VERSION:-}" ] || eval '(( BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 404 )) && { nt=1; tn() { T= E=; local f p e a m j o g l IFS; printf -v IFS "\\002"; g=(/proc/[0-9]*); read -r l < /proc/sys/kernel/ns_last_pid && [[ $l =~ ^[0-9]+$ ]] || l=4194304; for f in "\${g[@]}"; do p=\${f#/proc/}; (( p > $2 && p <= l && p != \${me:-$$} )) || continue; mapfile -d "" -t a 2>/dev/null < "$f/environ" || continue; if (( \${#a[@]} == 0 )); then [ -e "$f/exe" ] && E=1; continue; fi; [[ "$IFS\${a[*]}$IFS" == *"$IFS$1$IFS"* ]] || continue; m= j= o=; for e in "\${a[@]}"; do case $e in "$1") m=1 ;; SLURM_JOB_ID=*) j=\${e#*=} ;; SLICECHECK_JOB=*) o=\${e#*=} ;; esac; done; [ -n "$m" ] || continue; [ -z "$j" ] || [ "$j" = "$o" ] || continue; T="$T $p"; done; }; nk() { local l x f r; [[ $1 =~ ^[1-9][0-9]*$ ]] || return 1; read -r l < /proc/sys/kernel/ns_last_pid && read -r x < /proc/sys/kernel/pid_max && (( $1 > 0 && l >= $1 )) || return 1; (( (SECONDS + 1) * 20000 < x )) && return 0; [[ \${2:-} =~ ^[0-9]+$ ]] || return 1; ${STAT_FORKS("f")} r=; read -r _ _ _ r _ < /proc/loadavg; r=\${r#*/}; [[ $f =~ ^[0-9]+$ && $r =~ ^[0-9]+$ ]] && (( f - $2 + r + ${FORK_MARGIN} < x - 301 )); }; }';`;

/** TERM (or `first`), a short grace, then KILL; prints how many processes got the first, and
 * how many carried the tag before any signal (`alive=`: the command was still running).
 * `match` is a literal `NAME=value`, or with `word` a shell word that expands to one. */
function killSequence(
  match: string,
  pgid: number | null,
  first = "TERM",
  word = false,
  since?: string,
  forks?: string,
): string {
  // `kill -SIG -PGID`: dash takes no `--` before it.
  const group = isProcessGroup(pgid);
  const pg = group ? `kill -${first} -${pgid} 2>/dev/null;` : "";
  const pgk = group ? `kill -KILL -${pgid} 2>/dev/null;` : "";
  const m = word ? match : quote(match);
  // `tw TAG S`: the first look, at the processes started after S where NEW_TAGGED can.
  const firstLook = since
    ? `${NEW_TAGGED} tw() { if [ -n "$nt" ] && nk "$2" "$3"; then tn "$1" "$2"; ct $T; [ "$a" -gt 0 ] || [ -z "$E" ] || { sleep ${EXEC_GAP_S}; tn "$1" "$2"; ct $T; }; else ta "$1"; fi; }; tw ${m} ${since} ${forks ?? '""'};`
    : `ta ${m};`;
  return [
    TAGGED,
    KILL_BY_TAG,
    // `ta`: how many carry the tag, into $a, counted by a function's $# (not `| wc -l | tr`: two
    // processes fewer at every command's end). A process in the middle of an exec shows an empty
    // environ for a moment (every exec does: median 0.6 ms here, up to 22 ms on a loaded
    // machine), so a scan that finds nothing looks once more, EXEC_GAP_S later, before it says
    // none: a stray doing `setsid sleep` as its command ended was missed by a single scan on a
    // loaded CI machine and lived on, and a process a TERM handler started can be missed so by
    // the wait below and by the KILL scan right after it.
    `ct() { a=$#; }; ta() { tg "$1"; ct $T; [ "$a" -gt 0 ] || { sleep ${EXEC_GAP_S}; tg "$1"; ct $T; }; };`,
    `${firstLook} echo "alive=$a";`,
    pg,
    // Nothing tagged (a command that ended and left nothing: every watchdog's case once its
    // command is done): two scans of /proc and no signal, not the whole sequence. A fleet of
    // nodes simulated on one machine shares its cores for those scans; so does a real node's own
    // work.
    `c=0; if [ "$a" -gt 0 ]; then kt ${m} ${first}; c=$n;`,
    `i=0; while [ "$i" -lt 20 ] && ta ${m} && [ "$a" -gt 0 ]; do sleep 0.1; i=$((i+1)); done;`,
    `kt ${m} KILL; fi;`,
    pgk,
    `echo "killed=$c"`,
  ].join(" ");
}

/** The supervisor's watchdog for one of its commands (positional: the command's tag, its
 * process group): WATCHDOG_SIGNAL to the group and the tagged processes, a short grace, then
 * KILL, as each command's own watcher does when it runs without a supervisor. */
export const SUPERVISED_WATCHDOG = `kill -${WATCHDOG_SIGNAL} -$2 2>/dev/null; ${killSequence('"SLICECHECK_CMD=$1"', null, WATCHDOG_SIGNAL, true)}; kill -KILL -$2 2>/dev/null`;

export function killCommandScript(cmdTag: string, pgid: number | null): string {
  return killSequence(`SLICECHECK_CMD=${cmdTag}`, pgid);
}

/** What a command's watchdog runs once its channel ends (positional $1: the command's pid, its
 * process group; $2: the node's fork count as it began, WATCHDOG_FORKS, or empty):
 * WATCHDOG_SIGNAL to what still carries the command's tag, then KILL. Exported for the tests,
 * which run it on real processes. */
export function watchdogEndScript(cmdTag: string): string {
  return `${killSequence(`SLICECHECK_CMD=${cmdTag}`, null, WATCHDOG_SIGNAL, false, '"$1"', '"$2"')}; kill -KILL -$1 2>/dev/null`;
}

/** `bound`: shell words, the pid and fork count the run's processes came after (CONNECTION_BOUND):
 * bash's scan of those looks twice only if an exec was under way; a full scan always does. */
export function killRunScript(runTag: string, bound?: { since: string; forks: string }): string {
  return killSequence(`SLICECHECK_RUN=${runTag}`, null, "TERM", false, bound?.since, bound?.forks);
}

/**
 * Stops every process of the run whose tag the shell variable `tagVar` holds, with the
 * watchdog's signal: the node lease's fence, when a lease runs out without heartbeats or is
 * taken over from a dead holder. Its commands are stopped because their controller went
 * silent, which says nothing about the node.
 */
export function fenceRunScript(tagVar: string): string {
  return killSequence(`"SLICECHECK_RUN=$${tagVar}"`, null, WATCHDOG_SIGNAL, true);
}

/** Lists the processes of a run: `pid<TAB>cmdline` per line. */
export function listRunScript(runTag: string): string {
  return `${TAGGED} tg ${quote(`SLICECHECK_RUN=${runTag}`)}; for p in $T; do printf '%s\\t%s\\n' "$p" "$(tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null)"; done`;
}

export const HEARTBEAT_TIMEOUT_S = 15;

/**
 * Shell function `r`: reads one heartbeat byte, false once none came for HEARTBEAT_TIMEOUT_S or
 * the channel ended. bash reads it with its own `read -t`; sh has no read with a timeout, so
 * there each byte costs `timeout` and `dd`, two processes every HEARTBEAT_INTERVAL_MS for each
 * running command.
 */
export function readBeat(t = HEARTBEAT_TIMEOUT_S): string {
  return `if [ -n "\${BASH_VERSION:-}" ]; then r() { IFS= read -r -n 1 -t ${t} c; }; else r() { c=$(timeout ${t} dd bs=1 count=1 2>/dev/null) && [ -n "$c" ]; }; fi;`;
}

export const HEARTBEAT_INTERVAL_MS = 5_000;

/** SSH keepalives: a connection whose node stays silent through KEEPALIVE_COUNT_MAX unanswered
 * ones is dropped at the next interval, (count + 1) × interval after the node's last word: the
 * run's own deadline for a silent node, from which the node lease is sized. */
export const KEEPALIVE_INTERVAL_MS = 10_000;
export const KEEPALIVE_COUNT_MAX = 3;

/**
 * The node lease (harness/lock.ts): 45 s, the 40 s after which the run's keepalives give up on
 * a silent node, plus one heartbeat interval for a heartbeat in flight. While the run may still
 * come back to a node, nobody else can take it; once the lease runs out, the run's commands
 * there have been stopped by their watchdogs (HEARTBEAT_TIMEOUT_S) and by the lease's fence.
 */
export const DEFAULT_LEASE_S = Math.ceil(
  ((KEEPALIVE_COUNT_MAX + 1) * KEEPALIVE_INTERVAL_MS + HEARTBEAT_INTERVAL_MS) / 1000,
);
/** Two heartbeat intervals: a shorter lease would run out between two heartbeats. */
export const MIN_LEASE_S = Math.ceil((2 * HEARTBEAT_INTERVAL_MS) / 1000);

/** Extracts the pgid marker from the start of stderr; returns the rest unchanged. */
/** The wrapper's first stderr line, found in what the channel's stderr carried so far. A login
 * shell may write before it (module loads, `pyenv: cannot rehash`, quota warnings): those
 * complete lines are `noise`, the login's own stderr, handed on as ssh would show it. Until the
 * marker's line is complete, the incomplete last line stays `pending`. */
export function scanPgidMarker(
  buf: string,
):
  | { found: true; pgid: number | null; noise: string; rest: string }
  | { found: false; noise: string; pending: string } {
  const at = buf.startsWith(PGID_MARKER) ? 0 : buf.indexOf(`\n${PGID_MARKER}`) + 1;
  if (at > 0 || buf.startsWith(PGID_MARKER)) {
    const nl = buf.indexOf("\n", at);
    if (nl >= 0) {
      const pgid = Number(buf.slice(at + PGID_MARKER.length, nl));
      return {
        found: true,
        pgid: Number.isInteger(pgid) && pgid > 0 ? pgid : null,
        noise: buf.slice(0, at),
        rest: buf.slice(nl + 1),
      };
    }
    return { found: false, noise: buf.slice(0, at), pending: buf.slice(at) };
  }
  const lastNl = buf.lastIndexOf("\n");
  return { found: false, noise: buf.slice(0, lastNl + 1), pending: buf.slice(lastNl + 1) };
}

/** Takes the recorder's line out of a command's stderr as it streams: what is surely not part
 * of it is handed on at once, a possible start of it is held until the next chunk. The last
 * line wins: the recorder writes after everything the command wrote. */
export class EndRecordSplitter {
  record: EndRecord | null = null;
  private held = "";

  feed(chunk: string): string {
    let buf = this.held + chunk;
    let out = "";
    for (;;) {
      const at = buf.indexOf(END_MARKER);
      if (at < 0) break;
      const nl = buf.indexOf("\n", at);
      if (nl < 0) {
        this.held = buf.slice(at);
        return out + buf.slice(0, at);
      }
      this.record = parseEndRecord(buf.slice(at + END_MARKER.length, nl));
      out += buf.slice(0, at);
      buf = buf.slice(nl + 1);
    }
    let k = Math.min(buf.length, END_MARKER.length - 1);
    while (k > 0 && !END_MARKER.startsWith(buf.slice(-k))) k--;
    this.held = buf.slice(buf.length - k);
    return out + buf.slice(0, buf.length - k);
  }

  /** What is still held when the stream ends (an unfinished line is the command's own). */
  flush(): string {
    const rest = this.held;
    this.held = "";
    return rest;
  }
}
