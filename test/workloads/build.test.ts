// The workload build script, run for real under sh. nvcc and nvidia-smi are stood in for by
// small scripts here (the real nvcc run is in cuda-build.test.ts), so that every branch — arch
// detection, PATH binaries, compile failure, hostile paths — runs on any machine.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { isSlicecheckError } from "../../src/errors.js";
import type { Output } from "../../src/mig/apply/bundle.js";
import { LocalTransport } from "../../src/transport/local.js";
import { quote } from "../../src/util/shell.js";
import {
  archsFromComputeCap,
  BUILD_TAG,
  type BuildScriptOptions,
  buildScript,
  defaultWorkloadsDir,
  MAX_SCRIPT_BYTES,
  needsBuild,
  parseBuildOutput,
  WORKLOADS,
  type WorkloadName,
  type WorkloadOrigin,
  workloadSources,
} from "../../src/workloads/build.js";
import { buildProbe, builtins } from "../../src/workloads/node-run.js";
import { nodeSpec } from "../helpers/node.js";
import { tempDir } from "../helpers/tmp.js";

const base = tempDir("build");
let serial = 0;
function freshDir(name: string): string {
  const dir = join(base, `${name}-${serial++}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

function executable(path: string, text: string): string {
  writeFileSync(path, text);
  chmodSync(path, 0o755);
  return path;
}

/** Stands in for nvcc: logs its argv, "compiles" by copying the source, fails on request. */
function fakeNvcc(dir: string): string {
  return executable(
    join(dir, "nvcc"),
    `#!/bin/sh
printf '%s\\n' "$*" >> "$FAKE_NVCC_LOG"
if [ "$1" = --version ]; then echo "Cuda compilation tools, release 12.4, V12.4.131"; exit 0; fi
out=; src=
while [ $# -gt 0 ]; do case $1 in -o) out=$2; shift ;; *.cu) src=$1 ;; esac; shift; done
if [ -n "\${FAKE_NVCC_FAIL:-}" ] && [ "$src" = "$FAKE_NVCC_FAIL.cu" ]; then
  echo "$src(3): error: identifier \\"boom\\" is undefined" >&2; exit 1
fi
cp "$src" "$out" && chmod +x "$out"
`,
  );
}

/** Stands in for nvidia-smi: answers compute_cap and name queries from variables. */
function fakeNvidiaSmi(dir: string): void {
  executable(
    join(dir, "nvidia-smi"),
    `#!/bin/sh
case "$1" in
  --query-gpu=compute_cap) [ -n "\${FAKE_CAPS:-}" ] || exit 2; printf '%b' "$FAKE_CAPS" ;;
  --query-gpu=name) printf '%b' "\${FAKE_NAMES:-}" ;;
  *) exit 2 ;;
