// What `slicecheck exec` prints, apart from running it: each node's output cut into lines as
// it arrives (pdsh's `node: line`), the end of a node (pdsh's `node: exited with exit code N`),
// the gathered form of -b (dshbak -c), and what an interrupt leaves to say.
import { isSlicecheckError } from "../../errors.js";
import { foldNames } from "../../inventory/selectors.js";
import type { ExecResult } from "../../transport/types.js";
import type { Out } from "../context.js";

export interface NodeExecJson {
  name: string;
  exitCode: number | null;
  stdout: string;
  stderr: string;
  error: string | null;
}

/** Where a node is: not started yet (waiting for --fanout room or connecting), its command
 * running, or finished. */
export type NodePhase = "waiting" | "running" | "done";

/** One node's output: kept whole (for -b, --json and an interrupt) and, when `sink` is given,
 * printed a line at a time as soon as the line is complete, each line tagged by `tag`. */
export class NodeLines {
  stdout = "";
  stderr = "";
  phase: NodePhase = "waiting";
  private partOut = "";
  private partErr = "";

  constructor(
    readonly name: string,
    private readonly sink: Out | null,
    private readonly tag: (line: string) => string,
  ) {}

  out(chunk: string): void {
    this.stdout += chunk;
    this.partOut = this.emit(this.partOut + chunk, (l) => this.sink?.out(l));
  }

  err(chunk: string): void {
    this.stderr += chunk;
    this.partErr = this.emit(this.partErr + chunk, (l) => this.sink?.err(l));
  }

  /** Prints a last line that had no newline yet (the node ended, or we were interrupted). */
  flush(): void {
    if (this.partOut) this.sink?.out(this.tag(this.partOut));
    if (this.partErr) this.sink?.err(this.tag(this.partErr));
    this.partOut = "";
    this.partErr = "";
  }

  /** Prints the complete lines of `text`; returns what is left after the last newline. */
  private emit(text: string, print: (line: string) => void): string {
    if (!this.sink) return "";
    const lines = text.split("\n");
    const rest = lines.pop() ?? "";
    for (const l of lines) print(this.tag(l));
    return rest;
  }
}

export function describe(e: unknown): string {
  return isSlicecheckError(e)
    ? `[${e.code}] ${e.message}`
    : e instanceof Error
      ? e.message
      : String(e);
}

/** Why a node did not end well, in pdsh's words where pdsh has some; null when it exited 0. */
export function endLineOf(
  r: { value?: ExecResult; error?: unknown },
  timeoutS: number,
): string | null {
  if (r.error !== undefined) return `slicecheck: ${describe(r.error)}`;
  const v = r.value!;
  if (v.timedOut) return `slicecheck: timed out after ${timeoutS} s`;
  if (v.exitCode === null) return `killed by signal ${v.signal ?? "?"}`;
  return v.exitCode === 0 ? null : `exited with exit code ${v.exitCode}`;
}

/** clush -b / dshbak -c: each distinct output once, under the folded list of its nodes. */
export function printGathered(nodes: NodeExecJson[], io: Out): void {
  const print = (sink: (l: string) => void, pick: (n: NodeExecJson) => string) => {
    const groups = new Map<string, string[]>();
    for (const n of nodes) {
      const text = pick(n);
      if (text === "") continue;
      groups.set(text, [...(groups.get(text) ?? []), n.name]);
    }
    for (const [text, names] of groups) {
      const head = `${foldNames(names)} (${names.length})`;
      const rule = "-".repeat(Math.max(15, head.length));
      sink(rule);
      sink(head);
      sink(rule);
      for (const l of text.replace(/\n$/, "").split("\n")) sink(l);
    }
  };
  print(io.out, (n) => n.stdout);
  print(io.err, (n) => n.stderr);
  const failed = new Map<string, string[]>();
  for (const n of nodes) {
    const why = n.error ?? (n.exitCode !== 0 ? `exited with exit code ${n.exitCode ?? "?"}` : null);
    if (why) failed.set(why, [...(failed.get(why) ?? []), n.name]);
  }
  for (const [why, names] of failed) io.err(`slicecheck: ${foldNames(names)}: ${why}`);
}

/** On Ctrl-C, as pdsh lists its threads: every node whose command was still running (its
 * partial last line printed first), every node not started, then one summary line. */
export function printInterrupted(nodes: readonly NodeLines[], signal: string, io: Out): void {
  const running = nodes.filter((n) => n.phase === "running");
  const waiting = nodes.filter((n) => n.phase === "waiting");
  for (const n of running) n.flush();
  for (const n of running) io.err(`${n.name}: command in progress`);
  for (const n of waiting) io.err(`${n.name}: not started`);
  const still = running.length
    ? `still running on ${foldNames(running.map((n) => n.name))} (${running.length}), stopping it`
    : "no command was still running";
  const left = waiting.length ? `; ${waiting.length} node(s) not started` : "";
  io.err(`slicecheck: interrupted (${signal}): ${still}${left}`);
}
