// `slicecheck exec`: one command on many nodes at once, pdsh-style output or JSON.
import { isSlicecheckError } from "../../errors.js";
import { fanOut, newRunId } from "../../transport/open.js";
import type { Command, ExecResult } from "../../transport/types.js";
import { loadSelected, type NodeOptions, type Out } from "../context.js";

export interface ExecCliOptions extends NodeOptions {
  timeout: number;
  concurrency: number;
  json?: boolean;
  shell?: boolean;
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

export async function execCommand(argv: string[], o: ExecCliOptions, io: Out): Promise<number> {
  const { nodes } = loadSelected(o);
  const command: Command = o.shell ? { shell: argv.join(" ") } : { argv };
  const runId = newRunId();
  const width = Math.max(...nodes.map((n) => n.name.length));
  const prefixer = (name: string, sink: (l: string) => void) => {
    let buf = "";
    return {
      push(chunk: string) {
        buf += chunk;
        const lines = buf.split("\n");
        buf = lines.pop() ?? "";
        for (const l of lines) sink(`${name.padEnd(width)}: ${l}`);
      },
      flush() {
        if (buf) sink(`${name.padEnd(width)}: ${buf}`);
        buf = "";
      },
    };
  };
  const results = await fanOut(nodes, { runId, concurrency: o.concurrency }, async (t) => {
    const out = prefixer(t.node.name, io.out);
    const err = prefixer(t.node.name, io.err);
    try {
      return await t.exec(command, {
        timeoutMs: o.timeout * 1000,
        onStdout: o.json ? undefined : (s) => out.push(s),
        onStderr: o.json ? undefined : (s) => err.push(s),
      });
    } finally {
      out.flush();
      err.flush();
    }
  });
  let worst = 0;
  const json: NodeExecJson[] = [];
  for (const r of results) {
    const code = nodeExitCode(r);
    worst = Math.max(worst, code);
    const error =
      r.error === undefined
        ? r.value?.timedOut
          ? `timed out after ${o.timeout} s`
          : null
        : describe(r.error);
    if (!o.json && error) io.err(`${r.node.name.padEnd(width)}: slicecheck: ${error}`);
    json.push({
      name: r.node.name,
      exitCode: r.value?.exitCode ?? null,
      stdout: r.value?.stdout ?? "",
      stderr: r.value?.stderr ?? "",
      error,
    });
  }
  if (o.json) io.out(JSON.stringify({ nodes: json }, null, 2));
  return worst;
}

function describe(e: unknown): string {
  return isSlicecheckError(e)
    ? `[${e.code}] ${e.message}`
    : e instanceof Error
      ? e.message
      : String(e);
}