esac
`,
  );
}

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the script as the transport does: `sh -c <quoted script>` inside the login shell's -c. */
function run(script: string, env: Record<string, string>, cwd: string): Run {
  const r = spawnSync("sh", ["-c", `sh -c ${quote(script)}`], { env, cwd, encoding: "utf8" });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A node's environment: a temp HOME, a PATH with the stand-ins and the basic tools only. */
function node(opts: { caps?: string; names?: string; failing?: string } = {}) {
  const home = freshDir("home");
  const bin = freshDir("bin");
  fakeNvidiaSmi(bin);
  const log = join(home, "nvcc.log");
  const env: Record<string, string> = {
    HOME: home,
    PATH: `${bin}:/usr/bin:/bin`,
    FAKE_NVCC_LOG: log,
  };
  if (opts.caps !== undefined) env.FAKE_CAPS = opts.caps;
  if (opts.names !== undefined) env.FAKE_NAMES = opts.names;
  if (opts.failing !== undefined) env.FAKE_NVCC_FAIL = opts.failing;
  const nvcc = fakeNvcc(bin);
  return {
    home,
    bin,
    env,
    nvcc,
    nvccCalls: () => (existsSync(log) ? readFileSync(log, "utf8").trim().split("\n") : []),
  };
}

const sources = workloadSources();
/** Every workload with one origin: the expected answer stays right as workloads are added. */
const allOf = (origin: WorkloadOrigin) =>
  Object.fromEntries(WORKLOADS.map((w) => [w, origin])) as Record<WorkloadName, WorkloadOrigin>;

function script(o: Partial<BuildScriptOptions> = {}): string {
  return buildScript({ sources, archs: ["80"], ...o });
}

describe("workload build script", () => {
  it("reads every workload source and hashes names and contents", () => {
    assert.deepEqual(Object.keys(sources.files), [
      "allreduce.cu",
      "crasher.cu",
      "memhog.cu",
      "nccl_dl.cuh",
      "serve.cu",
      "slicecheck.cuh",
      "stress.cu",
      "train-step.cu",
    ]);
    assert.match(sources.hash, /^[0-9a-f]{64}$/);
    assert.equal(workloadSources().hash, sources.hash, "same files, same hash");
    assert.equal(defaultWorkloadsDir().replace(/\/$/, "").split("/").pop(), "workloads");
  });

  it("changes the cache key when a source changes, on both sides", () => {
    const dir = freshDir("src");
    cpSync(defaultWorkloadsDir(), dir, { recursive: true });
    writeFileSync(join(dir, "stress.cu"), `${sources.files["stress.cu"]}// one more line\n`);
    const changed = workloadSources(dir);
    assert.notEqual(changed.hash, sources.hash);

    const n = node();
    const first = parseBuildOutput(run(script({ nvcc: n.nvcc }), n.env, n.home).stdout);
    const second = parseBuildOutput(
      run(buildScript({ sources: changed, archs: ["80"], nvcc: n.nvcc }), n.env, n.home).stdout,
    );
    assert.ok(first.cache && second.cache);
    assert.notEqual(first.cache.key, second.cache.key);
    assert.notEqual(first.cache.dir, second.cache.dir);
    assert.deepEqual(second.origins, allOf("built"));
    // The "binary" of the fake nvcc is the source it was given: it arrived byte for byte.
    assert.equal(readFileSync(second.binaries.stress, "utf8"), changed.files["stress.cu"]);
  });

  it("passes sh -n, and stays under the size one shell argument may have", () => {
    for (const s of [
      script(),
      buildScript({ sources }),
      script({ cacheRoot: "/x y", nvcc: "/n" }),
    ]) {
      const r = spawnSync("sh", ["-n"], { input: s, encoding: "utf8" });
      assert.equal(r.status, 0, r.stderr);
      assert.ok(Buffer.byteLength(quote(s)) < MAX_SCRIPT_BYTES, "quoted script size");
    }
  });

  it("builds, then answers from the cache without calling nvcc again", () => {
    const n = node();
    const s = script({ nvcc: n.nvcc, archs: ["80", "90"] });
    const first = run(s, n.env, n.home);
    assert.equal(first.status, 0, first.stderr);
    const built = parseBuildOutput(first.stdout, { node: "gpu01" });
    assert.deepEqual(built.origins, allOf("built"));
    assert.ok(built.cache);
    assert.equal(
      built.cache.dir,
      join(n.home, ".cache", "slicecheck", "workloads", built.cache.key),
    );
    assert.deepEqual(built.cache.archs, ["80", "90"]);
    assert.equal(built.cache.release, "12.4");
    for (const w of WORKLOADS) assert.equal(built.binaries[w], join(built.cache.dir, w));
    const compiles = n.nvccCalls().filter((c) => c.includes(" -o "));
    assert.equal(compiles.length, WORKLOADS.length);
    for (const c of compiles)
      assert.match(
        c,
        /^-O3 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -o ([\w-]+) \1\.cu$/,
      );

    const again = parseBuildOutput(run(s, n.env, n.home).stdout);
    assert.deepEqual(again.origins, allOf("cache"));
    assert.deepEqual(again.binaries, built.binaries);
    assert.equal(
      n.nvccCalls().filter((c) => c.includes(" -o ")).length,
      WORKLOADS.length,
      "no new compile",
    );
    assert.deepEqual(
      readdirSync(join(n.home, ".cache", "slicecheck", "workloads")),
      [built.cache.key],
      "no build folder left behind",
    );
  });

  it("the probe, without the sources, answers as the script does, or says it must build", () => {
    const n = node();
    const probe = script({ nvcc: n.nvcc, probe: true });
    const full = script({ nvcc: n.nvcc });
    // The same text up to the build, without the 96 KB of sources.
    assert.ok(full.startsWith(probe.slice(0, probe.lastIndexOf("say need-build"))));
    assert.ok(!probe.includes("SLICECHECK_B64_END") && probe.length * 10 < full.length);
    assert.equal(spawnSync("sh", ["-n"], { input: probe, encoding: "utf8" }).status, 0);
    // Nothing built yet: it must build, and compiled nothing itself.
    const first = run(probe, n.env, n.home);
    assert.equal(first.status, 0, first.stderr);
    assert.ok(needsBuild(first.stdout), first.stdout);
    assert.deepEqual(n.nvccCalls(), ["--version"]);
    assert.ok(!needsBuild(run(full, n.env, n.home).stdout));
    // Built: its answer is the script's own, origins and paths and cache.
    const cached = run(probe, n.env, n.home);
    assert.ok(!needsBuild(cached.stdout));
    assert.deepEqual(
      parseBuildOutput(cached.stdout),
      parseBuildOutput(run(full, n.env, n.home).stdout),
    );
    assert.deepEqual(parseBuildOutput(cached.stdout).origins, allOf("cache"));
    // On PATH: the same, with no nvcc at all.
    const p = node();
    for (const w of WORKLOADS) executable(join(p.bin, `slicecheck-${w}`), "#!/bin/sh\n");
    const onPath = run(script({ nvcc: "/nonexistent/nvcc", probe: true }), p.env, p.home);
    assert.deepEqual(parseBuildOutput(onPath.stdout).origins, allOf("path"));
    // An error the script would report before its build is the probe's too.
    const none = run(script({ nvcc: "/opt/none/bin/nvcc", probe: true }), n.env, n.home);
    assert.throws(
      () => parseBuildOutput(none.stdout),
      (e: unknown) => isSlicecheckError(e, "TOOL_MISSING"),
    );
  });

  it("targets the node's GPUs: compute_cap, or the product name on old drivers", () => {
    const byCap = node({ caps: "9.0\n9.0\n" });
    const out = parseBuildOutput(
      run(buildScript({ sources, nvcc: byCap.nvcc }), byCap.env, byCap.home).stdout,
    );
    assert.deepEqual(out.cache?.archs, ["90"]);
    assert.ok(
      byCap.nvccCalls().some((c) => c.startsWith("-O3 -gencode arch=compute_90,code=sm_90 -o")),
    );

    const byName = node({ names: "NVIDIA A100-SXM4-80GB\nNVIDIA A100-SXM4-80GB\n" });
    const old = parseBuildOutput(
      run(buildScript({ sources, nvcc: byName.nvcc }), byName.env, byName.home).stdout,
    );
    assert.deepEqual(old.cache?.archs, ["80"]);

    const unknown = node({ names: "Tesla K80\n" });
    const r = run(buildScript({ sources, nvcc: unknown.nvcc }), unknown.env, unknown.home);
    assert.equal(r.status, 2);
    assert.throws(
      () => parseBuildOutput(r.stdout, { node: "gpu07" }),
      (e: unknown) =>
        isSlicecheckError(e, "NODE_COMMAND") && /gpu07: .*\(no-arch\).*archs/.test(e.message),
    );
  });

  it("lets pre-installed binaries on PATH win, and builds only what is missing", () => {
    const n = node();
    for (const w of WORKLOADS)
      executable(join(n.bin, `slicecheck-${w}`), "#!/bin/sh\necho simulated\n");
    // No nvcc at all: not needed.
    const all = run(script({ nvcc: "/nonexistent/nvcc" }), n.env, n.home);
    assert.equal(all.status, 0, all.stderr);
    const parsed = parseBuildOutput(all.stdout);
    assert.deepEqual(parsed.origins, allOf("path"));
    assert.equal(parsed.binaries.memhog, join(n.bin, "slicecheck-memhog"));
    assert.equal(parsed.cache, null);

    const partial = node();
    executable(join(partial.bin, "slicecheck-stress"), "#!/bin/sh\n");
    const mixed = parseBuildOutput(
      run(script({ nvcc: partial.nvcc }), partial.env, partial.home).stdout,
    );
    assert.deepEqual(mixed.origins, { ...allOf("built"), stress: "path" });
  });

  it("a node without nvcc is TOOL_MISSING, naming the node and what to install", () => {
    const n = node();
    const r = run(script({ nvcc: "/opt/none/bin/nvcc" }), n.env, n.home);
    assert.equal(r.status, 2);
    assert.throws(
      () => parseBuildOutput(r.stdout, { node: "gpu03", stderr: r.stderr }),
      (e: unknown) =>
        isSlicecheckError(e, "TOOL_MISSING") &&
        e.message.startsWith("gpu03: nvcc: /opt/none/bin/nvcc is not an executable file") &&
        /install the CUDA toolkit/.test(e.message) &&
        /slicecheck-stress/.test(e.message) &&
        e.context.node === "gpu03",
    );
  });

  it("a compile error is reported with nvcc's own lines, and leaves nothing cached", () => {
    const n = node({ failing: "memhog" });
    const r = run(script({ nvcc: n.nvcc }), n.env, n.home);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /memhog\.cu\(3\): error: identifier "boom" is undefined/);
    assert.throws(
      () => parseBuildOutput(r.stdout, { node: "gpu02" }),
      (e: unknown) =>
        isSlicecheckError(e, "NODE_COMMAND") &&
        /gpu02: building the workloads failed \(compile-failed\): .* memhog, for sm_80/.test(
          e.message,
        ) &&
        e.message.includes('memhog: memhog.cu(3): error: identifier "boom" is undefined'),
    );
    const root = join(n.home, ".cache", "slicecheck", "workloads");
    assert.deepEqual(readdirSync(root), [], "the failed build folder was removed");
  });

  describe("hostile values cannot inject", () => {
    const marker = "PWNED";
    const hostile = [
      `x'; touch ${marker}; '`,
      `$(touch ${marker})`,
      `\`touch ${marker}\``,
      `a b"; touch ${marker}; "`,
    ];

    it("nvcc paths and cache folders are taken literally", () => {
      for (const h of hostile) {
        const n = node();
        const nvccDir = join(n.home, h);
        mkdirSync(nvccDir, { recursive: true });
        const nvcc = fakeNvcc(nvccDir);
        const cacheRoot = join(n.home, `cache ${h}`);
        const r = run(script({ nvcc, cacheRoot }), n.env, n.home);
        assert.equal(r.status, 0, r.stderr);
        const out = parseBuildOutput(r.stdout);
        assert.ok(out.cache?.dir.startsWith(`${cacheRoot}/`), out.cache?.dir);
        assert.ok(existsSync(out.binaries.crasher));
        assert.ok(!existsSync(join(n.home, marker)), `injected through ${h}`);

        const missing = run(script({ nvcc: join(n.home, h, "none") }), n.env, n.home);
        assert.throws(
          () => parseBuildOutput(missing.stdout),
          (e: unknown) => isSlicecheckError(e, "TOOL_MISSING"),
        );
        assert.ok(!existsSync(join(n.home, marker)), `injected through ${h}`);
      }
    });

    it("source contents travel as data, byte for byte", () => {
      const dir = freshDir("hostile-src");
      cpSync(defaultWorkloadsDir(), dir, { recursive: true });
      const evil = [
        "// it's",
        `$(touch ${marker}) \`touch ${marker}\``,
        "SLICECHECK_B64_END",
        "'SLICECHECK_B64_END'",
        "EOF",
        "\\ \\\\ \" ' \t ünïcödé",
        "",
      ].join("\n");
      writeFileSync(join(dir, "crasher.cu"), evil);
      const n = node();
      const r = run(
        buildScript({ sources: workloadSources(dir), archs: ["90a"], nvcc: n.nvcc }),
        n.env,
        n.home,
      );
      assert.equal(r.status, 0, r.stderr);
      assert.equal(readFileSync(parseBuildOutput(r.stdout).binaries.crasher, "utf8"), evil);
      assert.ok(!existsSync(join(n.home, marker)));
    });

    it("file names, archs and multi-line paths are refused before any script exists", () => {
      const bad = (o: Partial<BuildScriptOptions>) =>
        assert.throws(
          () => script(o),
          (e: unknown) => isSlicecheckError(e, "USAGE"),
        );
      bad({ archs: ["90; touch PWNED"] });
      bad({ archs: ["$(id)"] });
      bad({ archs: ["9.0"] });
      bad({ nvcc: "/usr/bin/nvcc\ntouch PWNED" });
      bad({ cacheRoot: "" });
      bad({ sources: { ...sources, hash: "$(id)" } });
      bad({ sources: { ...sources, files: { ...sources.files, "$(id).cu": "" } } });
      bad({ sources: { files: { "stress.cu": "", "memhog.cu": "" }, hash: sources.hash } });

      const dir = freshDir("badname");
      cpSync(defaultWorkloadsDir(), dir, { recursive: true });
      writeFileSync(join(dir, "a b.cu"), "");
      assert.throws(
        () => workloadSources(dir),
        (e: unknown) => isSlicecheckError(e, "INTERNAL") && /a b\.cu/.test(e.message),
      );
    });
  });
});

