import type { NodeSpec } from "../inventory/types.js";
import type { EndRecord } from "./end-record.js";

/** What to run: an argv (each element shell-quoted) or, explicitly, a shell command line.
 * `bash`: the line runs under bash where the node has /bin/bash (else sh, so it must work in
 * both): for a loop that would otherwise start a process at every turn. Not with `record`. */
export type Command = { argv: readonly string[] } | { shell: string; bash?: boolean };

/** Commands that start together on the node (remote-scripts.ts WrapOptions.gate). */
export interface StartGate {
  /** Names the gate on the node: letters, digits, `.`, `_` and `-` only. */
  key: string;
  count: number;
  waitS: number;
}

export type { EndRecord } from "./end-record.js";

export interface ExecOptions {
  /** Local deadline; the node also gets a hard `timeout -k` a little later. Default 120 s. */
  timeoutMs?: number;
  /** Run through `sudo -n` when the node's inventory says `become: sudo`. */
  privileged?: boolean;
  /** Variables set with `env` on the node (sshd drops most variables sent over the protocol). */
  env?: Record<string, string>;
  stdin?: string;
  /** The node records the command's exit status and its start and end on its own clock
   * (ExecResult.endRecord): a workload's exit that reaches us after its deadline is judged by it. */
  record?: boolean;
  /** With `record`: start together with the other commands at this gate (WrapOptions.gate). */
  gate?: StartGate;
  onStdout?: (chunk: string) => void;
  onStderr?: (chunk: string) => void;
  signal?: AbortSignal;
  /**
   * The command starts nothing that leaves its process group (no setsid, no daemon), so its
   * kill (an abort, its deadline) signals the group alone (group-kill.ts), without scanning the
   * node's processes for its tag; a command still running 3 s after that gets the kill by tag
   * (command-run.ts), and the run's end still scans for the run's tag.
   */
  staysInGroup?: boolean;
  /**
   * A change to the node: run only while this controller's node lease holds, checked on the
   * node in the same command (throws LEASE_LOST otherwise). Transports without a lease (a
   * dry run, read-only commands) run it as it is.
   */
  leased?: boolean;
  /**
   * A read started beside the node lease's own command, before it answered: it waits on the
   * node until the lease is this run's, and throws LEASE_LOST (context `awaited`) when that
   * does not come within 20 s. Transports without a lease run it as it is.
   */
  awaitLease?: boolean;
}

/** What a read started beside the node lock carries (NodeSession.readsBesideLock): the lease
 * wait and its abort. The reads that may start so pass it on to their exec. */
export type BesideLockOptions = Pick<ExecOptions, "awaitLease" | "signal">;

export interface ExecResult {
  node: string;
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** From the command's start on the node (after the login shell) to its end. */
  durationMs: number;
  /** How long the node's login shell took before the command started (null: never started).
   * Under a node supervisor (supervisor.ts) its one login counts for its first command; the
   * others started without a login of their own: 0. */
  loginMs?: number | null;
  timedOut: boolean;
  /** Process group of the command on the node, when the wrapper reported it. */
  pgid: number | null;
  /** With `record`: the exit status and elapsed time the node recorded (null: none came). */
  endRecord?: EndRecord | null;
  /** After a deadline kill: whether the kill found the command still running on the node
   * (null: no kill was made, or its answer never came). */
  aliveAtKill?: boolean | null;
}

export interface Transport extends RawShell {
  readonly node: NodeSpec;
  readonly runId: string;
  /** Opens the connection (and its watchdog) if needed. Idempotent. */
  connect(): Promise<void>;
  exec(command: Command, opts?: ExecOptions): Promise<ExecResult>;
  /** Kills every process of this run (or of `runTag`) on the node. Returns how many it signalled. */
  killRun(runTag?: string): Promise<number>;
  /** Processes on the node tagged with `runTag` (`<runId>@<node>`). */
  listRun(runTag: string): Promise<RunProcess[]>;
  close(): Promise<void>;
  readonly kind: "ssh" | "local";
  /** Throws LEASE_LOST unless this controller still holds the node's lease (when it has one). */
  checkLease?(): Promise<void>;
  /** A node supervisor (supervisor.ts): many commands over one channel and one login. */
  supervise?(): Promise<Supervisor>;
}

/** Runs many commands on a node over one channel, each with exec's contract. */
export interface Supervisor {
  exec(command: Command, opts?: ExecOptions): Promise<ExecResult>;
  /** Ends it (after the phase's commands): nothing it started is left running. */
  close(): Promise<void>;
  /** Why its commands go one channel each instead (the node cannot run a supervisor: said in
   * each workload's log, never silently); null while it runs. */
  readonly fallback: string | null;
}

/** A started process on the node, transport-agnostic. */
export interface RawProcess {
  onStdout(cb: (chunk: Buffer) => void): void;
  onStderr(cb: (chunk: Buffer) => void): void;
  write(data: string): void;
  end(): void;
  /** Resolves when the process (channel) is finished. */
  done: Promise<{ code: number | null; signal: string | null }>;
}

/** Opens raw command channels on a node. The lifecycle discipline is built on top of this. */
export interface RawShell {
  start(commandLine: string): Promise<RawProcess>;
}

export interface RunProcess {
  pid: number;
  command: string;
}
