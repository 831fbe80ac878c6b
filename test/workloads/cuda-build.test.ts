// The CUDA sources of the built-in workloads against the real nvcc: they compile for the MIG
// generations (sm_80 A100/A30, sm_90 H100/H200, sm_100 B200) with every warning an error, the
// build script produces working binaries, and the binaries start (--help and usage errors exit
// before any CUDA call, so no GPU is needed). Their lines must be the parser's: the printf
// formats and the crasher's modes are compared with builtin.ts here, without nvcc.

import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { quote } from "../../src/util/shell.js";
import {
  buildScript,
  defaultWorkloadsDir,
  parseBuildOutput,
  WORKLOADS,
  workloadSources,
} from "../../src/workloads/build.js";
import { BUILTIN_PRINTF, CRASHER_MODES } from "../../src/workloads/parsers/builtin.js";
import { tempDir } from "../helpers/tmp.js";

const run = promisify(execFile);
const SRC = defaultWorkloadsDir();
const ARCHS = ["80", "90", "100"];

function findNvcc(): string | undefined {
  for (const c of [process.env.NVCC, "/usr/local/cuda/bin/nvcc"]) if (c && existsSync(c)) return c;
  const r = spawnSync("sh", ["-c", "command -v nvcc"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : undefined;
}
const nvcc = findNvcc();

function needNvcc(ctx: Mocha.Context): string {
  if (nvcc === undefined) {
    console.log("      (no nvcc on this machine, not at /usr/local/cuda/bin or on PATH: skipped)");
    ctx.skip();
  }
  return nvcc as string;
}

/** A C string literal's value: enough for the escapes the formats use. */
function cString(literal: string): string {
  return literal.replace(/\\(n|"|\\)/g, (_m, c: string) => (c === "n" ? "\n" : c));
}

describe("cuda workloads: sources agree with the builtin parser", () => {
  const header = readFileSync(join(SRC, "slicecheck.cuh"), "utf8");

  it("prints with exactly the BUILTIN_PRINTF formats", () => {
    const defines: Record<string, string> = {};
    for (const m of header.matchAll(/^#define (SC_FMT_\w+) "((?:[^"\\]|\\.)*)"$/gm))
      defines[m[1]!] = cString(m[2]!);
    assert.deepEqual(
      {
        stress: defines.SC_FMT_STRESS,
        stressFinal: defines.SC_FMT_STRESS_FINAL,
        memhog: defines.SC_FMT_MEMHOG,
        memhogCheck: defines.SC_FMT_MEMHOG_CHECK,
        crasher: defines.SC_FMT_CRASHER,
        stopped: defines.SC_FMT_STOPPED,
        allreduce: defines.SC_FMT_ALLREDUCE,
        serve: defines.SC_FMT_SERVE,
        serveFinal: defines.SC_FMT_SERVE_FINAL,
      },
      { ...BUILTIN_PRINTF },
    );
    // Every tagged line goes through sc_line (printf + flush), with one of those formats.
    for (const w of WORKLOADS) {
      const text = readFileSync(join(SRC, `${w}.cu`), "utf8");
      const calls = [...text.matchAll(/sc_line\((\w+)/g)].map((m) => m[1]);
      assert.ok(calls.length > 0, `${w}.cu prints its lines`);
      for (const c of calls) assert.ok(c && c in defines, `${w}.cu: sc_line(${c})`);
      assert.doesNotMatch(text, /printf\([^)]*SLICECHECK/, `${w}.cu: no ad-hoc SLICECHECK line`);
    }
  });

  it("the crasher knows exactly the parser's modes", () => {
    const text = readFileSync(join(SRC, "crasher.cu"), "utf8");
    const list = /kModes\[\] = \{([^}]*)\}/.exec(text);
    assert.ok(list, "crasher.cu declares kModes");
    const modes = [...list[1]!.matchAll(/"([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(modes, [...CRASHER_MODES]);
  });
});

describe("cuda workloads: nvcc build", function () {
  // The first nvcc call of a cold machine reads the whole toolkit from disk.
  this.timeout(180_000);
  const out = tempDir("cuda");

  it(`compiles and links each workload for sm_${ARCHS.join(", sm_")}, warnings as errors`, async function () {
    const cc = needNvcc(this);
    const gencode = ARCHS.flatMap((a) => ["-gencode", `arch=compute_${a},code=sm_${a}`]);
    const started = Date.now();
    // One nvcc per file, all at once: they are independent and nvcc is single-threaded.
    const results = await Promise.all(
      WORKLOADS.map((w) =>
        run(
          cc,
          [
            "-O3",
            ...gencode,
            "-Werror",
            "all-warnings",
            "-Xcompiler",
            "-Wall,-Wextra,-Werror",
            "-o",
            join(out, w),
            join(SRC, `${w}.cu`),
          ],
          { maxBuffer: 16 << 20 },
        ).then(
          (r) => ({ w, ok: true, log: r.stderr }),
          (e: { stderr?: string; message: string }) => ({
            w,
            ok: false,
            log: e.stderr ?? e.message,
          }),
        ),
      ),
    );
    const seconds = (Date.now() - started) / 1000;
    console.log(
      `      nvcc: ${WORKLOADS.length} files x ${ARCHS.length} archs in ${seconds.toFixed(1)} s`,
    );
    for (const r of results) assert.ok(r.ok, `${r.w}.cu:\n${r.log}`);
    for (const w of WORKLOADS) {
      const help = spawnSync(join(out, w), ["--help"], { encoding: "utf8" });
      assert.equal(help.status, 0, `${w} --help: ${help.stderr}`);
      assert.match(help.stdout, new RegExp(`^usage: ${w} `));
    }
  });

  it("the build script builds every workload binary with the real nvcc, then reuses them", async function () {
    const cc = needNvcc(this);
    const home = tempDir("home");
    // PATH without the CUDA folder: the script must find nvcc where the packages put it, or be
    // told. Told here, so that a CI machine with nvcc elsewhere is covered too.
    const env = { HOME: home, PATH: "/usr/bin:/bin" };
    const script = buildScript({ sources: workloadSources(), archs: ["80"], nvcc: cc });
    const started = Date.now();
    const first = spawnSync("sh", ["-c", `sh -c ${quote(script)}`], {
      env,
      cwd: home,
      encoding: "utf8",
    });
    const seconds = (Date.now() - started) / 1000;
    console.log(
      `      build script (sm_80, ${WORKLOADS.length} files in parallel): ${seconds.toFixed(1)} s`,
    );
    assert.equal(first.status, 0, first.stderr);
    const built = parseBuildOutput(first.stdout, { node: "localhost", stderr: first.stderr });
    assert.deepEqual(built.origins, Object.fromEntries(WORKLOADS.map((w) => [w, "built"])));
    assert.ok(built.cache?.dir.startsWith(join(home, ".cache", "slicecheck", "workloads")));
    assert.match(built.cache?.release ?? "", /^\d+\.\d+$/);
    for (const w of WORKLOADS) {
      const help = spawnSync(built.binaries[w], ["--help"], { encoding: "utf8" });
      assert.equal(help.status, 0, `${w} --help: ${help.stderr}`);
      assert.match(help.stdout, /^usage: /);
      // A usage error is refused (exit 3) before CUDA is touched.
      const bad = spawnSync(built.binaries[w], ["--no-such-option"], { encoding: "utf8" });
      assert.equal(bad.status, 3, `${w} --no-such-option`);
      assert.match(bad.stderr, new RegExp(`^${w}: unknown argument: --no-such-option\n`));
    }
    const crasher = spawnSync(built.binaries.crasher, ["--mode", "segfault"], { encoding: "utf8" });
    assert.equal(crasher.status, 3);
    assert.match(crasher.stderr, /unknown mode: segfault/);
    const stress = spawnSync(built.binaries.stress, ["--duration", "10s"], { encoding: "utf8" });
    assert.equal(stress.status, 3, "10s is not a number of seconds");
    const serve = spawnSync(built.binaries.serve, ["--interval", "0"], { encoding: "utf8" });
    assert.equal(serve.status, 3);
    assert.match(serve.stderr, /^serve: --interval needs seconds > 0, got: 0\n/);
    const memhog = spawnSync(built.binaries.memhog, ["--bytes", "1G", "--fraction", "0.5"], {
      encoding: "utf8",
    });
    assert.equal(memhog.status, 3);
    assert.match(memhog.stderr, /not both/);

    const again = spawnSync("sh", ["-c", script], { env, cwd: home, encoding: "utf8" });
    const cached = parseBuildOutput(again.stdout);
    assert.deepEqual(cached.origins, Object.fromEntries(WORKLOADS.map((w) => [w, "cache"])));
    assert.deepEqual(cached.binaries, built.binaries);
  });
});