describe("workload build output", () => {
  const dir = "/home/svc slicecheck/.cache/slicecheck/workloads/ab12";
  const good = [
    "some login noise",
    `${BUILD_TAG} cache key=ab12 archs=80,90 release=12.4 dir=${dir}`,
    `${BUILD_TAG} bin=stress origin=path path=/usr/local/bin/slicecheck-stress`,
    `${BUILD_TAG} bin=memhog origin=built path=${dir}/memhog`,
    `${BUILD_TAG} bin=crasher origin=cache path=${dir}/crasher`,
    `${BUILD_TAG} bin=allreduce origin=cache path=${dir}/allreduce`,
    `${BUILD_TAG} bin=train-step origin=built path=${dir}/train-step`,
    `${BUILD_TAG} bin=serve origin=built path=${dir}/serve`,
    `${BUILD_TAG} ok`,
    "",
  ];

  it("reads every path (train-step's name has a hyphen), their origins and the cache", () => {
    for (const text of [good.join("\n"), good.join("\r\n")])
      assert.deepEqual(parseBuildOutput(text), {
        binaries: {
          stress: "/usr/local/bin/slicecheck-stress",
          memhog: `${dir}/memhog`,
          crasher: `${dir}/crasher`,
          allreduce: `${dir}/allreduce`,
          "train-step": `${dir}/train-step`,
          serve: `${dir}/serve`,
        },
        origins: {
          stress: "path",
          memhog: "built",
          crasher: "cache",
          allreduce: "cache",
          "train-step": "built",
          serve: "built",
        },
        cache: { key: "ab12", archs: ["80", "90"], release: "12.4", dir },
      });
  });

  it("refuses output that stopped early or is garbled", () => {
    const nodeCommand = (text: string, pattern: RegExp) =>
      assert.throws(
        () => parseBuildOutput(text, { node: "gpu05" }),
        (e: unknown) => isSlicecheckError(e, "NODE_COMMAND") && pattern.test(e.message),
      );
    nodeCommand(good.slice(0, 4).join("\n"), /gpu05: .*stopped before it finished.*crasher/);
    nodeCommand(good.filter((l) => !l.endsWith(" ok")).join("\n"), /no 'slicecheck-build ok'/);
    nodeCommand("", /stopped before it finished/);
    nodeCommand(`${BUILD_TAG} bin=stress origin=somewhere path=/x\n`, /unexpected line/);
    nodeCommand(`${BUILD_TAG} bin=burner origin=path path=/x\n`, /unexpected line/);
    nodeCommand(`${BUILD_TAG} error=cache cannot create /x\n`, /\(cache\): cannot create \/x/);
  });

  it("reads compute capabilities as archs", () => {
    assert.deepEqual(archsFromComputeCap("9.0\n9.0\n8.0\r\n10.0\n12.0\n"), [
      "90",
      "80",
      "100",
      "120",
    ]);
    assert.deepEqual(archsFromComputeCap("[N/A]\n"), []);
  });
});

