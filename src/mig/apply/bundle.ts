// Several read-only commands in one remote call: they run side by side on the node and come back
// as separate outputs with their own exit codes. Each SSH command costs a channel, a shell and
// a round trip; a snapshot needs eight reads, and a jump host or a slow link multiplies that.

import type { Argv } from "../../nvsmi/index.js";
import type { BesideLockOptions, Transport } from "../../transport/types.js";
import { quote, quoteArgv } from "../../util/shell.js";
import { PERL_BUNDLE, perlRead } from "./bundle-perl.js";

export interface Output {
  stdout: string;
  stderr: string;
  exitCode: number | null;
  timedOut: boolean;
}

export type Read = Argv | { shell: string };

const OUT = "@@slicecheck-out";
const ERR = "@@slicecheck-err";
const MARKER = new RegExp(`^(${OUT}|${ERR}) (\\d+)(?: (\\d*))?$`);

function fragment(r: Read): string {
  return "shell" in r ? `sh -c ${quote(r.shell)}` : quoteArgv(r as Argv);
}

/** Exit codes of coreutils' `timeout`: the command ran past its deadline (124), or ignored the
 * TERM and was killed 5 s later (137). */
const DEADLINE_EXITS = new Set([124, 137]);

/** The script of a bundle: perl's where the node has perl, else the shell's. With
 * `readTimeoutS`, each read has its own deadline (perl's own, or the node's `timeout` where it
 * has one), so that a hung read is that read's deadline while the others still answer; without
 * either on the node, the call's own deadline stands for all of them. */
export function bundleScript(reads: readonly Read[], readTimeoutS?: number): string {
  const to = readTimeoutS ? "$to " : "";
  // Each read a background job of this shell, its status taken by `wait PID` (POSIX keeps it
  // for a known child): no subshell per read to write it, where one was a process more each.
  const jobs = reads.map(
    (r, i) => `${to}${fragment(r)} >"$d/${i}.o" 2>"$d/${i}.e" </dev/null & p${i}=$!`,
  );
  const waits = reads.map((_, i) => `wait "$p${i}"; echo $? >"$d/${i}.rc"`);
  const ids = reads.map((_, i) => i).join(" ");
  // perl where the node has it (bundle-perl.ts): `command -v` is a builtin, no process.
  const perl = quoteArgv([String(readTimeoutS ?? ""), ...reads.flatMap((r) => perlRead(r))]);
  return [
    `command -v perl >/dev/null 2>&1 && exec perl -e ${quote(PERL_BUNDLE)} ${perl}`,
    "d=$(mktemp -d) || exit 97",
    `trap 'rm -rf "$d"' EXIT`,
    ...(readTimeoutS
      ? [`to=; if command -v timeout >/dev/null 2>&1; then to="timeout -k 5 ${readTimeoutS}"; fi`]
      : []),
    ...jobs,
    ...waits,
    // The markers go into files of their own (builtins only) and one `cat` prints them and the
    // outputs in order: a `cat` and a `$(cat)` per stream were four processes per read, some
    // forty a snapshot, on a node whose own work they share the cores with.
    `echo >"$d/n"; set --; for i in ${ids}; do c=; { read -r c <"$d/$i.rc"; } 2>/dev/null; printf '%s %s %s\\n' "${OUT}" "$i" "$c" >"$d/$i.a"; printf '\\n%s %s\\n' "${ERR}" "$i" >"$d/$i.b"; set -- "$@" "$d/$i.a" "$d/$i.o" "$d/$i.b" "$d/$i.e" "$d/n"; done; cat "$@"`,
  ].join("\n");
}

/** Splits the bundle's output back into one Output per read; with `readDeadlines` (the script
 * had a `readTimeoutS`), a read that exited as `timeout` does at its deadline is `timedOut`. */
export function splitBundle(
  text: string,
  count: number,
  timedOut: boolean,
  readDeadlines = false,
): Output[] {
  const out: Output[] = Array.from({ length: count }, () => ({
    stdout: "",
    stderr: "",
    exitCode: null,
    timedOut,
  }));
  let cur: { i: number; err: boolean } | null = null;
  const buf: string[] = [];
  const flush = () => {
    if (!cur) return;
    const o = out[cur.i];
    // The script ends each part with a newline of its own, which the split has taken away.
    const text = buf.join("\n");
    if (o) {
      if (cur.err) o.stderr = text;
      else o.stdout = text;
    }
    buf.length = 0;
  };
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  for (const line of lines) {
    const m = MARKER.exec(line);
    if (m) {
      flush();
      const i = Number(m[2]);
      cur = { i, err: m[1] === ERR };
      const o = out[i];
      if (o && !cur.err && m[3]) {
        o.exitCode = Number(m[3]);
        if (readDeadlines && DEADLINE_EXITS.has(o.exitCode)) o.timedOut = true;
      }
      continue;
    }
    if (cur) buf.push(line);
  }
  flush();
  return out;
}

export interface BundleOptions {
  /** The whole call's deadline; default 60 s, or 15 s past `readTimeoutS`. */
  timeoutMs?: number;
  /** Privileged unless told (a non-root user may not see others' processes). */
  privileged?: boolean;
  /** Each read's own deadline on the node (bundleScript); a read killed at it is `timedOut`. */
  readTimeoutS?: number;
  /** Passed on to the call (a read that waits for the lease, its abort). */
  exec?: BesideLockOptions;
}

/** Runs the reads as one call. */
export async function readBundle(
  t: Transport,
  reads: readonly Read[],
  o: BundleOptions = {},
): Promise<Output[]> {
  const timeoutMs = o.timeoutMs ?? (o.readTimeoutS ? o.readTimeoutS * 1000 + 15_000 : 60_000);
  const r = await t.exec(
    { shell: bundleScript(reads, o.readTimeoutS) },
    { privileged: o.privileged ?? true, timeoutMs, ...o.exec },
  );
  return splitBundle(r.stdout, reads.length, r.timedOut, Boolean(o.readTimeoutS));
}
