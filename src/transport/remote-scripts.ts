// The shell text that gives every remote command its lifecycle: its own process group, a hard
// deadline on the node, run and command tags in its environment, and the scripts that kill by
// those tags. Closing an SSH channel does not kill the remote process and sshd ignores signal
// requests for root logins (ecosystem.md §1), so killing is done by a second command.
import { quote, quoteArgv } from "../util/shell.js";
import type { Command } from "./types.js";

export const PGID_MARKER = "@@slicecheck:pgid=";
const GRACE_S = 5;

export interface WrapOptions {
  runTag: string;
  cmdTag: string;
  deadlineS: number;
  sudo: boolean;
  env?: Record<string, string>;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function wrapCommand(cmd: Command, o: WrapOptions): string {
  const env = Object.entries(o.env ?? {}).map(([k, v]) => {
    if (!ENV_NAME.test(k))
      throw new Error(`invalid environment variable name ${JSON.stringify(k)}`);
    return quote(`${k}=${v}`);
  });
  const body = "argv" in cmd ? quoteArgv(cmd.argv) : `sh -c ${quote(cmd.shell)}`;
  // sshd starts each exec in a new session, so the shell's $$ is the process group id; `exec`
  // keeps that pid through sudo/env/timeout. The marker goes to stderr and is stripped there.
  return [
    `echo "${PGID_MARKER}$$" >&2;`,
    "exec",
    o.sudo ? "sudo -n" : "",
    "env",
    quote(`SLICECHECK_RUN=${o.runTag}`),
    quote(`SLICECHECK_CMD=${o.cmdTag}`),
    ...env,
    `timeout -k ${GRACE_S} ${Math.max(1, Math.ceil(o.deadlineS))}`,
    body,
  ]
    .filter(Boolean)
    .join(" ");
}

/** Shell function: signal every process whose environment holds exactly `NAME=value`. */
const KILL_BY_TAG = `kt() { n=0; for f in $(grep -lzxsF -- "$1" /proc/[0-9]*/environ 2>/dev/null); do p=\${f#/proc/}; p=\${p%/environ}; [ "$p" = "$$" ] && continue; kill -"$2" "$p" 2>/dev/null && n=$((n+1)); done; echo "$n"; };`;

/** TERM, a short grace, then KILL; prints how many processes got the TERM. */
function killSequence(match: string, pgid: number | null): string {
  const pg = pgid ? `kill -TERM -- -${pgid} 2>/dev/null;` : "";
  const pgk = pgid ? `kill -KILL -- -${pgid} 2>/dev/null;` : "";
  const m = quote(match);
  return [
    KILL_BY_TAG,
    pg,
    `c=$(kt ${m} TERM);`,
    `i=0; while [ "$i" -lt 20 ] && [ -n "$(grep -lzxsF -- ${m} /proc/[0-9]*/environ 2>/dev/null)" ]; do sleep 0.1; i=$((i+1)); done;`,
    pgk,
    `kt ${m} KILL >/dev/null;`,
    `echo "killed=$c"`,
  ].join(" ");
}

export function killCommandScript(cmdTag: string, pgid: number | null): string {
  return killSequence(`SLICECHECK_CMD=${cmdTag}`, pgid);
}

export function killRunScript(runTag: string): string {
  return killSequence(`SLICECHECK_RUN=${runTag}`, null);
}

/** Lists the processes of a run: `pid<TAB>cmdline` per line. */
export function listRunScript(runTag: string): string {
  return `for f in $(grep -lzxsF -- ${quote(`SLICECHECK_RUN=${runTag}`)} /proc/[0-9]*/environ 2>/dev/null); do p=\${f#/proc/}; p=\${p%/environ}; printf '%s\\t%s\\n' "$p" "$(tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null)"; done`;
}

export const HEARTBEAT_TIMEOUT_S = 15;
export const HEARTBEAT_INTERVAL_MS = 5_000;

/** The watchdog reads one heartbeat byte at a time from the controller. When none comes for
 * HEARTBEAT_TIMEOUT_S (controller hung or network gone) or the channel hits EOF (controller
 * killed, connection dropped, or a normal close), it kills everything tagged with the run. */
export function watchdogScript(runTag: string, sudo: boolean): string {
  const body = [
    `while :; do c=$(timeout ${HEARTBEAT_TIMEOUT_S} dd bs=1 count=1 2>/dev/null) || break; [ -n "$c" ] || break; done;`,
    killSequence(`SLICECHECK_RUN=${runTag}`, null),
  ].join(" ");
  // The watchdog carries no run tag itself, so it never kills itself.
  return `exec ${sudo ? "sudo -n " : ""}sh -c ${quote(body)}`;
}

/** Extracts the pgid marker from the start of stderr; returns the rest unchanged. */
export function takePgidMarker(stderr: string): { pgid: number | null; rest: string } {
  if (!stderr.startsWith(PGID_MARKER)) return { pgid: null, rest: stderr };
  const nl = stderr.indexOf("\n");
  if (nl < 0) return { pgid: null, rest: stderr };
  const pgid = Number(stderr.slice(PGID_MARKER.length, nl));
  return { pgid: Number.isInteger(pgid) ? pgid : null, rest: stderr.slice(nl + 1) };
}
