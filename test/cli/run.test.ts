// `slicecheck run` end to end: real sshd, simulated GPUs, the layout applied and restored.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { simNodeRecord } from "../../sim/src/cluster.js";
import { readState } from "../../sim/src/nvsmi/state.js";
import type { CheckRecord } from "../../src/verdicts/checks.js";
import { cli } from "../helpers/cli.js";
import { taggedPids, useCluster, waitFor } from "../helpers/cluster.js";
import { isSimWorkload } from "../helpers/sim-procs.js";

interface Summary {
  runId: string;
  exitCode: number;
  checks: CheckRecord[];
}

/** The stress checks of a run, one per instance. */
const stressOf = (s: Summary, node?: string) =>
  s.checks.filter((c) => c.suite === "stress" && (node === undefined || c.node === node));
const num = (c: CheckRecord, k: string) => c.figures[k] as number;

function runTagged(runId: string): number[] {
  return ["sim01", "sim02"].flatMap((n) => taggedPids(`SLICECHECK_RUN=${runId}@${n}`));
}

describe("slicecheck run (stress on every MIG instance, real sshd)", function () {
  this.timeout(120_000);
  const c = useCluster([
    { gpu: "H100-80GB", driver: "580.173.02" },
    { gpu: "A100-80GB", driver: "535.183.01" },
  ]);

  it("gives per-instance throughput in proportion to SM counts, then restores the layout and leaves nothing", async () => {
    const out = join(c.dir, "run1");
    const r = await cli(
      "run",
      "-i",
      c.inventoryPath,
      "--layout",
      "fixtures/layouts/default.yaml",
      "-c",
      "all-balanced",
      "--duration",
      "2",
      "--out",
      out,
      "--json",
    );
    assert.equal(r.code, 0, r.stderr);
    const s = JSON.parse(r.stdout) as Summary;
    // Where the run's time went: its tasks in the order they ended, on the process's clock, the
    // 2-s stress inside the suites' span.
    const tasks = (JSON.parse(r.stdout) as { tasks: { name: string; atMs: number; ms: number }[] })
      .tasks;
    const at = (name: string) => tasks.findIndex((t) => t.name === name);
    const order = ["connect and lock", "discover", "layout", "suites"]
      .concat(["teardown: restore the original MIG layout", "write the reports"])
      .map(at);
    assert.ok(
      order.every((k, i) => k >= 0 && (i === 0 || k > order[i - 1]!)),
      JSON.stringify(tasks),
    );
    assert.ok(tasks[at("suites")]!.ms >= 2000, JSON.stringify(tasks));
    for (const node of ["sim01", "sim02"]) {
      const rows = stressOf(s, node);
      assert.ok(rows.length >= 3, `${node} ran on every instance of the balanced layout`);
      assert.ok(
        rows.every((x) => x.status === "passed" && num(x, "sm") > 0 && num(x, "errors") === 0),
      );
      const perSm = rows.map((x) => num(x, "tflops") / num(x, "sm"));
      const spread = (Math.max(...perSm) - Math.min(...perSm)) / Math.min(...perSm);
      assert.ok(
        spread < 0.05,
        `${node}: TFLOP/s per SM varies by ${(spread * 100).toFixed(1)}% across ${rows.map((x) => x.instance?.profile).join(", ")}`,
      );
    }
    const perSm = (node: string) =>
      stressOf(s, node).map((x) => num(x, "tflops") / num(x, "sm"))[0]!;
    const h100 = perSm("sim01");
    const a100 = perSm("sim02");
    assert.ok(h100 > 2 * a100, "an H100 SM does more than twice an A100 SM's FP32 work");
    const lines = readFileSync(join(out, "measurements.jsonl"), "utf8").trim().split("\n");
    const metrics = lines.map((l) => (JSON.parse(l) as { metric: string }).metric);
    assert.equal(
      metrics.filter((m) => m === "tflops" || m === "errors").length,
      stressOf(s).length * 2,
      "tflops and errors of every instance were written",
    );
    // And the memory in use sampled while each ran (nvidia-smi: no host engine on these nodes):
    // written for every instance whose samples were enough; the others (a loaded control machine
    // can leave an instance under 3 samples) are labelled insufficient, never given a figure.
    const measured = stressOf(s).filter((x) => x.figures.utilizationStatus === "measured");
    const insufficient = stressOf(s).filter((x) => x.figures.utilizationStatus === "insufficient");
    assert.equal(measured.length + insufficient.length, stressOf(s).length);
    assert.equal(metrics.filter((m) => m === "memory_used_max").length, measured.length);
    for (const x of measured) assert.ok(num(x, "memory_used_max") >= 64, JSON.stringify(x.figures));
    for (const n of ["sim01", "sim02"]) {
      const st = readState(join(simNodeRecord(c.inventoryPath, n).dir, "state"));
      assert.ok(
        st.gpus.every((g) => g.gis.length === 0 && !g.mig.current),
        `${n} is back to MIG off`,
      );
    }
    assert.deepEqual(runTagged(s.runId), [], "no remote process of the run is left");
  });

  it("reports an instance killed mid-run as failed while the others finish", async () => {
    const out = join(c.dir, "run2");
    const running = cli(
      "run",
      "-i",
      c.inventoryPath,
      "--nodes",
      "sim01",
      "--layout",
      "fixtures/layouts/default.yaml",
      "-c",
      "all-1g.10gb",
      "--duration",
      "4",
      "--out",
      out,
      "--json",
    );
    // Find one stress process of the run on sim01 and kill it as a tenant's crash would.
    let victim = 0;
    assert.ok(
      await waitFor(() => {
        const pids = taggedPidsWith("stress", c.dir);
        victim = pids[0] ?? 0;
        return pids.length >= 7;
      }, 30_000),
      "seven stress processes started",
    );
    process.kill(victim, "SIGKILL");
    const r = await running;
    const s = JSON.parse(r.stdout) as Summary;
    assert.equal(r.code, 1, "a died instance is a failed check");
    const failed = stressOf(s).filter((x) => x.status === "failed");
    assert.equal(failed.length, 1);
    // The tenant crash kills the process; its command's watchdog then stops whatever it left.
    assert.match(failed[0]!.message, /exit|SIGKILL|137|stopped by SIG/);
    assert.equal(
      stressOf(s).filter((x) => x.status === "passed").length,
      6,
      "the other six finished",
    );
    assert.deepEqual(runTagged(s.runId), []);
  });
});

/** This cluster's own simulated `slicecheck-<program>` processes: other clusters on the machine
 * (parallel test runs) have nodes called sim01 too, so the node's folder (SetEnv of its sshd)
 * decides. */
function taggedPidsWith(program: string, clusterDir: string): number[] {
  const out: number[] = [];
  for (const pid of taggedPidsPrefix("SLICECHECK_RUN=")) {
    try {
      const mine = readFileSync(`/proc/${pid}/environ`, "latin1")
        .split("\0")
        .some((e) => e.startsWith("SLICECHECK_SIM_NODE_DIR=") && e.includes(clusterDir));
      if (mine && isSimWorkload(pid, program)) out.push(pid);
    } catch {
      /* gone */
    }
  }
  return out;
}

function taggedPidsPrefix(prefix: string): number[] {
  const pids: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (
        readFileSync(`/proc/${d}/environ`, "latin1")
          .split("\0")
          .some((e) => e.startsWith(prefix) && e.endsWith("@sim01"))
      )
        pids.push(Number(d));
    } catch {
      /* not ours */
    }
  }
  return pids;
}
