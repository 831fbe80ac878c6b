// Shared test helpers: real captures (first line `# source: …` dropped), a simulated node in a
// temporary state directory, and nvidiaSmiMain run in-process.

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { nvidiaSmiMain } from "../../src/nvsmi/cli.js";
import {
  type InitOptions,
  initState,
  readState,
  type SimGpu,
  type SimState,
  writeState,
} from "../../src/nvsmi/state.js";

const here = dirname(fileURLToPath(import.meta.url));
export const REPO = join(here, "..", "..", "..");
const CAPTURES = join(REPO, "fixtures", "captures");
const LOCAL = join(here, "fixtures");

function body(file: string): string {
  const text = readFileSync(file, "utf8");
  if (!text.startsWith("# source:")) throw new Error(`${file} has no '# source:' line`);
  return text.slice(text.indexOf("\n") + 1);
}

/** The captured text of fixtures/captures/<name>, without its source line. */
export function capture(name: string): string {
  return body(join(CAPTURES, name));
}

/** A capture kept with these tests (read from the reference library, source line included). */
export function localCapture(name: string): string {
  return body(join(LOCAL, name));
}

/** Pinned clock for the table's timestamp line. */
export function at(y: number, mo: number, d: number, h: number, mi: number, s: number) {
  return () => new Date(y, mo - 1, d, h, mi, s);
}

const dirs: string[] = [];

export function cleanupNodes(): void {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

export interface RunResult {
  out: string;
  err: string;
  code: number;
}

export class SimNode {
  readonly dir: string;
  now: () => Date = () => new Date(2026, 0, 1, 0, 0, 0);

  constructor(opts: Omit<InitOptions, "node" | "gpus"> & { node?: string; gpus?: number }) {
    this.dir = mkdtempSync(join(tmpdir(), "slicecheck-nvsmi-"));
    dirs.push(this.dir);
    initState(this.dir, { node: "sim01", gpus: 1, ...opts });
  }

  /** `args` as one string split at blanks, or as argv when a word holds a blank. */
  async run(args: string | string[], uid = 0): Promise<RunResult> {
    let out = "";
    let err = "";
    const argv = Array.isArray(args) ? args : args.trim() === "" ? [] : args.trim().split(/\s+/);
    const code = await nvidiaSmiMain(argv, {
      stateDir: this.dir,
      stdout: (s) => {
        out += s;
      },
      stderr: (s) => {
        err += s;
      },
      uid,
      now: this.now,
    });
    return { out, err, code };
  }

  /** Runs commands that must succeed (setting the node up the way the capture's user did). */
  async setup(...commands: string[]): Promise<void> {
    for (const c of commands) {
      const r = await this.run(c);
      if (r.code !== 0) throw new Error(`setup '${c}' failed (${r.code}): ${r.out}${r.err}`);
    }
  }

  state(): SimState {
    return readState(this.dir);
  }

  /** Direct edits, for what the capture's hardware had: UUIDs, bus IDs, telemetry. */
  edit(fn: (s: SimState) => void): void {
    const s = readState(this.dir);
    fn(s);
    writeState(this.dir, s);
  }

  gpu(fn: (g: SimGpu) => void, index = 0): void {
    this.edit((s) => {
      const g = s.gpus[index];
      if (!g) throw new Error(`no GPU ${index}`);
      fn(g);
    });
  }

  /** Give the CI of GI `gi` the MIG UUID the capture shows (real ones cannot be derived). */
  setCiUuid(gi: number, ci: number, uuid: string, index = 0): void {
    this.gpu((g) => {
      const c = g.gis.find((x) => x.id === gi)?.cis.find((x) => x.id === ci);
      if (!c) throw new Error(`no CI ${gi}/${ci}`);
      c.uuid = uuid;
    }, index);
  }
}

/** Captures copied from documentation lost their trailing blanks; compare those without them. */
export function trimRight(text: string): string {
  return text
    .split("\n")
    .map((l) => l.trimEnd())
    .join("\n");
}

/** Lines of `text` without the first (the timestamp some captures cropped). */
export function withoutFirstLine(text: string): string {
  return text.slice(text.indexOf("\n") + 1);
}
