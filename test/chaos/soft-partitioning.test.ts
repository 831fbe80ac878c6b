// Soft routes under the isolation suite: two processes on one GPU without MIG, time-sliced, under
// MPS, and under MPS with each client's pinned memory limit and thread percentage. Each route is
// judged against its own promise: time-slicing's slowdown and MPS's crash propagation are
// characterisations with their figures (passed, code CHARACTERISED), the slowdown per tenant
// count is measured, and the one promise a soft route makes (MPS with a memory limit: memory
// isolation) fails when the simulator plants a server that does not enforce the cap.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { IsolationSummary } from "../../src/chaos/isolation.js";
import type { CheckRecord } from "../../src/verdicts/checks.js";
import { cli } from "../helpers/cli.js";
import { taggedPids, useCluster } from "../helpers/cluster.js";

const checksOf = (dir: string): CheckRecord[] =>
  readFileSync(join(dir, "checks.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as CheckRecord);

describe("isolation scenarios on soft routes (time-slicing, MPS, MPS with limits; MIG off, real sshd)", function () {
  this.timeout(300_000);
  const c = useCluster([{ gpu: "A100-80GB", driver: "535.183.01" }]);
  afterEach(async () => {
    await cli("sim", "fault", "sim01", "--clear", "--inventory", c.inventoryPath);
  });

  it("characterises what a soft route does not promise, measures the slowdown per tenant count, and passes", async () => {
    const out = join(c.dir, "soft");
    const r = await cli(
      "run",
      ...["-i", c.inventoryPath, "--suites", "isolation", "--faults", "noisy,crash,oom"],
      // No latency windows: the soft routes' latency characterisation is latency.test.ts's.
      ...["--tenants", "2,3", "--latency-faults", "none", "--duration", "1.5", "--out", out],
    );
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /soft routes, not isolation/);
    const v = JSON.parse(readFileSync(join(out, "verdicts.json"), "utf8")) as IsolationSummary;
    const get = (mode: string, fault: string, verdict = "victimsUnaffected") =>
      v.rows.find((x) => x.mode === mode && x.fault === fault && x.verdict === verdict)!;
    const noisy = get("time-slicing", "noisy");
    assert.equal(noisy.status, "passed");
    assert.equal(noisy.characterisation, true);
    assert.match(
      noisy.summary,
      /^time-slicing: a noisy neighbour slows the victim ×(1\.[6-9]|2\.[0-4]); expected for the soft route/,
    );
    const slowdown = noisy.evidence.figures["gpu0/ts-b slowdown"] as number;
    // Whole-window means: the two processes start a moment apart, so a little under x2.
    assert.ok(slowdown > 1.3 && slowdown < 2.4, `time-slicing slows the victim: x${slowdown}`);
    // The isolation window was sampled: the GPU's memory in use while the victim was measured
    // (two contexts at least), from nvidia-smi where no host engine runs.
    assert.equal(noisy.evidence.figures["utilization source"], "nvidia-smi");
    // A short window may get too few samples: then it is labelled insufficient, never a figure.
    const used = noisy.evidence.figures["gpu0/ts-b memory used MiB under fault"];
    if (used === undefined)
      assert.match(
        String(noisy.evidence.figures["gpu0/ts-b utilization under fault"]),
        /^insufficient \(\d+ sample\(s\)\)$/,
      );
    else assert.ok((used as number) >= 512);
    // MPS has no fault isolation: the crash reaches the other client, which is the route's
    // expected weakness, shown as such.
    const mps = get("mps", "crash");
    assert.equal(mps.status, "passed");
    assert.equal(mps.characterisation, true);
    assert.match(
      mps.summary,
      /^MPS \(no limits\): the aggressor's fault reached the victim .*(illegal-address|died)/,
    );
    // MPS with limits keeps its one promise: the capped OOM stops at the cap.
    const mem = get("mps-limited", "oom", "memoryIsolated");
    assert.equal(mem.status, "passed", mem.summary);
    assert.equal(mem.route, "MPS (pinned memory limit 40960 MiB, active threads 50 %)");
    assert.ok((mem.evidence.figures["aggressor allocated MiB"] as number) <= 40960);
    // 50 % of the SMs each: the noisy neighbour does not slow the victim in the model.
    const limited = get("mps-limited", "noisy");
    assert.equal(limited.characterisation, true);
    assert.match(limited.summary, /kept their throughput/);
    // Tenants: each of N gets about 1/N on a time-sliced GPU.
    const t = get("time-slicing", "tenants", "slowdownPerTenants");
    assert.equal(t.status, "passed");
    const s2 = t.evidence.figures["tenants 2 slowdown"] as number;
    const s3 = t.evidence.figures["tenants 3 slowdown"] as number;
    assert.ok(
      s2 > 1.6 && s2 < 2.4 && s3 > 2.4 && s3 < 3.6 && s3 > s2,
      `x${s2} with 2, x${s3} with 3`,
    );
    assert.ok(get("mps", "tenants", "slowdownPerTenants").evidence.figures["tenants 3 slowdown"]);
    const checks = checksOf(out);
    const route = checks.find((x) => x.suite === "isolation" && x.title === "route")!;
    assert.equal(route.status, "passed");
    assert.equal(route.figures.route, "whole card");
    assert.ok(
      checks.some((x) => x.code === "CHARACTERISED" && x.parameters.route === "time-slicing"),
    );
    const verified = checks.find((x) => x.title === "tenants verified isolated")!;
    assert.equal(verified.figures.verifiedIsolated, 0, "a soft route verifies no tenant isolated");
    assert.deepEqual(taggedPids(`SLICECHECK_RUN=${v.runId}@sim01`), []);
  });

  it("fails memory isolation when MPS lets a capped tenant allocate past its pinned memory limit", async () => {
    const p = await cli("sim", "fault", "sim01", "mps-cap-ignored", "--inventory", c.inventoryPath);
    assert.equal(p.code, 0, p.stderr);
    const out = join(c.dir, "cap");
    const r = await cli(
      "run",
      ...["-i", c.inventoryPath, "--suites", "isolation", "--faults", "oom", "--tenants", "none"],
      ...["--latency-faults", "none", "--duration", "1.5", "--out", out],
    );
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    const v = JSON.parse(readFileSync(join(out, "verdicts.json"), "utf8")) as IsolationSummary;
    const mem = v.rows.find((x) => x.mode === "mps-limited" && x.verdict === "memoryIsolated")!;
    assert.equal(mem.status, "failed");
    assert.match(mem.summary, /allocated \d+ MiB past its 40960 MiB pinned memory limit/);
    // The routes without a memory promise stay characterised, not failed, under the same fault.
    for (const mode of ["time-slicing", "mps"])
      assert.notEqual(
        v.rows.find((x) => x.mode === mode && x.verdict === "victimsUnaffected")!.status,
        "failed",
      );
    const failed = checksOf(out).filter((x) => x.status === "failed");
    assert.ok(
      failed.every(
        (x) => x.parameters.mode === "mps-limited" || x.title === "tenants verified isolated",
      ),
    );
  });
});
