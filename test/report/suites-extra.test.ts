// The layout, health and regression suites end to end (real sshd, one simulated H100): their
// checks land in the Allure results as passed or failed tests.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { clusterDirFor } from "../../sim/src/cluster.js";
import { appendKernelLog } from "../../sim/src/klog/log.js";
import { healthChecks, xidBus } from "../../src/verdicts/health.js";
import { cli } from "../helpers/cli.js";
import { useCluster, waitFor } from "../helpers/cluster.js";

interface AllureResult {
  name: string;
  status: string;
  statusDetails?: { message?: string };
}

function allureResults(out: string): AllureResult[] {
  const dir = join(out, "allure-results");
  return readdirSync(dir)
    .filter((f) => f.endsWith("-result.json"))
    .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as AllureResult);
}

const LAYOUT = ["--layout", "fixtures/layouts/default.yaml", "-c", "all-balanced"];

describe("suites-extra: layout suite, health suite, regression suite (real sshd, simulated H100)", function () {
  // Two runs and an upgrade in one test: over a minute on 2 slow, loaded cores.
  this.timeout(150_000);
  const c = useCluster([{ gpu: "H100-80GB", driver: "580.65.06" }]);
  const base = (name: string, ...more: string[]) => [
    "run",
    "-i",
    c.inventoryPath,
    "--duration",
    "1",
    "--db",
    join(c.dir, "records.db"),
    "--out",
    join(c.dir, name),
    ...more,
  ];

  it("layout suite without --layout is a usage error (exit 3)", async () => {
    const r = await cli(...base("no-layout", "--suites", "layout"));
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /--layout/);
  });

  it("layout suite and health suite: passed tests for the layout and every health check", async () => {
    const out = join(c.dir, "healthy");
    const r = await cli(...base("healthy", "--suites", "layout,health", ...LAYOUT));
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const res = allureResults(out);
    const byName = (re: RegExp) => res.filter((x) => re.test(x.name));
    assert.deepEqual(
      byName(/matches config all-balanced/).map((x) => [x.name, x.status]),
      [["matches config all-balanced", "passed"]],
    );
    for (const re of [
      /^driver answers$/,
      /^persistence mode$/,
      /uncorrected ECC/,
      /logged no new Xid/,
    ]) {
      assert.equal(byName(re).length, 1, `${re}`);
      assert.equal(byName(re)[0]?.status, "passed", `${re}`);
    }
  });

  it("health suite: an Xid logged during the run fails the GPU's Xid test", async () => {
    const out = join(c.dir, "xid");
    const state = join(clusterDirFor(c.inventoryPath), "nodes", "sim01", "state");
    const busQuery = await cli(
      "exec",
      "-i",
      c.inventoryPath,
      "--",
      "nvidia-smi",
      "--query-gpu=pci.bus_id",
      "--format=csv,noheader",
    );
    const bus = xidBus(busQuery.stdout.replace(/^sim01: /, "").trim());
    const running = cli(...base("xid", "--suites", "stress,health", "--duration", "3"));
    // Planted while the stress runs: after the start-of-run dmesg, before the end-of-run one.
    assert.ok(await waitFor(() => existsSync(join(out, "sim01")), 20_000, 50));
    await appendKernelLog(state, [
      `NVRM: Xid (PCI:${bus}): 79, pid=1234, name=python, GPU has fallen off the bus.`,
    ]);
    const r = await running;
    assert.equal(r.code, 1, r.stderr + r.stdout);
    const xid = allureResults(out).filter((x) => /logged no new Xid/.test(x.name));
    assert.equal(xid.length, 1);
    assert.equal(xid[0]?.status, "failed");
    assert.match(xid[0]?.statusDetails?.message ?? "", /Xid/);
  });

  it("regression suite: no baseline passes with a note; after an upgrade a slower profile fails", async () => {
    const first = await cli(...base("reg1", "--suites", "stress,regression", ...LAYOUT));
    assert.equal(first.code, 0, first.stderr + first.stdout);
    const none = allureResults(join(c.dir, "reg1")).filter((x) =>
      /compared with another/.test(x.name),
    );
    assert.equal(none.length, 1);
    assert.equal(none[0]?.status, "passed");
    const up = await cli(
      "sim",
      "upgrade-driver",
      "sim01",
      "--to",
      "580.173.02",
      "--regress",
      "1g.10gb:tflops=0.8",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(up.code, 0, up.stderr);
    const second = await cli(...base("reg2", "--suites", "stress,regression", ...LAYOUT));
    assert.equal(second.code, 1, second.stderr + second.stdout);
    const res = allureResults(join(c.dir, "reg2")).filter((x) =>
      /holds across drivers/.test(x.name),
    );
    const failed = res.filter((x) => x.status === "failed").map((x) => x.name);
    assert.deepEqual(failed, ["H100-80GB 1g.10gb stress tflops holds across drivers"]);
    assert.match(
      res.find((x) => x.status === "failed")?.statusDetails?.message ?? "",
      /^\[DRIVER_REGRESSION\] driver regression/,
    );
    assert.ok(
      res.some((x) => x.status === "passed"),
      "the other groups hold",
    );
  });
});

describe("health suite (pure)", () => {
  it("ECC: a count > 0 fails, [N/A] passes with a note; isolation-caused Xids pass with a note", () => {
    const xid = "[ 10.000000] NVRM: Xid (PCI:0000:1b:00): 43, pid=1, name=x, Ch 00000008";
    const checks = healthChecks({
      node: "n1",
      smiExit: 0,
      smiOutput:
        "0, 00000000:1B:00.0, 580.65.06, Enabled, 2\n1, 00000000:2B:00.0, 580.65.06, Disabled, [N/A]\n",
      dmesgBefore: [],
      dmesgAfter: [xid],
      injected: [{ gpu: 0, fault: "crash", gpuInstanceId: null, computeInstanceId: null }],
    });
    const st = (re: RegExp) => checks.filter((x) => re.test(x.title)).map((x) => x.status);
    assert.deepEqual(st(/ECC/), ["failed", "passed"]);
    assert.match(checks.find((x) => /GPU 1 has no/.test(x.title))?.message ?? "", /note/);
    assert.deepEqual(st(/Xid/), ["passed", "passed"]);
    assert.match(checks.find((x) => /GPU 0 logged/.test(x.title))?.message ?? "", /isolation/);
    const dead = healthChecks({
      node: "n1",
      smiExit: 9,
      smiOutput: "NVIDIA-SMI has failed",
      dmesgBefore: [],
      dmesgAfter: [],
      injected: [],
    });
    assert.deepEqual(
      dead.map((x) => [x.title, x.status]),
      [["n1 driver answers", "failed"]],
    );
  });
});
