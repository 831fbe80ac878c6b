// The node-side supervisor: one POSIX sh (dash is enough) started once per node per phase over
// one channel, so a node with 56 workloads pays its login shell's start-up (modules, conda,
// quota messages: 0.2-2 s on real nodes) once instead of 56 times. It starts each command in its
// own session (setsid: `$$` stays the process group, so the pgid marker and the kill scripts are
// those of a command on its own channel), streams its output back as frames tagged with the
// command's id, and keeps the per-command watchdog's promise for all of them: heartbeats gone
// for HEARTBEAT_TIMEOUT_S, or its stdin at EOF (controller killed, connection gone), and every
// command it started is stopped with WATCHDOG_SIGNAL through its group and tag.
//
// Controller -> node, one line each on the supervisor's stdin:
//   h                      heartbeat
//   s <id> <escaped>       start: the command line (wrapCommand's text) in its own session
//   k <id> <escaped>       kill: a kill script, run as it is; its output comes back under <id>
//   r <id> <escaped>       start a recorded command without sh, timeout and the recorder's
//                          bash (direct-start.ts): only to a supervisor whose ready frame
//                          offers it (perl's, with Time::HiRes), never to this one
// <escaped> is the text with every byte but printable ASCII (backslash and space included)
// written as printf %b's \0ooo (escapeLine): one word, decoded by the shell's own printf.
// Node -> controller, one frame per line on its stdout:
//   @@slicecheck:sup ready <pid>[ r]   first, once (` r`: it takes `r` requests)
//   @@slicecheck:sup cannot <reason>   first, instead of ready: the node lacks what it needs
//   <id> o|e <bytes>       a line of stdout|stderr, its newline left out
//   <id> O|E <bytes>       bytes with no newline after them: a piece of a line longer than a
//                          frame (the next frame continues it) or a final line without newline
//   <id> x <rc>            exit status, written after the command's last output frame
// Each frame is one printf, at most PIPE_BUF bytes, so frames of concurrent commands never
// interleave (writes to a pipe of up to PIPE_BUF bytes are atomic).
import { quote } from "../util/shell.js";
import { SUPERVISED_WATCHDOG } from "./remote-scripts.js";

export const SUP_MARKER = "@@slicecheck:sup ";
/** Bytes of a line per frame: with an id of at most MAX_ID_LENGTH, a frame stays under 4096. */
export const FRAME_PAYLOAD = 3840;
export const MAX_ID_LENGTH = 120;
export const SUPERVISOR_ID = /^[A-Za-z0-9._@-]{1,120}$/;

/** The tools the supervisor needs beyond the shell's built-ins (coreutils and util-linux). */
const NEEDS = ["setsid", "mkfifo", "mktemp", "timeout"];

/** A request's text as one word of printable ASCII: printf %b gives back exactly its bytes. */
export function escapeLine(text: string): string {
  let out = "";
  for (const byte of Buffer.from(text)) {
    out +=
      byte > 0x20 && byte < 0x7f && byte !== 0x5c
        ? String.fromCharCode(byte)
        : `\\0${byte.toString(8).padStart(3, "0")}`;
  }
  return out;
}

/**
 * `rl` reads a request line into $l (a "." after it, so that trailing blanks survive), false at
 * EOF or after `$hb` s of silence; `dec` decodes a request's text into $c. bash does both with its
 * builtins. bash reads a pipe byte by byte, and with `-t` it waits in select(2) and sets its
 * signal mask around every byte: 3.4 ms of CPU for a 1.4 KB request, where a plain read takes
 * 0.6. So only the first byte is awaited under the timeout, and the rest of its line read
 * without: the controller writes each line whole, in one SSH packet, so the rest is there with
 * its first byte; a connection that goes in between is an end of file. dash reads byte by byte,
 * so a child shell under `timeout` consumes exactly one line, and a silent controller ends the
 * loop as EOF does: two processes a line, and one to decode.
 */
const BUILTINS = `if [ -n "\${BASH_VERSION:-}" ]; then rl() { l=; IFS= read -r -t "$hb" -n 1 l || return 1; if [ -n "$l" ]; then IFS= read -r r || return 1; l=$l$r; fi; l=$l.; }; dec() { printf -v c '%b' "$1"; }; else rl() { l=$(timeout "$hb" sh -c 'IFS= read -r l && printf "%s." "$l"'); }; dec() { c=$(printf '%b.' "$1"); c=\${c%.}; }; fi;`;

// Reads one stream (fd 0) and prints it as frames: `$1` id, `$2` the line letter, `$3` the
// piece letter. LC_ALL=C so that a length is counted in bytes (bash counts characters).
// `${l#$q}` drops the first FRAME_PAYLOAD bytes; `${l%"$rest"}` keeps them.
const FRAMER = `fr() { LC_ALL=C; while :; do l=; IFS= read -r l; r=$?; [ "$r" -ne 0 ] && [ -z "$l" ] && break; while [ \${#l} -gt ${FRAME_PAYLOAD} ]; do t=\${l#$q}; printf '%s %s %s\\n' "$1" "$3" "\${l%"$t"}"; l=$t; done; if [ "$r" -eq 0 ]; then printf '%s %s %s\\n' "$1" "$2" "$l"; else printf '%s %s %s\\n' "$1" "$3" "$l"; break; fi; done; }`;

