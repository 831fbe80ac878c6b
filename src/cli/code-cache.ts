// Runs the bundled CLI (dist/cli-bundle/main.cjs, scripts/bundle.mjs) from V8's code cache.
// Node 20 compiles the 3.4 MB bundle anew on every start (95 ms here) and every function again
// as it is first called; `module.enableCompileCache` only came in Node 22. So bin/slicecheck.js
// compiles the bundle with vm.Script and the cache of an earlier start: measured on 2 cores,
// a run's first task began 170 ms sooner (median of nine, 516 -> 347 ms).
//
// Three things keep a cache from doing harm:
// - Its key is the bundle's build id (a hash of its text, written by the build on its first
//   line), Node's version and the CPU. V8's own check compares only the source's length, so a
//   rebuilt bundle of the same length would run the old functions.
// - Files are written whole (a temporary file, then a rename): many CLIs start at once in CI.
// - V8 still checks its version and flags and may reject a cache; then the bundle is compiled
//   as without one, and the cache written anew.
// A cache is written when the start had none it could use, and again after the first command,
// then after the first `run`: V8 caches the functions compiled so far, and the build's
// `--version` compiles few of those a run calls (from a cache made after a run, a run's first
// task began 0.04-0.13 s sooner).
// It goes beside the bundle, or where that folder is not writable (an install owned by root),
// under the user's own cache folder. Never in a shared folder such as /tmp: whoever writes the
// cache chooses the code that runs.
import { isAscii } from "node:buffer";
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import v8 from "node:v8";
import vm from "node:vm";

/** What the bundle runs its dynamic imports with (its `import()` calls, rewritten by the build):
 * Node 20 loses the loader of `import()` in code compiled from a cache. */
export type ImportHook = (specifier: string) => Promise<unknown>;

export interface LoadedBundle {
  exports: Record<string, unknown>;
  /** Whether V8 took the compiled code from a cache. */
  fromCache: boolean;
  /** Writes the cache if this start had none it could use, or after the first command, then the
   * first `run` (the CLI's arguments, to tell: RANKS); never throws (it is a speed-up). */
  saveCache(argv?: readonly string[]): void;
}

/** Who made a cache, by how much of the bundle its start calls: the build's (`--version`, no
 * command), any command's, a run's. A start of a higher rank makes the cache again, once each. */
const RANKS = ["other", "command", "run"] as const;
type MadeBy = (typeof RANKS)[number];

const MAGIC = "slicecheck-code-cache";
/** The build's first line: `// slicecheck-build <id>` (scripts/bundle.mjs). */
const BUILD_ID = /^\/\/ slicecheck-build ([0-9a-f]{16,64})\n/;
/** CommonJS's own parameters and the import hook, which the bundle's prelude reads. */
const PARAMS = "exports, require, module, __filename, __dirname, __slicecheckImportHook";

/** The key a cache must carry to be used: null for a bundle without a build id (never cached). */
export function cacheKey(source: string): string | null {
  const id = BUILD_ID.exec(source)?.[1];
  return id ? `${id} ${process.version} ${process.arch}` : null;
}

/** Where a cache may be: beside the bundle, then under the user's cache folder. */
export function cachePlaces(file: string, source: string, env = process.env): string[] {
  const id = BUILD_ID.exec(source)?.[1] ?? "none";
  const home = env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return [`${file}.cache`, join(home, "slicecheck", `${basename(file)}-${id}.cache`)];
}

/** A file's head: the magic, the key, and the command whose start made it. */
function head(key: string, madeBy: string): Buffer {
  return Buffer.from(`${MAGIC}\n${key}\nmade-by ${madeBy}\n`);
}

interface Cache {
  data: Buffer;
  madeBy: MadeBy;
}

/** The V8 data of the first place whose cache carries `key`, and who made it, else undefined. */
function readCache(places: string[], key: string): Cache | undefined {
  for (const place of places) {
    try {
      const file = readFileSync(place);
      for (const madeBy of RANKS) {
        const h = head(key, madeBy);
        if (file.subarray(0, h.length).equals(h)) return { data: file.subarray(h.length), madeBy };
      }
    } catch {
      // Absent or unreadable: the next place.
    }
  }
  return undefined;
}

/** Who `argv` (the CLI's arguments after node's and the script's) is: its first word that is no
 * option is its command. */
function madeByOf(argv: readonly string[]): MadeBy {
  const command = argv.find((a) => !a.startsWith("-"));
  return command === undefined ? "other" : command === "run" ? "run" : "command";
}

function writeCache(places: string[], key: string, madeBy: MadeBy, data: Buffer): void {
  const body = Buffer.concat([head(key, madeBy), data]);
  for (const place of places) {
    const tmp = `${place}.${process.pid}.tmp`;
    try {
      mkdirSync(dirname(place), { recursive: true });
      writeFileSync(tmp, body, { mode: 0o644 });
      renameSync(tmp, place);
      return;
    } catch {
      // Not writable here (the next place), and no temporary file left behind.
      try {
        rmSync(tmp, { force: true });
      } catch {}
    }
  }
}

/**
 * Compiles and runs the CommonJS bundle `file`, with the cache when one fits. `importHook` is a
 * function of a module loaded by Node itself (bin/slicecheck.js's `(s) => import(s)`).
 * SLICECHECK_NO_CODE_CACHE=1 neither reads nor writes a cache.
 */
export function loadBundle(file: string, importHook: ImportHook, env = process.env): LoadedBundle {
  // The cache made after a run keeps the functions it compiled; V8 would drop the bytecode of
  // those a run stops calling, its start's, after five major GCs. V8 checks a cache against its
  // flags, so every load sets this before it compiles.
  v8.setFlagsFromString("--no-flush-bytecode");
  // An ASCII bundle (the build makes it one: scripts/bundle.mjs asciiComments) is read as
  // latin1, the same text without UTF-8's decoding, and a one-byte string for V8.
  const bytes = readFileSync(file);
  const source = bytes.toString(isAscii(bytes) ? "latin1" : "utf8");
  const key = env.SLICECHECK_NO_CODE_CACHE === "1" ? null : cacheKey(source);
  const places = cachePlaces(file, source, env);
  const cache = key ? readCache(places, key) : undefined;
  const cachedData = cache?.data;
  // The wrapper is on the source's first line, the build id's comment: no line moves.
  const script = new vm.Script(`(function (${PARAMS}) {${source}\n})`, {
    filename: file,
    cachedData,
  });
  const fromCache = cachedData !== undefined && script.cachedDataRejected === false;
  const module = { exports: {} as Record<string, unknown> };
  const run = script.runInThisContext() as (...a: unknown[]) => void;
  run(module.exports, createRequire(file), module, file, dirname(file), importHook);
  return {
    exports: module.exports,
    fromCache,
    saveCache: (argv = []) => {
      const madeBy = madeByOf(argv);
      const higher = RANKS.indexOf(madeBy) > RANKS.indexOf(cache?.madeBy ?? "run");
      if (!key || (fromCache && !higher)) return;
      try {
        writeCache(places, key, madeBy, script.createCachedData());
      } catch {
        // A cache is a speed-up: the run's own result stands without it.
      }
    },
  };
}
