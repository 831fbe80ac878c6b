// Runs commands through a RawShell with the remote-process discipline: tags, a deadline that
// starts when the command starts on the node, kill by a second channel, and a heartbeat
// watchdog that shares each command's own channel (one channel per command).
import { randomBytes } from "node:crypto";
import { SlicecheckError } from "../errors.js";
import type { NodeSpec } from "../inventory/types.js";
import { quote } from "../util/shell.js";
import {
  EndRecordSplitter,
  HEARTBEAT_INTERVAL_MS,
  killCommandScript,
  killRunScript,
  listRunScript,
  scanPgidMarker,
  wrapCommand,
} from "./remote-scripts.js";
import type { Command, ExecOptions, ExecResult, RawShell, RunProcess } from "./types.js";

export const DEFAULT_TIMEOUT_MS = 120_000;
/** How long a login shell may take before the command's own deadline starts counting. */
const LOGIN_ALLOWANCE_MS = 60_000;
/** The node's own deadline trails ours, so that our kill (with evidence) normally wins. */
const NODE_DEADLINE_SLACK_S = 10;

export function runTagFor(runId: string, node: string): string {
  return `${runId}@${node}`;
}

/** The kill script's `alive=N`: whether the command still ran when the kill reached the node. */
function aliveOf(out: string): boolean | null {
  const m = /alive=(\d+)/.exec(out);
  return m ? Number(m[1]) > 0 : null;
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
      stdin: opts.stdin,
      record: opts.record,
      gate: opts.gate,
    });
    const opened = Date.now();
    const proc = await this.shell.start(line);
    // The channel's stdin carries the command's heartbeats (its watchdog reads them); the
    // command itself reads /dev/null, so nothing can wait on stdin.
    proc.write("h");
    const beat = setInterval(() => {
      try {
        proc.write("h");
      } catch {
        /* the channel is gone: its watchdog sees EOF and does its job */
      }
    }, HEARTBEAT_INTERVAL_MS);
    beat.unref();

    let stdout = "";
    let stderr = "";
    let pgid: number | null = null;
    let markerDone = false;
    let pendingErr = "";
    const stdoutDec = new TextDecoder();
    const stderrDec = new TextDecoder();
    let timedOut = false;
    let cancelled = false;
    let killing: Promise<string | null> | null = null;
    const kill = () => {
      killing ??= this.control(killCommandScript(cmdTag, pgid)).catch(() => null);
      return killing;
    };
    const ender = opts.record ? new EndRecordSplitter() : null;
    // The deadline counts from the command's start on the node (the wrapper's first line), not
    // from the channel's opening: a slow login shell (modules, conda, LDAP) must not eat it.
    // Until the wrapper answers, a generous bound on the login itself applies.
    let startedMs: number | null = null;
    let timer = setTimeout(() => {
      timedOut = true;
      void kill();
    }, timeoutMs + LOGIN_ALLOWANCE_MS);
    const onStarted = () => {
      startedMs = Date.now();
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        void kill();
      }, timeoutMs);
    };
    const onAbort = () => {
      cancelled = true;
      void kill();
    };
    // Registered last: output that came with the channel's confirmation is handed over at
    // once, and the marker in it starts the deadline, so everything above must exist by then.
    proc.onStdout((b) => {
      const s = stdoutDec.decode(b, { stream: true });
      stdout += s;
      opts.onStdout?.(s);
    });
    proc.onStderr((b) => {
      let s = stderrDec.decode(b, { stream: true });
      if (!markerDone) {
        pendingErr += s;
        const m = scanPgidMarker(pendingErr);
        if (m.noise) {
          stderr += m.noise;
          opts.onStderr?.(m.noise);
        }
        if (!m.found) {
          pendingErr = m.pending;
          return;
        }
        pgid = m.pgid;
        s = m.rest;
        markerDone = true;
        pendingErr = "";
        onStarted();
      }
      if (ender) s = ender.feed(s);
      stderr += s;
      if (s) opts.onStderr?.(s);
    });

    opts.signal?.addEventListener("abort", onAbort, { once: true });
    if (opts.signal?.aborted) onAbort();

    try {
      const { code, signal } = await proc.done;
      const killed = killing ? await killing : null;
      const rest = ender?.flush() ?? "";
      if (rest) {
        stderr += rest;
        opts.onStderr?.(rest);
      }
      const lost = this.lost();
      if (lost && code === null && signal === null) throw lost;
      if (cancelled) {
        // The only aborts are the run's interrupt (SIGINT/SIGTERM): say so, never a timeout.
        const why = opts.signal?.reason;
        throw new SlicecheckError(
          "INTERRUPTED",
          `${this.node.name}: interrupted${typeof why === "string" ? ` (${why})` : ""}: the command was stopped before it ended`,
          { node: this.node.name, cancelled: true },
        );
      }
      return {
        node: this.node.name,
        exitCode: code,
        signal,
        stdout,
        stderr: stderr + pendingErr,
        durationMs: Date.now() - (startedMs ?? started),
        loginMs: startedMs === null ? null : startedMs - opened,
        timedOut,
        pgid,
        ...(ender ? { endRecord: ender.record } : {}),
        aliveAtKill: killed === null ? null : aliveOf(killed),
      };
    } finally {
      clearInterval(beat);
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
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