/**
 * `run`: one command (`$1` id, `$2` command line, `$3` = s: in its own session) with each of its
 * streams read by a framer; the exit frame follows once both framers are done. How the streams
 * reach the framers is the caller's: `open` starts the framers (their pids into $a and $b), `to`
 * is the command's redirections, `started` what the shell does once the command runs, `framed`
 * waits for both framers. The pid file names a running command's group for the watchdog; it is
 * emptied when the command ends (a builtin, where `rm` was a process per command). No single
 * quote: bash's is defined inside eval '…'.
 */
function runFunction(o: { open: string; to: string; started: string; framed: string }): string {
  const cmd = (pre: string) => `${pre}sh -c "$2" ${o.to} < /dev/null & p=$!;`;
  return `run() { f=$d/$1; ${o.open} if [ "$3" = s ]; then ${cmd("setsid ")} echo "$p" > "$f.pid"; else ${cmd("")} fi; ${o.started}wait "$p"; rc=$?; ${o.framed} [ "$3" = s ] && : > "$f.pid"; printf "%s x %s\\n" "$1" "$rc"; }`;
}

// Through two fifos, which stay until the supervisor's folder goes at its end.
const RUNNER = runFunction({
  open: `mkfifo "$f.o" "$f.e" || { printf "%s x 127\\n" "$1"; return; }; fr "$1" o O < "$f.o" & a=$!; fr "$1" e E < "$f.e" & b=$!;`,
  to: `> "$f.o" 2> "$f.e"`,
  started: "",
  framed: `wait "$a"; wait "$b";`,
});

/**
 * The same under bash 5.2 or later, with its process substitutions for pipes: no mkfifo, a
 * process of its own per command (coreutils' mkfifo loads libselinux: 93 ms of CPU for 28
 * workloads launched on 2 cores, 3.3 ms each). Each framer's pipe is closed in everything else
 * (the other framer, the command, this shell once the command started), so each sees its end of
 * file when the command's last process lets go. bash 5.2 waits for a process substitution by its
 * pid (4.4 only for the last one); where a wait still answers 127 (no such child), its end is
 * awaited by polling, so the exit frame never comes before the last output frame. Defined through
 * eval: dash cannot parse it.
 */
const PIPE_RUNNER = `if [ -n "\${BASH_VERSION:-}" ] && eval '(( BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 502 ))' 2>/dev/null; then eval 'wf() { wait "$1"; [ "$?" -ne 127 ] || while kill -0 "$1" 2>/dev/null; do sleep 0.01; done; }; ${runFunction(
  {
    open: `exec {o}> >(fr "$1" o O); a=$!; exec {e}> >(fr "$1" e E {o}>&-); b=$!;`,
    to: ">&$o 2>&$e {o}>&- {e}>&-",
    started: "exec {o}>&- {e}>&-; ",
    framed: `wf "$a"; wf "$b";`,
  },
)}'; fi;`;

/**
 * The supervisor's script. Positional parameters: the heartbeat timeout in seconds, then the
 * prefix its watchdog's kills run under (`sudo -n` where commands may run as root).
 */
export function supervisorScript(): string {
  const check = NEEDS.map(
    (c) =>
      `command -v ${c} >/dev/null 2>&1 || { echo "${SUP_MARKER}cannot: ${c} is missing on the node"; exit 0; };`,
  ).join(" ");
  const watchdog = `w=; for f in "$d"/*.pid; do [ -e "$f" ] || continue; t=\${f##*/}; t=\${t%.pid}; p=; read -r p < "$f" 2>/dev/null; [ -n "$p" ] || continue; $su sh -c ${quote(SUPERVISED_WATCHDOG)} watchdog "$t" "$p" >/dev/null 2>&1 & w="$w $!"; done; [ -z "$w" ] || wait $w; rm -rf "$d"; exit 0`;
  return [
    `hb=$1; su=$2; ${check}`,
    `d=$(mktemp -d "\${TMPDIR:-/tmp}/slicecheck-sup.XXXXXX") || { echo "${SUP_MARKER}cannot: mktemp -d failed"; exit 0; };`,
    // q: FRAME_PAYLOAD question marks (15 x 256), the pattern that cuts a long line.
    `q=?; i=0; while [ "$i" -lt 8 ]; do q=$q$q; i=$((i+1)); done; q=$q$q$q$q$q$q$q$q$q$q$q$q$q$q$q;`,
    `${FRAMER}; ${RUNNER}; ${PIPE_RUNNER} ${BUILTINS}`,
    `echo "${SUP_MARKER}ready $$";`,
    `while rl; do l=\${l%.}; case $l in h) ;; "s "*|"k "*) set -f; set -- $l; set +f; dec "$3"; if [ "$1" = s ]; then run "$2" "$c" s & else run "$2" "$c" & fi ;; *) echo "bad request: $l" >&2 ;; esac; done;`,
    watchdog,
  ].join("\n");
}
