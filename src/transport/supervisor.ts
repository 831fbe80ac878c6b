// The controller's side of the node's supervisor (supervisor-script.ts): one channel, one login
// per node per phase, however many workloads the phase starts there. Each command keeps
// ManagedExecutor.exec's contract (CommandRun is shared): its deadline counts from its pgid
// marker, an abort is INTERRUPTED, a lost connection throws the transport's error, its end
// record and its streamed output are the same. Kills go to the supervisor as requests (no new
// login); once it is gone, through a control channel as before.
import { SlicecheckError } from "../errors.js";
import { quote } from "../util/shell.js";
import { CommandRun, LOGIN_ALLOWANCE_MS } from "./command-run.js";
import { heartbeat, type ManagedExecutor } from "./managed.js";
import { type Frame, FrameParser } from "./supervisor-frames.js";
import { supervisorCommand } from "./supervisor-perl.js";
import { escapeLine, SUPERVISOR_ID } from "./supervisor-script.js";
import type {
  Command,
  ExecOptions,
  ExecResult,
  RawProcess,
  RawShell,
  Supervisor,
} from "./types.js";

type Done = { code: number | null; signal: string | null };

interface Sink {
  out(stream: "stdout" | "stderr", bytes: Buffer): void;
  exit(code: number): void;
  /** The supervisor ended before this id's exit frame. */
  gone(): void;
}

/** Lines of the supervisor's own that were no frame, kept for the report (at most this many). */
const MAX_GARBAGE = 20;

export class NodeSupervisor implements Supervisor {
  private proc: RawProcess | null = null;
  private readonly parser = new FrameParser();
  private readonly sinks = new Map<string, Sink>();
  private ended = false;
  private stopBeat: () => void = () => {};
  private loginMs: number | null = null;
  private firstUsed = false;
  private kills = 0;
  private stderr = "";
  /** Whether it takes `r` requests (perl's, with Time::HiRes: direct-start.ts). */
  private direct = false;
  /** Why commands go one channel each instead (the node cannot run a supervisor); null: it runs. */
  fallback: string | null = null;
  /** Lines that were no frame (a start-up file's echo, a corrupted write): reported, not fatal. */
  readonly garbage: string[] = [];

  constructor(
    private readonly shell: RawShell,
    private readonly managed: ManagedExecutor,
    /** One channel per command, as without a supervisor. */
    private readonly alone: (command: Command, opts?: ExecOptions) => Promise<ExecResult>,
  ) {}

  /** Starts the supervisor; sets `fallback` when it cannot run. Never throws for a node that
   * cannot run one, only for a connection that is lost. */
  async open(): Promise<this> {
    const t0 = Date.now();
    const proc = await this.shell.start(supervisorCommand(this.managed.runTag, this.sudo));
    this.fallback = await new Promise<string | null>((resolve) => {
      const timer = setTimeout(
        () => resolve(`no answer from the node's supervisor in ${LOGIN_ALLOWANCE_MS / 1000} s`),
        LOGIN_ALLOWANCE_MS,
      );
      const answer = (why: string | null) => {
        clearTimeout(timer);
        resolve(why);
      };
      proc.onStdout((b) => {
        for (const f of this.parser.feed(b)) {
          if (this.proc === null && f.kind === "ready") {
            this.loginMs = Date.now() - t0;
            this.direct = f.direct;
            this.proc = proc;
            answer(null);
          } else if (this.proc === null && f.kind === "cannot") answer(f.reason);
          else this.dispatch(f);
        }
      });
      proc.onStderr((b) => {
        this.stderr = (this.stderr + b.toString()).slice(-2000);
      });
      void proc.done.then(
        (d) => this.onEnded(d, answer),
        () => this.onEnded({ code: null, signal: null }, answer),
      );
    });
    if (this.fallback === null) this.stopBeat = heartbeat(proc, "h\n");
    else proc.end();
    return this;
  }

  private get sudo(): boolean {
    return this.managed.runDeps().node.become === "sudo";
  }

