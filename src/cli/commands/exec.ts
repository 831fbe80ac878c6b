// `slicecheck exec`: one command on many nodes at once, pdsh-style output, clush -b style
// gathered output, or JSON. One argument is a command line for the node's shell, as with ssh,
// pdsh and clush (`exec -- 'nvidia-smi -L | wc -l'`); several arguments are quoted one by one,
// so values with spaces or quotes reach the command unchanged. Output comes in selection
// order, whatever order the nodes finish in, so that two runs can be compared line by line.
import { isSlicecheckError } from "../../errors.js";
import { foldNames } from "../../inventory/selectors.js";
import { fanOut, newRunId } from "../../transport/open.js";
import type { Command, ExecResult } from "../../transport/types.js";
import { loadSelected, type NodeOptions, type Out } from "../context.js";

export interface ExecCliOptions extends NodeOptions {
  timeout: number;
  concurrency: number;
  json?: boolean;
  shell?: boolean;
  gather?: boolean;
}

export interface NodeExecJson {
  name: string;
  exitCode: number | null;
  stdout: string;
  stderr: string;
  error: string | null;
}

/** A node that could not run the command counts as 2, a timeout as 124 (like timeout(1)). */
export function nodeExitCode(r: { value?: ExecResult; error?: unknown }): number {
  if (r.error !== undefined) return 2;
  const v = r.value!;
  if (v.timedOut) return 124;
  if (v.exitCode === null) return 128 + 9;
  return v.exitCode;
}

/** What runs on the node: one argument or --shell is a shell command line, several are argv. */
export function execCommandOf(argv: readonly string[], shell: boolean | undefined): Command {
  if (shell || argv.length === 1) return { shell: argv.join(" ") };
  return { argv };
}

function prefixed(name: string, width: number, text: string): string[] {
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines.map((l) => `${name.padEnd(width)}: ${l}`);
}

export async function execCommand(argv: string[], o: ExecCliOptions, io: Out): Promise<number> {
  const { nodes } = loadSelected(o, io);
  const command = execCommandOf(argv, o.shell);
  const runId = newRunId();
  const width = Math.max(...nodes.map((n) => n.name.length));
  const index = new Map(nodes.map((n, i) => [n.name, i]));
  type Done = { name: string; value?: ExecResult; error?: unknown };
  const done: (Done | undefined)[] = new Array(nodes.length);
  let next = 0;
  const errorOf = (r: Done): string | null =>
    r.error === undefined
      ? r.value?.timedOut
        ? `timed out after ${o.timeout} s`
        : null
      : describe(r.error);
  // Each node's output is printed once it and every node before it in the selection are done:
  // deterministic, and still progressive on a large fleet.
  const flush = () => {
    while (next < done.length && done[next]) {
      const r = done[next]!;
      for (const l of prefixed(r.name, width, r.value?.stdout ?? "")) io.out(l);
      for (const l of prefixed(r.name, width, r.value?.stderr ?? "")) io.err(l);
      const error = errorOf(r);
      if (error) io.err(`${r.name.padEnd(width)}: slicecheck: ${error}`);
      next++;
    }
  };
  const streaming = !o.json && !o.gather;
  const results = await fanOut(nodes, { runId, concurrency: o.concurrency }, async (t) => {
    try {
      const value = await t.exec(command, { timeoutMs: o.timeout * 1000 });
      if (streaming) {
        done[index.get(t.node.name)!] = { name: t.node.name, value };
        flush();
      }
      return value;
    } catch (error) {
      if (streaming) {
        done[index.get(t.node.name)!] = { name: t.node.name, error };
        flush();
      }
      throw error;
    }
  });
  let worst = 0;
  const json: NodeExecJson[] = [];
  for (const r of results) {
    worst = Math.max(worst, nodeExitCode(r));
    const i = index.get(r.node.name)!;
    // A node that failed to connect never reached the callback above.
    if (streaming && !done[i]) done[i] = { name: r.node.name, value: r.value, error: r.error };
    json.push({
      name: r.node.name,
      exitCode: r.value?.exitCode ?? null,
      stdout: r.value?.stdout ?? "",
      stderr: r.value?.stderr ?? "",
      error: errorOf({ name: r.node.name, value: r.value, error: r.error }),
    });
  }
  if (streaming) flush();
  else if (o.json) io.out(JSON.stringify({ nodes: json }, null, 2));
  else printGathered(json, io);
  return worst;
}

/** clush -b / dshbak -c: each distinct output once, under the folded list of its nodes. */
function printGathered(nodes: NodeExecJson[], io: Out): void {
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

function describe(e: unknown): string {
  return isSlicecheckError(e)
    ? `[${e.code}] ${e.message}`
    : e instanceof Error
      ? e.message
      : String(e);
}
