// The bundled CLI runs from V8's code cache (src/cli/code-cache.ts). Each load here is a fresh
// Node process, as a start of the CLI is: V8's in-process compilation cache would otherwise
// answer in its place. The loader is the built one (dist/), which the CLI's entry imports.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const LOADER = join(import.meta.dirname, "..", "..", "dist", "cli", "code-cache.js");
const PRELUDE =
  'const __slicecheckImport = typeof __slicecheckImportHook === "function" ? __slicecheckImportHook : (s) => import(s);';

/** A bundle as the build writes one: its build id, strictness, the import prelude, a body. */
function bundle(id: string | null, body: string): string {
  const head = id === null ? "" : `// slicecheck-build ${id}\n`;
  return `${head}"use strict";\n${PRELUDE}\n${body}\n`;
}

interface Loaded {
  fromCache: boolean;
  value: unknown;
}

/** One start: loads `file`, calls its export `call`, saves the cache as the CLI's entry does
 * (with `argv`, the CLI's arguments), after `gcs` full collections (Node started with the flags
 * below when `gcs` is a number, 0 included: V8 rejects a cache made under other flags). */
function start(
  file: string,
  env: Record<string, string> = {},
  call = "value",
  argv: string[] = ["--version"],
  gcs?: number,
): Loaded {
  const script = `
    const { loadBundle } = await import(${JSON.stringify(LOADER)});
    const b = loadBundle(${JSON.stringify(file)}, (s) => import(s));
    const value = await b.exports[${JSON.stringify(call)}]();
    for (let i = 0; i < ${gcs ?? 0}; i++) globalThis.gc();
    b.saveCache(${JSON.stringify(argv)});
    console.log(JSON.stringify({ fromCache: b.fromCache, value }));`;
  // --stress-flush-code: V8 drops, at each collection, the bytecode of functions not running.
  const flags = gcs === undefined ? [] : ["--expose-gc", "--stress-flush-code"];
  const r = spawnSync(process.execPath, [...flags, "--input-type=module", "-e", script], {
    encoding: "utf8",
    env: { ...process.env, ...env },
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Loaded;
}

describe("the CLI bundle's code cache", function () {
  this.timeout(30_000);
  let dir = "";
  let env: Record<string, string> = {};
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "sc-cache-"));
    // The user's cache folder of these tests, so that nothing lands in the real one.
    env = { XDG_CACHE_HOME: join(dir, "user-cache") };
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("compiles a bundle once, then takes the compiled code from the cache beside it", () => {
    const file = join(dir, "main.cjs");
    writeFileSync(file, bundle("aa".repeat(16), "exports.value = () => 6 * 7;"));
    assert.deepEqual(start(file, env), { fromCache: false, value: 42 });
    const cache = readFileSync(`${file}.cache`);
    assert.match(cache.subarray(0, 80).toString("latin1"), /^slicecheck-code-cache\naa{31} v20/);
    assert.deepEqual(start(file, env), { fromCache: true, value: 42 });
  });

  it("does not run a cache of another build, even one of the same length", () => {
    // V8's own check compares the source's length only: the build id is what tells them apart.
    const file = join(dir, "main.cjs");
    writeFileSync(file, bundle("aa".repeat(16), "exports.value = () => 41;"));
    assert.equal(start(file, env).value, 41);
    const next = bundle("bb".repeat(16), "exports.value = () => 42;");
    assert.equal(next.length, readFileSync(file, "utf8").length);
    writeFileSync(file, next);
    assert.deepEqual(start(file, env), { fromCache: false, value: 42 });
    assert.deepEqual(start(file, env), { fromCache: true, value: 42 });
  });

  it("reads an ASCII bundle as latin1 and any other as UTF-8: the same text either way", () => {
    const file = join(dir, "main.cjs");
    // A string that decodes differently as latin1: "é" is two bytes in UTF-8.
    writeFileSync(file, bundle("dd".repeat(16), 'exports.value = () => ["é".length, "\\xe9"];'));
    assert.deepEqual(start(file, env).value, [1, "é"]);
    assert.deepEqual(start(file, env), { fromCache: true, value: [1, "é"] });
  });

  it("lets code compiled from the cache import modules, through the loader's hook", () => {
    const file = join(dir, "main.cjs");
    const body = 'exports.value = async () => (await __slicecheckImport("node:path")).sep;';
    writeFileSync(file, bundle("cc".repeat(16), body));
    assert.deepEqual(start(file, env), { fromCache: false, value: "/" });
    assert.deepEqual(start(file, env), { fromCache: true, value: "/" });
  });

  it("makes the cache again after the first command, then the first run, with what each compiled", () => {
    const file = join(dir, "main.cjs");
    // A run calls code that --version never does: V8 caches a function once it is compiled.
    const big = Array.from({ length: 400 }, (_, i) => `x = (x * 31 + ${i}) % 1000003;`).join(" ");
    const body = `exports.value = () => 1; exports.run = () => { let x = 1; ${big} return x > 0; };`;
    writeFileSync(file, bundle("ab".repeat(16), body));
    const cache = `${file}.cache`;
    const madeBy = () => /\nmade-by (\w+)\n/.exec(readFileSync(cache).toString("latin1"))?.[1];
    assert.deepEqual(start(file, env, "value", ["--version"], 0), { fromCache: false, value: 1 });
    const built = statSync(cache);
    assert.equal(madeBy(), "other");
    // A command (exec here) makes it again once; the same again, or --help, leave it.
    start(file, env, "value", ["exec", "-w", "n1", "--", "true"], 0);
    const afterExec = statSync(cache);
    assert.equal(madeBy(), "command", "the cache was not made again after the first command");
    start(file, env, "value", ["exec"], 0);
    start(file, env, "value", ["--help"], 0);
    assert.equal(statSync(cache).ino, afterExec.ino, "the command's cache was written again");
    // Collections after the run's call, as a long run makes: its function is kept all the same.
    assert.deepEqual(start(file, env, "run", ["run", "-i", "inv.yaml"], 8), {
      fromCache: true,
      value: true,
    });
    const afterRun = statSync(cache);
    assert.equal(madeBy(), "run", "the cache was not made again after the run");
    assert.ok(afterRun.size > built.size + 1000, `${afterRun.size} vs ${built.size}`);
    // Made after a run, it stays: neither the next run nor another command writes it again.
    start(file, env, "run", ["run"], 0);
    start(file, env, "value", ["list"], 0);
    assert.equal(statSync(cache).ino, afterRun.ino, "the run's cache was written again");
    assert.deepEqual(start(file, env, "run", ["run"], 0), { fromCache: true, value: true });
  });

  it("writes the cache under the user's cache folder where the bundle's folder refuses it", () => {
    const file = join(dir, "main.cjs");
    writeFileSync(file, bundle("dd".repeat(16), "exports.value = () => 1;"));
    mkdirSync(`${file}.cache`); // a folder where the file would go: neither read nor replaced
    assert.equal(start(file, env).fromCache, false);
    const user = join(dir, "user-cache", "slicecheck", `main.cjs-${"dd".repeat(16)}.cache`);
    assert.ok(existsSync(user), "no cache under the user's cache folder");
    assert.equal(start(file, env).fromCache, true);
  });

  it("compiles anew over a damaged cache, and replaces it", () => {
    const file = join(dir, "main.cjs");
    writeFileSync(file, bundle("ee".repeat(16), "exports.value = () => 2;"));
    start(file, env);
    const cache = readFileSync(`${file}.cache`);
    let head = 0;
    for (let line = 0; line < 3; line++) head = cache.indexOf("\n", head) + 1;
    writeFileSync(`${file}.cache`, Buffer.concat([cache.subarray(0, head), Buffer.alloc(4096)]));
    assert.deepEqual(start(file, env), { fromCache: false, value: 2 });
    assert.deepEqual(start(file, env), { fromCache: true, value: 2 });
  });

  it("caches nothing for a bundle without a build id, or with SLICECHECK_NO_CODE_CACHE=1", () => {
    const plain = join(dir, "plain.cjs");
    writeFileSync(plain, bundle(null, "exports.value = () => 3;"));
    assert.deepEqual(start(plain, env), { fromCache: false, value: 3 });
    assert.deepEqual(start(plain, env), { fromCache: false, value: 3 });
    const off = join(dir, "off.cjs");
    writeFileSync(off, bundle("ff".repeat(16), "exports.value = () => 4;"));
    const no = { ...env, SLICECHECK_NO_CODE_CACHE: "1" };
    assert.deepEqual(start(off, no), { fromCache: false, value: 4 });
    assert.ok(!existsSync(`${off}.cache`), "a cache was written with SLICECHECK_NO_CODE_CACHE=1");
    start(off, env);
    assert.deepEqual(start(off, no), { fromCache: false, value: 4 });
  });
});
