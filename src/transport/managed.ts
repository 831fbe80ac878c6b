// Runs commands through a RawShell with the remote-process discipline: tags, a deadline that
// starts when the command starts on the node, kill by a second channel, and a heartbeat
// watchdog that shares each command's own channel (one channel per command). The command's
// own life (marker, deadline, output, result) is CommandRun's, shared with the supervisor.
import type { SlicecheckError } from "../errors.js";
import type { NodeSpec } from "../inventory/types.js";
import { quote } from "../util/shell.js";
import { CommandRun } from "./command-run.js";
import { HEARTBEAT_INTERVAL_MS, killRunScript, listRunScript } from "./remote-scripts.js";
import type {
  Command,
  ExecOptions,
  ExecResult,
  RawProcess,
  RawShell,
  RunProcess,
} from "./types.js";

export { DEFAULT_TIMEOUT_MS } from "./command-run.js";

export function runTagFor(runId: string, node: string): string {
  return `${runId}@${node}`;
}

/** Writes a heartbeat byte every HEARTBEAT_INTERVAL_MS to a command's own channel (its watchdog
 * reads them), and one at once where `now`; returns the stop. A command's watchdog needs none
 * at once (it waits HEARTBEAT_TIMEOUT_S for the first): each byte it reads costs the node two
 * processes (`timeout` and `dd`), and most commands end before the first interval. */
export function heartbeat(proc: RawProcess, beat = "h", now = true): () => void {
  const write = () => {
    try {
      proc.write(beat);
    } catch {
      /* the channel is gone: its watchdog sees EOF and does its job */
    }
  };
  if (now) write();
  const t = setInterval(write, HEARTBEAT_INTERVAL_MS);
  t.unref();
  return () => clearInterval(t);
}

/** Hands a started process's output to a command run. Registered after everything else:
 * output that came with the channel's confirmation is handed over at once, and the marker in
 * it starts the deadline, so the run must be armed by then. */
export function pipeTo(proc: RawProcess, run: CommandRun): void {
  proc.onStdout((b) => run.onStdout(b));
  proc.onStderr((b) => run.onStderr(b));
}

export class ManagedExecutor {
  constructor(
    private readonly shell: RawShell,
    private readonly node: NodeSpec,
    readonly runId: string,
    /** The connection's own death, so waits never outlive it. */
    private readonly lost: () => SlicecheckError | null,
  ) {}

  get runTag(): string {
    return runTagFor(this.runId, this.node.name);
  }

  /** What a command run needs from this executor (the supervisor's fallback kills too). */
  runDeps(supervised = false) {
    return {
      node: this.node,
      runId: this.runId,
      runTag: this.runTag,
      kill: (_cmdTag: string, script: string) => this.control(script),
      lost: this.lost,
      supervised,
    };
  }

  async exec(command: Command, opts: ExecOptions = {}): Promise<ExecResult> {
    const run = new CommandRun(this.runDeps(), command, opts);
    const opened = Date.now();
    const proc = await this.shell.start(run.line);
    // The channel's stdin carries the command's heartbeats; the command reads /dev/null.
    const stop = heartbeat(proc, "h", false);
    run.begin(opened);
    pipeTo(proc, run);
    try {
      return await run.finish(await proc.done);
    } finally {
      stop();
      run.dispose();
    }
  }

  /** Kills every process tagged with `runTag` (this run's by default); returns how many. */
  async killRun(runTag = this.runTag): Promise<number> {
    const out = await this.control(killRunScript(runTag));
    const m = /killed=(\d+)/.exec(out);
    return m ? Number(m[1]) : 0;
  }

  async listRun(runTag: string): Promise<RunProcess[]> {
    const out = await this.control(listRunScript(runTag));
    return out
      .split("\n")
      .filter(Boolean)
      .map((l) => {
        const [pid, ...cmd] = l.split("\t");
        return { pid: Number(pid), command: cmd.join("\t").trim() };
      });
  }

  /** A control script: untagged (so it never matches what it looks for), privileged when the
   * node needs sudo to see and signal the run's processes. */
  async control(script: string): Promise<string> {
    const sudo = this.node.become === "sudo";
    const p = await this.shell.start(`${sudo ? "sudo -n " : ""}sh -c ${quote(script)}`);
    let out = "";
    p.onStdout((b) => {
      out += b.toString();
    });
    p.onStderr(() => {});
    p.end();
    await p.done;
    return out;
  }
}
