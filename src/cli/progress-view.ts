// The live progress of `slicecheck run` on stderr. On a terminal: one line per node, redrawn in
// place (log-update) four times a second, with the node's phase, its tests done and the time
// left; other messages are printed above it. Anywhere else (a CI log, a pipe): a plain line
// per node only when its phase changes, so a long run's log stays short and free of escape
// sequences. The numbers come from the harness's progress model; this file only draws them.
import { formatEta, type ProgressEvent, ProgressModel, progressLine } from "../harness/progress.js";
import type { Out } from "./context.js";

export type ViewMode = "tty" | "plain" | "off";

/** What log-update's createLogUpdate returns, as far as the views use it. */
export interface LiveUpdate {
  (text: string): void;
  clear(): void;
}

export interface ProgressView {
  event(e: ProgressEvent): void;
  /** A line for the person running it (a warning, a check that did not pass). */
  message(line: string): void;
  /** Removes the live lines (the end of the run is printed after them). */
  stop(): void;
}

/** `--json` and `--quiet` print no progress; a terminal that can redraw gets live lines. */
export function viewMode(
  o: { json?: boolean; quiet?: boolean; list?: boolean },
  io: Out,
  env = process.env,
): ViewMode {
  if (o.json || o.quiet || o.list) return "off";
  return io.errTty && env.TERM !== "dumb" ? "tty" : "plain";
}

/** Redraws at most this often: enough for a seconds countdown, little work for a big fleet. */
const REDRAW_MS = 250;

export async function progressView(mode: ViewMode, io: Out, now = Date.now): Promise<ProgressView> {
  const model = new ProgressModel();
  const started = now();
  const stamp = () => `[${((now() - started) / 1000).toFixed(1).padStart(6)}s]`;
  const width = () => Math.max(0, ...model.names().map((n) => n.length));
  if (mode === "off") return { event: () => {}, message: (l) => io.err(l), stop: () => {} };
  if (mode === "plain")
    return {
      event: (e) => {
        const a = model.apply(e);
        if (a.announce) io.err(`${stamp()} ${progressLine(model.node(a.node, now()), width())}`);
      },
      message: (l) => io.err(`${stamp()} ${l}`),
      stop: () => {},
    };
  const live = await liveUpdate(io.errStream ?? process.stderr);
  const draw = () => {
    const t = now();
    const names = model.names();
    if (names.length === 0) return;
    const lines = names.map((n) => progressLine(model.node(n, t), width()));
    const done = names.filter((n) => model.node(n, t).ended).length;
    lines.push(
      `${done}/${names.length} node(s) done, ${formatEta((t - started) / 1000)} elapsed, ETA ${formatEta(model.overallS(t))}`,
    );
    live(lines.join("\n"));
  };
  const timer = setInterval(draw, REDRAW_MS);
  timer.unref();
  return {
    event: (e) => void model.apply(e),
    message: (l) => {
      live.clear();
      io.err(l);
      draw();
    },
    stop: () => {
      clearInterval(timer);
      live.clear();
    },
  };
}

/**
 * A block of lines redrawn in place on the terminal. The cursor stays visible: hiding it
 * installs exit and signal handlers (cli-cursor), and a run's SIGINT handling must stay the
 * harness's own. A pseudo-terminal without a window size (script(1), `docker run -t` in CI)
 * reports 0 columns, and log-update would wrap every line away to nothing: such a terminal
 * gets 80. log-update is loaded here, on a terminal only: its string-width builds an
 * Intl.Segmenter as it loads (15-20 ms of a run's start-up, for `--json` and CI logs too).
 */
export async function liveUpdate(stream: NodeJS.WriteStream): Promise<LiveUpdate> {
  const { createLogUpdate } = await import("log-update");
  const sized = {
    get columns() {
      return stream.columns || 80;
    },
    get rows() {
      return stream.rows || 24;
    },
    write: (chunk: string) => stream.write(chunk),
  };
  return createLogUpdate(sized as unknown as NodeJS.WriteStream, { showCursor: true });
}
