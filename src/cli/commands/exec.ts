// `slicecheck exec`: one command on many nodes at once, with pdsh's output, clush -b style
// gathered output, or JSON. One argument is a command line for the node's shell, as with ssh,
// pdsh and clush (`exec -- 'nvidia-smi -L | wc -l'`); several arguments are quoted one by one,
// so values with spaces or quotes reach the command unchanged. Lines are printed as they
// arrive, as pdsh prints them: a node that prints and then works for an hour shows its first
// line at once, not at its end.
import { SlicecheckError } from "../../errors.js";
import { type FanOutResult, fanOut, newRunId } from "../../transport/open.js";
import type { Command, ExecResult } from "../../transport/types.js";
import { sharedAbort } from "../../util/abort.js";
import { loadSelected, type NodeOptions, type Out } from "../context.js";
import {
  endLineOf,
  type NodeExecJson,
  NodeLines,
  printGathered,
  printInterrupted,
} from "./exec-output.js";

export type { NodeExecJson };

export interface ExecCliOptions extends NodeOptions {
  timeout: number;
  concurrency: number;
  /** pdsh's -f/--fanout: --concurrency by its pdsh name; wins when both are given. */
  fanout?: number;
  /** False with pdsh's -N (`--no-prefix`): no `node: ` before each line. */
  prefix?: boolean;
  /** Pad node names to one width, so that the lines' text starts in one column. */
  align?: boolean;
  json?: boolean;
  shell?: boolean;
  gather?: boolean;
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

/** The interrupt signals exec answers itself: what was running is stopped, then 128 + N. */
const SIGNALS = { SIGINT: 130, SIGTERM: 143 } as const;
type Stop = keyof typeof SIGNALS;

/** Installs exec's own SIGINT/SIGTERM handlers (main's, which only exit, then stand aside).
 * The first signal stops the nodes' commands and reports; a second one exits at once. */
function onInterrupt(first: (sig: Stop) => void): () => void {
  let seen: Stop | null = null;
  const handlers = (Object.keys(SIGNALS) as Stop[]).map((sig) => {
    const h = () => {
      if (seen) process.exit(SIGNALS[seen]);
      seen = sig;
      first(sig);
    };
    process.on(sig, h);
    return [sig, h] as const;
  });
  return () => {
    for (const [sig, h] of handlers) process.removeListener(sig, h);
  };
}

export async function execCommand(argv: string[], o: ExecCliOptions, io: Out): Promise<number> {
  const { nodes } = loadSelected(o, io);
  const command = execCommandOf(argv, o.shell);
  const streaming = !o.json && !o.gather;
  const width = o.align ? Math.max(...nodes.map((n) => n.name.length)) : 0;
  const label = (name: string) => name.padEnd(width);
  const lines = new Map(
    nodes.map((n) => {
      const tag = (l: string) => (o.prefix === false ? l : `${label(n.name)}: ${l}`);
      return [n.name, new NodeLines(n.name, streaming ? io : null, tag)] as const;
    }),
  );
  const abort = sharedAbort();
  let stopped: Stop | null = null;
  const release = onInterrupt((sig) => {
    stopped = sig;
    printInterrupted([...lines.values()], sig, io);
    abort.abort(sig);
  });
  // A node's end is printed as soon as it has one, as pdsh does.
  const onResult = (r: FanOutResult<ExecResult>) => {
    const n = lines.get(r.node.name)!;
    n.phase = "done";
    if (!streaming || stopped) return;
    n.flush();
    const end = endLineOf(r, o.timeout);
    if (end) io.err(`${label(n.name)}: ${end}`);
  };
  try {
    const results = await fanOut(
      nodes,
      { runId: newRunId(), concurrency: o.fanout ?? o.concurrency, onResult },
      (t) => runOn(t, command, lines.get(t.node.name)!, o.timeout, abort.signal),
    );
    return finish(results, lines, o, io, stopped);
  } finally {
    release();
  }
}

async function runOn(
  t: Parameters<Parameters<typeof fanOut>[2]>[0],
  command: Command,
  n: NodeLines,
  timeoutS: number,
  signal: AbortSignal,
): Promise<ExecResult> {
  // A node still waiting for its turn when Ctrl-C came is not started at all.
  if (signal.aborted)
    throw new SlicecheckError("INTERRUPTED", `${n.name}: not started: interrupted`, {
      node: n.name,
    });
  n.phase = "running";
  return t.exec(command, {
    timeoutMs: timeoutS * 1000,
    signal,
    onStdout: (c) => n.out(c),
    onStderr: (c) => n.err(c),
  });
}

/** The exit code, and the -b or --json output, once every node is done. */
function finish(
  results: FanOutResult<ExecResult>[],
  lines: Map<string, NodeLines>,
  o: ExecCliOptions,
  io: Out,
  stopped: Stop | null,
): number {
  let worst = 0;
  const json: NodeExecJson[] = results.map((r) => {
    worst = Math.max(worst, nodeExitCode(r));
    const n = lines.get(r.node.name)!;
    const end = endLineOf(r, o.timeout);
    return {
      name: r.node.name,
      exitCode: r.value?.exitCode ?? null,
      // What the node printed up to an interrupt, too.
      stdout: r.value?.stdout ?? n.stdout,
      stderr: r.value?.stderr ?? n.stderr,
      error: end?.startsWith("slicecheck: ") ? end.slice("slicecheck: ".length) : null,
    };
  });
  if (o.json)
    io.out(JSON.stringify({ nodes: json, ...(stopped ? { interrupted: stopped } : {}) }, null, 2));
  else if (o.gather) printGathered(json, io);
  return stopped ? SIGNALS[stopped] : worst;
}
