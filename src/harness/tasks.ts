// A run as an ordered list of tasks, each of which may leave a teardown (as Playwright's runner
// does with its setup and teardown tasks): the teardowns run in reverse order whatever
// happened, on an error and on an interrupt. The first SIGINT/SIGTERM aborts the run's signal
// (workloads stop, teardowns run); the second stops waiting and says exactly what is left.
import { performance } from "node:perf_hooks";
import { sharedAbort } from "../util/abort.js";
import { Spans } from "./spans.js";

/** The exit code of a run stopped by `sig`: 128 + its number, as shells report it (SIGINT 130,
 * SIGTERM 143), so a scheduler or supervisor that sent SIGTERM sees its own signal. */
export function interruptExitCode(sig: NodeJS.Signals | null): number {
  return sig === "SIGTERM" ? 143 : 130;
}

export interface Teardown {
  name: string;
  /** The command that finishes this teardown by hand, printed after a second interrupt. */
  manual: string | null;
  run(): Promise<void>;
}

/** One named step of a run over a shared state: skipped when `when` says it is not needed. */
export interface RunTask<S> {
  name: string;
  when?(st: S): boolean;
  run(st: S): Promise<void>;
}

export class TaskList {
  private readonly teardowns: Teardown[] = [];
  private current: string | null = null;
  private tearing = false;
  // Every command of the run listens to this one signal (28 instances' workloads on 4 nodes at
  // once, each with its watchdog).
  readonly ac = sharedAbort();
  /** Where the run's time went: every task and teardown (`run --json` tasks). */
  readonly spans = new Spans();
  interrupted = false;
  /** The signal of the first interrupt: the run's exit code says which (interruptExitCode). */
  interruptedBy: NodeJS.Signals | null = null;

  get signal(): AbortSignal {
    return this.ac.signal;
  }

  /** Runs a task unless the run was interrupted; returns its value or null when skipped. */
  async task<T>(name: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T | null> {
    if (this.ac.signal.aborted) return null;
    // A task inside a task (the apply inside the layout): the outer one is current again after.
    const outer = this.current;
    this.current = name;
    const t0 = performance.now();
    try {
      return await fn(this.ac.signal);
    } finally {
      this.current = outer;
      this.spans.add(name, t0);
    }
  }

  /** Runs the tasks in order over one state; after an interrupt the rest are skipped. */
  async run<S>(list: readonly RunTask<S>[], st: S): Promise<void> {
    for (const t of list) {
      if (t.when && !t.when(st)) continue;
      await this.task(t.name, () => t.run(st));
    }
  }

  /** Registers what undoes a task; it runs at the end, after every later task's teardown. */
  teardown(t: Teardown): void {
    this.teardowns.push(t);
  }

  /** Teardowns in reverse order; one that fails never stops the others. */
  async tearDown(onError: (name: string, e: unknown) => void): Promise<void> {
    this.tearing = true;
    while (this.teardowns.length > 0) {
      const t = this.teardowns[this.teardowns.length - 1]!;
      this.current = t.name;
      const t0 = performance.now();
      try {
        await t.run();
      } catch (e) {
        onError(t.name, e);
      }
      this.spans.add(`teardown: ${t.name}`, t0);
      this.teardowns.pop();
    }
    this.current = null;
  }

  /** What is left to do by hand, for the message of a second interrupt. */
  leftover(): { doing: string | null; left: Teardown[] } {
    return { doing: this.current, left: [...this.teardowns].reverse() };
  }

  /** Installs the interrupt handlers; returns their removal. */
  onSignals(io: { err(line: string): void }, exit: (code: number) => void): () => void {
    let count = 0;
    const handler = (sig: NodeJS.Signals) => {
      count++;
      if (count === 1) {
        this.interrupted = true;
        this.interruptedBy = sig;
        io.err(
          `slicecheck: ${sig}: stopping the workloads, keeping what they measured, ${this.tearing ? "finishing the teardown" : "then restoring and writing the reports"} (interrupt again to stop waiting)`,
        );
        this.ac.abort(`${sig}`);
        return;
      }
      const { doing, left } = this.leftover();
      io.err(`slicecheck: ${sig} again: stopped waiting${doing ? ` during: ${doing}` : ""}.`);
      if (left.length === 0) io.err("Nothing was left to undo.");
      else {
        io.err("Left to do, in this order:");
        for (const t of left) io.err(`  - ${t.name}${t.manual ? `: ${t.manual}` : ""}`);
      }
      exit(interruptExitCode(sig));
    };
    process.on("SIGINT", handler);
    process.on("SIGTERM", handler);
    return () => {
      process.removeListener("SIGINT", handler);
      process.removeListener("SIGTERM", handler);
    };
  }
}
