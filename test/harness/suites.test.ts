// Suites as users write them, run by `slicecheck run --suites FILE` against simulated nodes
// (real sshd): passing and failing user suites (exit codes, JUnit, Allure), --list and --grep,
// the interlocks guarding a fault-injecting suite, and diff catching a flipped isolation verdict.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CheckRecord } from "../../src/verdicts/checks.js";
import { cli, explain } from "../helpers/cli.js";
import { sshdSessions, useCluster } from "../helpers/cluster.js";

interface RunJson {
  runId: string;
  exitCode: number;
  counts: Record<string, number>;
  checks: CheckRecord[];
}

interface AllureResult {
  name: string;
  fullName: string;
  status: string;
  statusDetails?: { message?: string };
  labels: { name: string; value: string }[];
}

function allure(out: string): AllureResult[] {
  const dir = join(out, "allure-results");
  return readdirSync(dir)
    .filter((f) => f.endsWith("-result.json"))
    .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as AllureResult);
}

const SUITES = "test/fixtures/suites";
const LAYOUT = "test/fixtures/isolation-layout.yaml";

describe("user suites and the suite API (slicecheck run --suites FILE, real sshd)", function () {
  this.timeout(180_000);
  const c = useCluster([
    { gpu: "H100-80GB", driver: "580.65.06" },
    { gpu: "A100-80GB", driver: "535.183.01" },
  ]);
  let n = 0;
  const run = async (...args: string[]) => {
    const out = join(c.dir, `out${++n}`);
    const r = await cli(
      "run",
      "-i",
      c.inventoryPath,
      "--duration",
      "1",
      "--out",
      out,
      "--db",
      join(c.dir, "records.db"),
      ...args,
    );
    return { ...r, out };
  };
  const json = (stdout: string) => JSON.parse(stdout) as RunJson;

  it("a passing user suite: exit 0, its tests in JUnit and Allure, its measurement recorded", async () => {
    const r = await run("--suites", `${SUITES}/passing.mjs`, "--json");
    assert.equal(r.code, 0, r.stderr);
    const s = json(r.stdout);
    // per node: nvidia-smi, the stress, and one test per instance (MIG off: one whole GPU each)
    assert.equal(s.checks.length, 2 * 3, JSON.stringify(s.checks.map((x) => x.title)));
    assert.ok(s.checks.every((x) => x.status === "passed" && x.suite.endsWith("passing.mjs")));
    const smi = s.checks.find((x) => x.node === "sim01" && x.title === "answers nvidia-smi -L");
    assert.equal(smi?.figures.gpus, 1);
    const st = s.checks.find((x) => x.node === "sim02" && x.title.startsWith("stresses"))!;
    assert.ok((st.figures.tflops as number) > 1, JSON.stringify(st.figures));
    assert.ok(st.stopMs - st.startMs >= 1000, "the check spans its 1 s workload");
    const xml = readFileSync(join(r.out, "junit.xml"), "utf8");
    assert.match(xml, /<testsuites [^>]*tests="6" failures="0" errors="0"/);
    assert.match(xml, /name="site checks › sim01 › answers nvidia-smi -L"/);
    const res = allure(r.out);
    assert.equal(res.length, 6);
    assert.ok(res.every((x) => x.status === "passed"));
    const lines = readFileSync(join(r.out, "measurements.jsonl"), "utf8");
    assert.match(lines, /"metric":"site-tflops"/);
  });

  it("a failing user suite mixed with a built-in one: exit 1, the failure's code and message everywhere", async () => {
    const r = await run("--suites", `stress,${SUITES}/failing.mjs`);
    assert.equal(r.code, 1, r.stderr + r.stdout);
    assert.match(r.stdout, /FAILED \[SITE_POLICY\] .*failing\.mjs sim01: runs driver 999 or newer/);
    assert.match(r.stdout, /sim01 runs driver 580\.65\.06, older than 999/);
    assert.match(r.stdout, /^4 passed, 2 failed, 0 broken, 0 skipped$/m);
    assert.match(r.stdout, /run sc-\S+: FAILED/);
    const xml = readFileSync(join(r.out, "junit.xml"), "utf8");
    assert.match(
      xml,
      /<failure message="sim02 runs driver 535\.183\.01, older than 999" type="SITE_POLICY">/,
    );
    const failed = allure(r.out).filter((x) => x.status === "failed");
    assert.equal(failed.length, 2);
    assert.ok(failed.every((x) => x.statusDetails?.message?.startsWith("[SITE_POLICY] ")));
    assert.ok(allure(r.out).some((x) => x.fullName.includes("suites/stress.ts: stress > sim01")));
  });

  it("--list prints the tests per node, GPU and instance without running anything; --grep narrows it", async () => {
    // Nothing of a run's workloads either: neither their build check nor a node supervisor.
    // A suite without workloads (health) opens as many channels on the nodes to list its tests.
    const s0 = sshdSessions(c);
    const h = await cli("run", "-i", c.inventoryPath, "--suites", "health", "--list");
    assert.equal(h.code, 0, h.stderr);
    const s1 = sshdSessions(c);
    const r = await cli("run", "-i", c.inventoryPath, "--suites", "stress,nccl", "--list");
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      sshdSessions(c) - s1,
      s1 - s0,
      "--list of workload suites ran commands of its own",
    );
    assert.match(
      r.stdout,
      /^stress: sim01 › GPU 0 \(NVIDIA H100 80GB HBM3\) › whole GPU › computes without errors for the whole duration, at its share of the GPU$/m,
    );
    assert.match(
      r.stdout,
      /^nccl: sim02 › GPU 0 \(NVIDIA A100[^)]*\) › whole GPU › all_reduce_perf completes without wrong results$/m,
    );
    assert.match(r.stdout, /^4 test\(s\) in 2 suite\(s\) on 2 node\(s\)$/m);
    const g = await cli(
      "run",
      "-i",
      c.inventoryPath,
      "--suites",
      "stress,nccl",
      "--list",
      "--grep",
      "sim02.*all_reduce",
    );
    assert.match(g.stdout, /^1 test\(s\)/m);
    assert.doesNotMatch(g.stdout, /^stress:/m);
    // --grep when running: only the matching tests run
    const ran = await run(
      "--suites",
      `${SUITES}/failing.mjs`,
      "--grep",
      "at least one GPU",
      "--json",
    );
    assert.equal(ran.code, 0, ran.stderr);
    assert.deepEqual(
      json(ran.stdout).checks.map((x) => x.title),
      ["has at least one GPU", "has at least one GPU"],
    );
    // --grep that selects nothing is a usage error, listed or run: never a pass with no check
    const none = await run("--suites", `${SUITES}/failing.mjs`, "--grep", "no such title");
    assert.equal(none.code, 3, none.stderr);
    assert.match(none.stderr, /--grep "no such title" matched no test on 2 node\(s\)/);
    const noneListed = await cli("run", "-i", c.inventoryPath, "--list", "--grep", "no such title");
    assert.equal(noneListed.code, 3, noneListed.stderr);
  });

  it("an unknown suite or a missing file is refused before any node is touched (exit 3)", async () => {
    const r = await run("--suites", "stres");
    assert.equal(r.code, 3);
    assert.match(r.stderr, /unknown suite 'stres' \(did you mean 'stress'\?\)/);
    const m = await run("--suites", "./nope.mjs");
    assert.equal(m.code, 3);
    assert.match(m.stderr, /suite file \.\/nope\.mjs does not exist/);
  });

  it("--list --layout lists the tests of the instances the layout would create, and changes nothing", async () => {
    const r = await cli(
      "run",
      "-i",
      c.inventoryPath,
      "--suites",
      "stress",
      "--list",
      "--layout",
      "fixtures/layouts/default.yaml",
      "-c",
      "all-balanced",
    );
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split("\n").filter((l) => l.startsWith("stress: "));
    // all-balanced: 2 × 1g.10gb, 1 × 2g.20gb, 1 × 3g.40gb on each node's one GPU.
    for (const node of ["sim01", "sim02"]) {
      const profiles = lines
        .filter((l) => l.startsWith(`stress: ${node} › GPU 0 `))
        .map((l) => /› (\S+) at \d+:\d+ › computes/.exec(l)?.[1] ?? l);
      assert.deepEqual(profiles.sort(), ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"], r.stdout);
    }
    assert.match(r.stdout, /^8 test\(s\) in 1 suite\(s\) on 2 node\(s\)$/m);
    assert.doesNotMatch(r.stdout, /whole GPU/);
    // Planned offline: the GPUs are as they were.
    const asIs = await cli("run", "-i", c.inventoryPath, "--suites", "stress", "--list");
    assert.match(asIs.stdout, /^2 test\(s\) in 1 suite\(s\) on 2 node\(s\)$/m);
  });

  it("a suite file that does not parse is exit 3 with its file:line, listed or run, before any node is touched", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sc-broken-suite-"));
    const broken = join(dir, "broken.mjs");
    writeFileSync(
      broken,
      'import { harness } from "slicecheck/suite";\nconst run = harness();\ndescribe("x", () => {\n  it("y", () => {});\n',
    );
    const listed = await cli("run", "-i", c.inventoryPath, "--suites", broken, "--list");
    assert.equal(listed.code, 3, listed.stderr);
    assert.match(
      listed.stderr,
      /broken\.mjs:5:\d+: .*\[SUITE_LOAD\]|SUITE_LOAD.*broken\.mjs:5:\d+/s,
    );
    const ran = await run("--suites", `stress,${broken}`);
    assert.equal(ran.code, 3, ran.stderr);
    assert.match(ran.stderr, /broken\.mjs:5:\d+/);
    assert.equal(existsSync(ran.out), false, "the run never started: no output folder");
  });

  describe("with a MIG layout", () => {
    before(async () => {
      const r = await cli(
        "apply",
        "-i",
        c.inventoryPath,
        "--nodes",
        "sim01",
        LAYOUT,
        "-c",
        "two-3g",
        "--journal-dir",
        join(c.dir, "journal"),
      );
      assert.equal(r.code, 0, r.stderr + r.stdout);
    });
    afterEach(async () => {
      await cli("sim", "fault", "sim01", "--clear", "--inventory", c.inventoryPath);
    });

    it("the isolation suite and a fault-declaring user suite are refused on a node with a foreign process", async () => {
      const p = await cli(
        "sim",
        "fault",
        "sim01",
        "foreign-process",
        "--gpu",
        "0",
        "--inventory",
        c.inventoryPath,
      );
      assert.equal(p.code, 0, p.stderr);
      const r = await run(
        "--nodes",
        "sim01",
        "--suites",
        `isolation,${SUITES}/faulting.mjs,stress`,
        "--faults",
        "crash",
        "--aggressors",
        "1",
        "--json",
      );
      assert.equal(r.code, 2, explain(r));
      const s = json(r.stdout);
      const iso = s.checks.filter((x) => x.suite === "isolation");
      assert.equal(iso.length, 1, JSON.stringify(iso));
      assert.equal(iso[0]?.status, "broken");
      assert.match(
        iso[0]?.message ?? "",
        /refused: GPU 0: 1 compute process\(es\) of someone else/,
      );
      const mine = s.checks.filter((x) => x.suite.endsWith("faulting.mjs"));
      assert.deepEqual(
        mine.map((x) => [x.status, x.code]),
        [["broken", "INTERLOCK"]],
      );
      // Nothing was faulted: no scenario event; the stress suite (no faults) still ran.
      assert.equal(
        readFileSync(join(r.out, "checks.jsonl"), "utf8").includes('"suite":"stress"'),
        true,
      );
      const history = (() => {
        try {
          return readFileSync(join(r.out, "history.jsonl"), "utf8");
        } catch {
          return "";
        }
      })();
      assert.equal(history, "", "no isolation step ran");
    });

    it("diff flags an isolation verdict that flipped from passed to failed (exit 1)", async () => {
      const before = await run(
        "--nodes",
        "sim01",
        "--suites",
        "isolation",
        "--faults",
        "crash",
        "--aggressors",
        "1",
        "--label",
        "iso-before",
      );
      assert.equal(before.code, 0, before.stderr + before.stdout);
      const p = await cli(
        "sim",
        "fault",
        "sim01",
        "isolation-broken",
        "--inventory",
        c.inventoryPath,
      );
      assert.equal(p.code, 0, p.stderr);
      const after = await run(
        "--nodes",
        "sim01",
        "--suites",
        "isolation",
        "--faults",
        "crash",
        "--aggressors",
        "1",
        "--label",
        "iso-after",
      );
      assert.equal(after.code, 1, after.stderr + after.stdout);
      const d = await cli(
        "diff",
        "--before",
        "iso-before",
        "--after",
        "iso-after",
        "--db",
        join(c.dir, "records.db"),
        "--json",
      );
      assert.equal(d.code, 1, d.stderr + d.stdout);
      const f = (
        JSON.parse(d.stdout) as {
          findings: { area: string; subject: string; detail: string; regression: boolean }[];
        }
      ).findings;
      const flipped = f.filter((x) => x.area === "behaviour" && x.regression);
      assert.ok(
        flipped.some(
          (x) =>
            /^isolation \| sim01 \| 0 \| 3g\.40gb@0:4 \| crash: victimsUnaffected$/.test(
              x.subject,
            ) && /^passed → failed/.test(x.detail),
        ),
        JSON.stringify(f, null, 1),
      );
    });
  });
});
