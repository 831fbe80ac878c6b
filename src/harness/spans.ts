// Where a run's time goes: one span per task, teardown and end step (records, reports), on the
// process's own clock (performance.now(): ms since this process started), so that the gaps
// between them (Node start-up and module load before the first, exit after the last) show too.
// `run --json` prints them as `tasks`; SLICECHECK_TRACE=1 prints each on stderr as it ends.
import { performance } from "node:perf_hooks";

export interface Span {
  name: string;
  /** When it began, in ms since this process started. */
  atMs: number;
  ms: number;
}

/** SLICECHECK_TRACE=1: one stderr line per span as it ends. */
export function trace(what: string, ms: number): void {
  if (process.env.SLICECHECK_TRACE) process.stderr.write(`[trace] ${what}: ${ms} ms\n`);
}

const round = (x: number) => Math.round(x * 10) / 10;

export class Spans {
  readonly list: Span[] = [];

  /** A span that began at `at` (performance.now()) and ends now. */
  add(name: string, at: number): void {
    const ms = round(performance.now() - at);
    this.list.push({ name, atMs: round(at), ms });
    trace(name, ms);
  }

  async time<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const at = performance.now();
    try {
      return await fn();
    } finally {
      this.add(name, at);
    }
  }

  timeSync<T>(name: string, fn: () => T): T {
    const at = performance.now();
    try {
      return fn();
    } finally {
      this.add(name, at);
    }
  }
}
