// One command's life on the controller, whatever carries it (its own channel, managed.ts, or
// the node's supervisor, supervisor.ts): the wrapped shell text, the pgid marker that starts its
// deadline, its output decoded as it streams, the end record taken out of its stderr, one kill
// at most, and the ExecResult (or the error) it ends with. Shared so that both executors keep
// exactly one contract.
import { randomBytes } from "node:crypto";
import { SlicecheckError } from "../errors.js";
import type { NodeSpec } from "../inventory/types.js";
import { directStart } from "./direct-start.js";
import { isProcessGroup, killGroupScript } from "./group-kill.js";
import {
  EndRecordSplitter,
  GATE_MARKER,
  killCommandScript,
  scanPgidMarker,
  type WrapOptions,
  wrapCommand,
} from "./remote-scripts.js";
import type { Command, ExecOptions, ExecResult } from "./types.js";

export const DEFAULT_TIMEOUT_MS = 120_000;
/** How long a login shell may take before the command's own deadline starts counting. */
export const LOGIN_ALLOWANCE_MS = 60_000;
/** The node's own deadline trails ours, so that our kill (with evidence) normally wins. */
const NODE_DEADLINE_SLACK_S = 10;
/** After a group kill, how long the command may take to end before its kill by tag. */
export const GROUP_KILL_GRACE_MS = 3_000;

/** The kill script's `alive=N`: whether the command still ran when the kill reached the node. */
function aliveOf(out: string): boolean | null {
  const m = /alive=(\d+)/.exec(out);
  return m ? Number(m[1]) > 0 : null;
}

export interface CommandRunDeps {
  node: NodeSpec;
  runId: string;
  runTag: string;
  /** Runs `script`, the command's kill, on the node; resolves to its output. */
  kill: (cmdTag: string, script: string) => Promise<string | null>;
  /** The connection's own death, so waits never outlive it. */
  lost: () => SlicecheckError | null;
  /** Leave the per-command stdin watcher out: a supervisor watches its commands itself. */
  supervised?: boolean;
}

export class CommandRun {
  readonly cmdTag: string;
  readonly line: string;
  /** The same command as a supervisor's `r` request, where it can be one (direct-start.ts). */
  readonly direct: string | null;
  readonly timeoutMs: number;
  private readonly created = Date.now();
  private opened = this.created;
  private stdout = "";
  private stderr = "";
  private pgid: number | null = null;
  private markerDone = false;
  private pendingErr = "";
  private readonly outDec = new TextDecoder();
  private readonly errDec = new TextDecoder();
  private timedOut = false;
  private cancelled = false;
  private killing: Promise<string | null> | null = null;
  /** The kill by tag that follows a group kill the command outlived. */
  private fallback: NodeJS.Timeout | null = null;
  private disposed = false;
  private readonly ender: EndRecordSplitter | null;
  private startedMs: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** A gated command's stderr until its gate's line (GATE_MARKER) is whole; null once it was. */
  private gatePending: string | null;
  private readonly onAbort = () => {
    this.cancelled = true;
    void this.kill();
  };

  constructor(
    private readonly d: CommandRunDeps,
    command: Command,
    private readonly opts: ExecOptions,
  ) {
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.cmdTag = `${d.runId}.${randomBytes(6).toString("hex")}`;
    this.ender = opts.record ? new EndRecordSplitter() : null;
    this.gatePending = opts.record && opts.gate ? "" : null;
    const wrap: WrapOptions = {
      runTag: d.runTag,
      cmdTag: this.cmdTag,
      deadlineS: this.timeoutMs / 1000 + NODE_DEADLINE_SLACK_S,
      sudo: opts.privileged === true && d.node.become === "sudo",
      env: opts.env,
      stdin: opts.stdin,
      record: opts.record,
      gate: opts.gate,
      ...(d.supervised ? { noWatcher: true } : {}),
    };
    this.line = wrapCommand(command, wrap);
    this.direct = d.supervised ? directStart(command, wrap) : null;
  }

  kill(): Promise<string | null> {
    this.killing ??= this.killOnNode();
    return this.killing;
  }

  /** By its tag and group; by its group alone where the command stays in it and its group is
   * known (isProcessGroup). A group kill that leaves the command running (a process left the
   * group after all, and holds its output open) is followed by the kill by tag,
   * GROUP_KILL_GRACE_MS later. */
  private async killOnNode(): Promise<string | null> {
    const pgid = this.pgid;
    const byTag = () => this.d.kill(this.cmdTag, killCommandScript(this.cmdTag, pgid));
    if (!this.opts.staysInGroup || !isProcessGroup(pgid)) return byTag().catch(() => null);
    const out = await this.d.kill(this.cmdTag, killGroupScript(pgid)).catch(() => null);
    if (!this.disposed) {
      this.fallback = setTimeout(() => void byTag().catch(() => null), GROUP_KILL_GRACE_MS);
      this.fallback.unref();
    }
    return out;
  }

