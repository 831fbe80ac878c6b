// The local transport, for `host: localhost` (slicecheck running on the GPU node itself). It
// runs the same wrapped command lines as SSH does, through `sh -c` in a new session, so tags,
// deadlines, kill scripts and each command's watchdog behave exactly as they do remotely.
import type { NodeSpec } from "../inventory/types.js";
import { ManagedExecutor } from "./managed.js";
import { consumeStreams } from "./streams.js";
import { NodeSupervisor } from "./supervisor.js";
import type {
  Command,
  ExecOptions,
  ExecResult,
  RawProcess,
  RawShell,
  RunProcess,
  Supervisor,
  Transport,
} from "./types.js";

export class LocalTransport implements Transport, RawShell {
  readonly kind = "local";
  private readonly exec_: ManagedExecutor;
  private started: Promise<void> | null = null;

  constructor(
    readonly node: NodeSpec,
    readonly runId: string,
  ) {
    this.exec_ = new ManagedExecutor(this, node, runId, () => null);
  }

  connect(): Promise<void> {
    this.started ??= Promise.resolve();
    return this.started;
  }

  async exec(command: Command, opts?: ExecOptions): Promise<ExecResult> {
    await this.connect();
    return this.exec_.exec(command, opts);
  }

  /** A node supervisor on one channel of this connection (falls back to a channel each). */
  async supervise(): Promise<Supervisor> {
    await this.connect();
    return new NodeSupervisor(this, this.exec_, (c, o) => this.exec(c, o)).open();
  }

  async killRun(runTag?: string): Promise<number> {
    await this.connect();
    return this.exec_.killRun(runTag);
  }

  async listRun(runTag: string): Promise<RunProcess[]> {
    await this.connect();
    return this.exec_.listRun(runTag);
  }

  async close(): Promise<void> {
    // Nothing per connection: each command's watchdog shares its own channel.
  }

  async start(commandLine: string): Promise<RawProcess> {
    // detached: setsid(), so the shell's $$ is its process group, as under sshd.
    // execa is loaded on the first local command: an SSH-only run needs none of its 90 modules.
    const { execa } = await import("execa");
    const sub = execa("sh", ["-c", commandLine], {
      detached: true,
      buffer: false,
      reject: false,
      stdin: "pipe",
      cleanup: false,
    });
    const done = sub.then((r) => ({
      code: r.exitCode ?? null,
      signal: r.signal ?? null,
    }));
    return {
      ...consumeStreams(sub.stdout, sub.stderr),
      write: (d) => {
        if (sub.stdin && !sub.stdin.destroyed && sub.stdin.writable) sub.stdin.write(d);
      },
      end: () => sub.stdin?.end(),
      done,
    };
  }
}

export function isLocalHost(host: string): boolean {
  return host === "localhost";
}
