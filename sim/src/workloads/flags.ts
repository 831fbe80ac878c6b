// Option parsing of the built-in programs, as workloads/slicecheck.cuh does it: `--name VALUE`
// pairs, strict numbers (the whole argument, finite), byte counts with a binary K/M/G/T suffix,
// `--help` to stdout with exit 0, and every mistake as `<program>: <what>[: <arg>]` followed by
// the usage text on stderr, exit 3 (SC_EXIT_USAGE).

import type { ProgramCtx } from "./ctx.js";

export const EXIT_USAGE = 3;

export function parseDouble(text: string | undefined): number | undefined {
  if (text === undefined || !/^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/.test(text.trim())) {
    return undefined;
  }
  const v = Number(text);
  return Number.isFinite(v) ? v : undefined;
}

const SHIFT: Record<string, number> = { "": 0, k: 10, m: 20, g: 30, t: 40 };

export function parseBytes(text: string | undefined): number | undefined {
  const m = /^(\d+)([kKmMgGtT]?)$/.exec(text ?? "");
  if (!m) return undefined;
  const v = Number(m[1]) * 2 ** (SHIFT[(m[2] ?? "").toLowerCase()] ?? 0);
  return Number.isSafeInteger(v) ? v : undefined;
}

export function usageError(
  ctx: ProgramCtx,
  program: string,
  usage: string,
  what: string,
  arg?: string,
): never {
  ctx.stderr(`${program}: ${what}${arg !== undefined ? `: ${arg}` : ""}\n${usage}`);
  return ctx.exit(EXIT_USAGE);
}

/** Walks the program's arguments: `on(name, next)` handles one option, `next()` takes its value. */
export function eachOption(
  ctx: ProgramCtx,
  program: string,
  usage: string,
  on: (name: string, next: () => string) => void,
): void {
  const argv = ctx.argv;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--help" || a === "-h") {
      ctx.stdout(usage);
      ctx.exit(0);
    }
    on(a, () => {
      const v = argv[i + 1];
      if (v === undefined) usageError(ctx, program, usage, "missing value for", a);
      i++;
      return v;
    });
  }
}

/** The options of the programs that run for a while and report each interval (stress, serve):
 * `--duration S` (default 10), `--interval S` (default 1), `--plant-error`. */
export interface RunOptions {
  durationS: number;
  intervalS: number;
  plantError: boolean;
}

export function runOptions(ctx: ProgramCtx, program: string, usage: string): RunOptions {
  const o: RunOptions = { durationS: 10, intervalS: 1, plantError: false };
  eachOption(ctx, program, usage, (name, next) => {
    if (name === "--duration" || name === "--interval") {
      const raw = next();
      const v = parseDouble(raw);
      if (v === undefined || v <= 0)
        usageError(ctx, program, usage, `${name} needs seconds > 0, got`, raw);
      if (name === "--duration") o.durationS = v;
      else o.intervalS = v;
    } else if (name === "--plant-error") {
      o.plantError = true;
    } else {
      usageError(ctx, program, usage, "unknown argument", name);
    }
  });
  return o;
}