  private onEnded(d: Done, answer: (why: string | null) => void): void {
    this.ended = true;
    this.stopBeat();
    const err = this.stderr.trim().split("\n").pop() ?? "";
    const how = `exit ${d.code ?? d.signal ?? "unknown"}${err ? `: ${err}` : ""}`;
    answer(`the node's supervisor ended before it was ready (${how})`);
    // Later commands of the phase take a channel each.
    this.fallback ??= `the node's supervisor ended during the phase (${how})`;
    for (const s of [...this.sinks.values()]) s.gone();
    this.sinks.clear();
  }

  private dispatch(f: Frame): void {
    if (f.kind === "out") this.sinks.get(f.id)?.out(f.stream, f.bytes);
    else if (f.kind === "exit") {
      const s = this.sinks.get(f.id);
      this.sinks.delete(f.id);
      s?.exit(f.code);
    } else if (f.kind === "garbage" || f.kind === "cannot") {
      if (this.garbage.length < MAX_GARBAGE)
        this.garbage.push(f.kind === "garbage" ? f.line : f.reason);
    }
  }

  private get live(): boolean {
    return this.proc !== null && !this.ended;
  }

  private send(line: string): boolean {
    try {
      this.proc?.write(`${line}\n`);
      return true;
    } catch {
      return false;
    }
  }

  async exec(command: Command, opts: ExecOptions = {}): Promise<ExecResult> {
    if (!this.live) return this.alone(command, opts);
    const deps = this.managed.runDeps(true);
    const run = new CommandRun({ ...deps, kill: (t, p) => this.kill(t, p) }, command, opts);
    // Its tag is its id in the frames: a run id the frames cannot carry takes a channel.
    if (!SUPERVISOR_ID.test(run.cmdTag)) return this.alone(command, opts);
    const done = new Promise<Done>((resolve, reject) => {
      this.sinks.set(run.cmdTag, {
        out: (s, b) => (s === "stdout" ? run.onStdout(b) : run.onStderr(b)),
        exit: (code) => resolve({ code, signal: null }),
        gone: () =>
          deps.lost() ? resolve({ code: null, signal: null }) : reject(this.goneError()),
      });
    });
    // The supervisor's one login counts for its first command; the others start without one.
    const loginMs = this.firstUsed ? 0 : this.loginMs;
    this.firstUsed = true;
    const opened = Date.now();
    const direct = this.direct ? run.direct : null;
    this.send(
      direct === null
        ? `s ${run.cmdTag} ${escapeLine(run.line)}`
        : `r ${run.cmdTag} ${escapeLine(direct)}`,
    );
    run.begin(opened);
    try {
      return await run.finish(await done, run.started ? loginMs : null);
    } catch (e) {
      // The supervisor died under the command: it may still run on the node.
      if (e instanceof SlicecheckError && e.code === "CHANNEL") void run.kill();
      throw e;
    } finally {
      this.sinks.delete(run.cmdTag);
      run.dispose();
    }
  }

  private goneError(): SlicecheckError {
    const node = this.managed.runDeps().node.name;
    return new SlicecheckError(
      "CHANNEL",
      `${node}: the node's supervisor ended before the command did${this.stderr ? ` (${this.stderr.trim().split("\n").pop()})` : ""}; it was killed through a control channel`,
      { node },
    );
  }

  /** A kill request through the supervisor; through a control channel once it is gone. */
  private kill(cmdTag: string, script: string): Promise<string | null> {
    const control = () => this.managed.control(script).catch(() => null);
    const id = `k${++this.kills}.${cmdTag}`;
    if (!this.live || !SUPERVISOR_ID.test(id)) return control();
    return new Promise((resolve) => {
      let out = "";
      this.sinks.set(id, {
        out: (s, b) => {
          if (s === "stdout") out += b.toString();
        },
        exit: () => resolve(out),
        gone: () => resolve(control()),
      });
      const line = this.sudo ? `sudo -n sh -c ${quote(script)}` : script;
      if (!this.send(`k ${id} ${escapeLine(line)}`)) {
        this.sinks.delete(id);
        resolve(control());
      }
    });
  }

  /** Ends the phase: EOF on the supervisor's stdin; with nothing left running it just exits. */
  async close(): Promise<void> {
    this.stopBeat();
    const proc = this.proc;
    if (!proc || this.ended) return;
    try {
      proc.end();
    } catch {
      /* already gone */
    }
    await Promise.race([
      proc.done.catch(() => {}),
      new Promise((r) => setTimeout(r, 10_000).unref()),
    ]);
  }
}
