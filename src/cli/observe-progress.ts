// The progress of `slicecheck observe` on stderr, in progress-view.ts's style: on a terminal
// one line per node redrawn in place (log-update) with a bar of the time observed, its samples
// and the time left; elsewhere (a CI log, a pipe) a plain line per node at every quarter of the
// duration, so a long observation's log stays short. --json prints none.
import { formatEta } from "../harness/progress.js";
import type { Out } from "./context.js";
import { liveUpdate, type ViewMode } from "./progress-view.js";

export interface ObserveProgress {
  tick(node: string, elapsedMs: number, samples: number): void;
  message(line: string): void;
  stop(): void;
}

const BAR = 20;

export async function observeProgress(
  mode: ViewMode,
  io: Out,
  nodes: readonly string[],
  durationMs: number,
): Promise<ObserveProgress> {
  const width = Math.max(0, ...nodes.map((n) => n.length));
  const state = new Map(nodes.map((n) => [n, { elapsedMs: 0, samples: 0 }]));
  const line = (n: string) => {
    const s = state.get(n)!;
    const done = Math.min(1, s.elapsedMs / durationMs);
    const fill = Math.round(done * BAR);
    const left = formatEta(Math.max(0, (durationMs - s.elapsedMs) / 1000));
    return `${n.padEnd(width)}  [${"#".repeat(fill)}${"-".repeat(BAR - fill)}] ${String(Math.round(done * 100)).padStart(3)} %  ${s.samples} sample(s), ${left} left`;
  };
  if (mode === "off") return { tick: () => {}, message: (l) => io.err(l), stop: () => {} };
  if (mode === "plain") {
    const quarter = new Map<string, number>();
    return {
      tick: (n, elapsedMs, samples) => {
        state.set(n, { elapsedMs, samples });
        const q = Math.min(4, Math.floor((4 * elapsedMs) / durationMs));
        if ((quarter.get(n) ?? -1) < q) {
          quarter.set(n, q);
          io.err(`observe: ${line(n)}`);
        }
      },
      message: (l) => io.err(l),
      stop: () => {},
    };
  }
  const live = await liveUpdate(io.errStream ?? process.stderr);
  const draw = () => live(nodes.map(line).join("\n"));
  return {
    tick: (n, elapsedMs, samples) => {
      state.set(n, { elapsedMs, samples });
      draw();
    },
    message: (l) => {
      live.clear();
      io.err(l);
      draw();
    },
    stop: () => live.clear(),
  };
}