  private arm(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timedOut = true;
      void this.kill();
    }, ms);
  }

  /** The command was handed to the node: until it answers, a generous bound on the login
   * applies; the interrupt is listened to from now on. */
  begin(opened = Date.now()): void {
    this.opened = opened;
    this.arm(this.timeoutMs + LOGIN_ALLOWANCE_MS);
    this.opts.signal?.addEventListener("abort", this.onAbort, { once: true });
    if (this.opts.signal?.aborted) this.onAbort();
  }

  onStdout(b: Buffer): void {
    const s = this.outDec.decode(b, { stream: true });
    this.stdout += s;
    this.opts.onStdout?.(s);
  }

  onStderr(b: Buffer): void {
    let s = this.errDec.decode(b, { stream: true });
    if (!this.markerDone) {
      this.pendingErr += s;
      const m = scanPgidMarker(this.pendingErr);
      if (m.noise) {
        this.stderr += m.noise;
        this.opts.onStderr?.(m.noise);
      }
      if (!m.found) {
        this.pendingErr = m.pending;
        return;
      }
      this.pgid = m.pgid;
      s = m.rest;
      this.markerDone = true;
      this.pendingErr = "";
      // The deadline counts from the command's start on the node (the wrapper's first line),
      // not from the channel's opening: a slow login shell must not eat it.
      this.startedMs = Date.now();
      this.arm(this.timeoutMs);
    }
    if (this.gatePending !== null) {
      s = this.gateLine(s);
      if (this.gatePending !== null) return;
    }
    if (this.ender) s = this.ender.feed(s);
    this.stderr += s;
    if (s) this.opts.onStderr?.(s);
  }

  /** Takes the gate's line out of a gated command's stderr. Once it is there, the deadline
   * counts from the gate's opening: the timeout less the wait the gate was allowed, which was
   * only there for the gate. Without it (a command that failed before its gate), the whole
   * timeout stays from the command's start. */
  private gateLine(s: string): string {
    const buf = this.gatePending + s;
    const nl = buf.indexOf("\n");
    if (nl < 0 && GATE_MARKER.startsWith(buf)) {
      this.gatePending = buf;
      return "";
    }
    this.gatePending = null;
    if (nl < 0 || buf.slice(0, nl) !== GATE_MARKER) return buf;
    const waitMs = (this.opts.gate?.waitS ?? 0) * 1000;
    this.arm(Math.max(1000, this.timeoutMs - waitMs));
    return buf.slice(nl + 1);
  }

  /** The command ended (or its carrier did): its result, or the error that stands for it. */
  async finish(
    done: { code: number | null; signal: string | null },
    loginMs?: number | null,
  ): Promise<ExecResult> {
    const killed = this.killing ? await this.killing : null;
    const rest = (this.gatePending ?? "") + (this.ender?.flush() ?? "");
    this.gatePending = null;
    if (rest) {
      this.stderr += rest;
      this.opts.onStderr?.(rest);
    }
    const lost = this.d.lost();
    if (lost && done.code === null && done.signal === null) throw lost;
    if (this.cancelled) throw this.interrupted();
    return {
      node: this.d.node.name,
      exitCode: done.code,
      signal: done.signal,
      stdout: this.stdout,
      stderr: this.stderr + this.pendingErr,
      durationMs: Date.now() - (this.startedMs ?? this.created),
      loginMs:
        loginMs !== undefined
          ? loginMs
          : this.startedMs === null
            ? null
            : this.startedMs - this.opened,
      timedOut: this.timedOut,
      pgid: this.pgid,
      ...(this.ender ? { endRecord: this.ender.record } : {}),
      aliveAtKill: killed === null ? null : aliveOf(killed),
    };
  }

  /** The only aborts are the run's interrupt (SIGINT/SIGTERM): said so, never a timeout. */
  private interrupted(): SlicecheckError {
    const why = this.opts.signal?.reason;
    return new SlicecheckError(
      "INTERRUPTED",
      `${this.d.node.name}: interrupted${typeof why === "string" ? ` (${why})` : ""}: the command was stopped before it ended`,
      { node: this.d.node.name, cancelled: true },
    );
  }

  get started(): boolean {
    return this.startedMs !== null;
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.fallback) clearTimeout(this.fallback);
    this.opts.signal?.removeEventListener("abort", this.onAbort);
  }
}