describe("built-in workloads on a node (builtins)", () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const k of ["PATH", "HOME", "FAKE_NVCC_LOG", "FAKE_CAPS"]) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });

  /** builtins() on a local node of `n`'s environment, and the commands it ran there. */
  async function builtinsOn(n: ReturnType<typeof node>, probed?: Promise<readonly Output[]>) {
    Object.assign(process.env, n.env, { FAKE_CAPS: "8.0\n" });
    const t = new LocalTransport(nodeSpec("b01", { host: "localhost", transport: "local" }), "r1");
    const ran: string[] = [];
    const exec = t.exec.bind(t);
    t.exec = (c, o) => {
      ran.push("shell" in c ? c.shell : c.argv.join(" "));
      return exec(c, o);
    };
    const built = await builtins(t, undefined, probed);
    return { built, sizes: ran.map((x) => Buffer.byteLength(x)) };
  }

  /** The probe's answer as a call that made it with other reads gives it (buildProbe). */
  function probeAnswer(n: ReturnType<typeof node>, timedOut = false): Output {
    const r = run(buildProbe().shell, { ...n.env, FAKE_CAPS: "8.0\n" }, n.home);
    return { stdout: r.stdout, stderr: r.stderr, exitCode: r.status, timedOut };
  }

  it("takes the probe's answer from another call, and asks again where it has none", async function () {
    this.timeout(30_000);
    const n = node();
    const built = await builtinsOn(n);
    assert.deepEqual(built.built.origins, allOf("built"));
    // Built: the answer given is the whole check, no command of its own.
    const given = await builtinsOn(n, Promise.resolve([probeAnswer(n)]));
    assert.deepEqual(given.built.origins, allOf("cache"));
    assert.deepEqual(given.sizes, []);
    // A call that failed, or a probe killed at that call's deadline: asked on its own.
    const failed = await builtinsOn(n, Promise.reject(new Error("lost")));
    assert.equal(failed.sizes.length, 1);
    assert.deepEqual(failed.built.origins, allOf("cache"));
    const late = await builtinsOn(n, Promise.resolve([probeAnswer(n, true)]));
    assert.equal(late.sizes.length, 1);
    // Nothing built on a fresh node: the answer says so, and the script is sent.
    const fresh = node();
    const first = await builtinsOn(fresh, Promise.resolve([probeAnswer(fresh)]));
    assert.deepEqual(first.built.origins, allOf("built"));
    assert.equal(first.sizes.length, 1);
    assert.ok(first.sizes[0]! > 50_000);
  });

  it("sends the sources only where the probe found no binaries", async function () {
    this.timeout(30_000);
    const n = node();
    const first = await builtinsOn(n);
    assert.deepEqual(first.built.origins, allOf("built"));
    // The probe, then the script with the sources.
    assert.equal(first.sizes.length, 2);
    assert.ok(first.sizes[0]! < 10_000 && first.sizes[1]! > 50_000, `${first.sizes}`);
    const again = await builtinsOn(n);
    assert.deepEqual(again.built.origins, allOf("cache"));
    assert.deepEqual(again.built.binaries, first.built.binaries);
    assert.equal(again.sizes.length, 1, "the probe alone answered");
  });
});
