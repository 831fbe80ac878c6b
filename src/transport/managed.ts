// Runs commands through a RawShell with the remote-process discipline: tags, deadline, kill by
// a second channel, and a heartbeat watchdog per connection.
import { randomBytes } from "node:crypto";
import { SlicecheckError } from "../errors.js";
import type { NodeSpec } from "../inventory/types.js";
import { quote } from "../util/shell.js";
import {
  HEARTBEAT_INTERVAL_MS,
  killCommandScript,
  killRunScript,
  listRunScript,
  PGID_MARKER,
  takePgidMarker,
  watchdogScript,
  wrapCommand,
} from "./remote-scripts.js";
import type {
  Command,
  ExecOptions,
  ExecResult,
  RawProcess,
  RawShell,
  RunProcess,
} from "./types.js";

export const DEFAULT_TIMEOUT_MS = 120_000;
/** The node's own deadline trails ours, so that our kill (with evidence) normally wins. */
const NODE_DEADLINE_SLACK_S = 10;

export function runTagFor(runId: string, node: string): string {
  return `${runId}@${node}`;
}

export class ManagedExecutor {
  private watchdog: RawProcess | null = null;
  private heartbeat: NodeJS.Timeout | null = null;

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

  private watchdogStarting: Promise<void> | null = null;
  /** Why the watchdog could not start, if it could not (reported by doctor-like callers). */
  watchdogError: unknown = null;

  /** Opens the watchdog channel. Not awaited by commands: its channel request goes out first on
   * the connection, so sshd starts it before any command, without a round trip of waiting. */
  startWatchdog(): Promise<void> {
    this.watchdogStarting ??= this.shell
      .start(watchdogScript(this.runTag, this.node.become === "sudo"))
      .then((wd) => {
        this.watchdog = wd;
        wd.write("h");
        this.heartbeat = setInterval(() => {
          try {
            wd.write("h");
          } catch {
            /* the connection is gone; the watchdog sees EOF and does its job */
          }
        }, HEARTBEAT_INTERVAL_MS);
        this.heartbeat.unref();
        wd.done.catch(() => {});
      })
      .catch((e: unknown) => {
        this.watchdogError = e;
      });
    return this.watchdogStarting;
  }

  /** EOF to the watchdog: it kills anything of this run still alive, then exits. We do not wait
   * for it: its EOF goes out before the connection closes, and it finishes on the node alone. */
  async stopWatchdog(): Promise<void> {
    await this.watchdogStarting;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    const wd = this.watchdog;
    this.watchdog = null;
    try {
      wd?.end();
    } catch {
      /* already gone */
    }
  }

  async exec(command: Command, opts: ExecOptions = {}): Promise<ExecResult> {
    const started = Date.now();
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const cmdTag = `${this.runId}.${randomBytes(6).toString("hex")}`;
    const sudo = opts.privileged === true && this.node.become === "sudo";
    const line = wrapCommand(command, {
      runTag: this.runTag,
      cmdTag,
      deadlineS: timeoutMs / 1000 + NODE_DEADLINE_SLACK_S,
      sudo,
      env: opts.env,
    });
    const proc = await this.shell.start(line);
    if (opts.stdin !== undefined) proc.write(opts.stdin);
    // EOF at once: a command waiting on stdin would otherwise hang until its deadline.
    proc.end();

    let stdout = "";
    let stderr = "";
    let pgid: number | null = null;
    let markerDone = false;
    let pendingErr = "";
    const stdoutDec = new TextDecoder();
    const stderrDec = new TextDecoder();
    proc.onStdout((b) => {
      const s = stdoutDec.decode(b, { stream: true });
      stdout += s;
      opts.onStdout?.(s);
    });
    proc.onStderr((b) => {
      let s = stderrDec.decode(b, { stream: true });
      if (!markerDone) {
        pendingErr += s;
        if (
          !pendingErr.includes("\n") &&
          PGID_MARKER.startsWith(pendingErr.slice(0, PGID_MARKER.length))
        )
          return;
        const taken = takePgidMarker(pendingErr);
        pgid = taken.pgid;
        s = taken.rest;
        markerDone = true;
        pendingErr = "";
      }
      stderr += s;
      if (s) opts.onStderr?.(s);
    });

    let timedOut = false;
    let cancelled = false;
    let killing: Promise<unknown> | null = null;
    const kill = () => {
      killing ??= this.killCommand(cmdTag, pgid).catch(() => {});
      return killing;
    };
    const timer = setTimeout(() => {
      timedOut = true;
      void kill();
    }, timeoutMs);
    const onAbort = () => {
      cancelled = true;
      void kill();
    };
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    if (opts.signal?.aborted) onAbort();

    try {
      const { code, signal } = await proc.done;
      if (killing) await killing;
      const lost = this.lost();
      if (lost && code === null && signal === null) throw lost;
      if (cancelled) {
        throw new SlicecheckError("COMMAND_TIMEOUT", `${this.node.name}: command cancelled`, {
          node: this.node.name,
          cancelled: true,
        });
      }
      return {
        node: this.node.name,
        exitCode: code,
        signal,
        stdout,
        stderr: stderr + pendingErr,
        durationMs: Date.now() - started,
        timedOut,
        pgid,
      };
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
    }
  }

  private async killCommand(cmdTag: string, pgid: number | null): Promise<void> {
    await this.control(killCommandScript(cmdTag, pgid));
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
  private async control(script: string): Promise<string> {
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
