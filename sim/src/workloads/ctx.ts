// What a simulated workload program sees of its process: its arguments, environment and pid, its
// two output streams, its exit, its signals and its clock. A program written against this runs
// either as a Node process of its own (nodeCtx, below: the process itself) or inside the
// cluster's resident simulator, for a bash client that is the process the node and the harness
// see (resident/workloads.ts): a Node start is 0.13 s of CPU on 2 slow cores, and the
// end-to-end tests start some thousand workloads.
//
// A program ends only through `exit` or `raise` (or by falling off its end: exit 0, as a Node
// process whose event loop drains). In the resident both throw, so every `catch` on the way out
// must let ProgramEnd through; none of the programs' own catches wraps one of them.

import { constants as osConstants } from "node:os";

export type ProgramSignal = "SIGTERM" | "SIGINT" | "SIGHUP";

export interface ProgramCtx {
  /** The arguments after the program's name. */
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  /** The pid the node sees: the process's own, or the resident's client's. */
  pid: number;
  stdout(text: string): void;
  stderr(text: string): void;
  /** Whether stdout is a terminal (gpu_burn draws differently). */
  isTTY: boolean;
  exit(code: number): never;
  /** Dies by `sig`, as a process that re-raises a signal with no handler left. */
  raise(sig: ProgramSignal | "SIGKILL"): never;
  onSignal(sig: ProgramSignal, handler: () => void): void;
  /** Resolves after `ms`; in the resident, rejects once the client was killed. */
  sleep(ms: number): Promise<void>;
}

/** How a program run in the resident ended (thrown by its exit and raise). */
export class ProgramEnd {
  constructor(
    readonly code: number | null,
    readonly signal: ProgramSignal | "SIGKILL" | null,
  ) {}
}

/** The program's process was killed (its client is gone): nothing of it runs on. */
export class ProgramKilled extends ProgramEnd {
  constructor() {
    super(null, "SIGKILL");
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function writer(stream: NodeJS.WriteStream): (text: string) => void {
  return (text) => {
    try {
      stream.write(text);
    } catch {
      // The reader went away (EPIPE); the program still has to finish and unregister.
    }
  };
}

/** The Node process itself. */
export function nodeCtx(): ProgramCtx {
  process.stdout.on("error", () => {});
  process.stderr.on("error", () => {});
  return {
    argv: process.argv.slice(2),
    env: process.env,
    pid: process.pid,
    stdout: writer(process.stdout),
    stderr: writer(process.stderr),
    isTTY: process.stdout.isTTY === true,
    exit: (code) => process.exit(code),
    raise: (sig) => {
      if (sig !== "SIGKILL") process.removeAllListeners(sig);
      process.kill(process.pid, sig);
      // The signal is delivered at once; should it be ignored here (inherited SIG_IGN), the exit
      // still says which signal it was, as a shell reports one.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
      return process.exit(128 + osConstants.signals[sig]);
    },
    onSignal: (sig, handler) => {
      process.on(sig, handler);
    },
    sleep,
  };
}

export type Program = (ctx: ProgramCtx) => Promise<void>;

/** A program's entry file: runs it as this Node process. */
export async function runInProcess(program: Program): Promise<void> {
  await program(nodeCtx());
}
