// train-step (issue 22 item 4): its lines are the parser's (the .cu's formats, the simulator's
// output), its figures become measurements whose direction diff reads right, a planted wrong
// result (--plant-error, `sim fault wrong-gradient`) fails it, and a node without NCCL gets the
// one-line reason and exit 4 from the real binary (built with this machine's nvcc) and from the
// simulator alike.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { clearFaults, plantFault } from "../../sim/src/faults.js";
import { initState } from "../../sim/src/nvsmi/state.js";
import { PACKAGE_ROOT } from "../../sim/src/tools.js";
import { lowerIsBetter } from "../../src/store/diff.js";
import { defaultWorkloadsDir } from "../../src/workloads/build.js";
import type { InstanceOutcome } from "../../src/workloads/launcher.js";
import {
  formatTrainFinalLine,
  formatTrainLine,
  parseTrainStepOutput,
  TRAIN_EXIT_NO_NCCL,
  TRAIN_PRINTF,
  trainStepMetrics,
} from "../../src/workloads/parsers/train-step.js";
import { metricsOf } from "../../src/workloads/specs.js";
import { statusOf } from "../../src/workloads/summary.js";
import { tempDir } from "../helpers/tmp.js";

const SIM = join(PACKAGE_ROOT, "dist/sim/workloads/train-step.js");

/** A C string literal's value: enough for the escapes the formats use. */
const cString = (literal: string) =>
  literal.replace(/\\(n|"|\\)/g, (_m, c: string) => (c === "n" ? "\n" : c));

function simNode(gpus: number): string {
  const dir = tempDir("train-sim");
  initState(dir, { node: "simt", product: "H100-80GB", gpus, driver: "580.65.06" });
  return dir;
}

function runSim(state: string, args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [SIM, ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", SLICECHECK_SIM_STATE: state, ...env },
    encoding: "utf8",
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function outcome(stdout: string, exitCode: number): InstanceOutcome {
  const m = metricsOf("train-step", stdout);
  return {
    exitCode,
    died: exitCode !== 0,
    timedOut: false,
    harnessError: null,
    incomplete: null,
    parseError: null,
    measurements: m.map((x) => ({ ...x, repetition: 1 })),
  } as unknown as InstanceOutcome;
}

describe("train-step: lines, measurements and the check", () => {
  it("slicecheck.cuh prints exactly TRAIN_PRINTF, and train-step.cu prints only through it", () => {
    const header = readFileSync(join(defaultWorkloadsDir(), "slicecheck.cuh"), "utf8");
    const defines: Record<string, string> = {};
    for (const m of header.matchAll(/^#define (SC_FMT_TRAIN\w*) "((?:[^"\\]|\\.)*)"$/gm))
      defines[m[1]!] = cString(m[2]!);
    assert.deepEqual(defines, {
      SC_FMT_TRAIN: TRAIN_PRINTF.train,
      SC_FMT_TRAIN_FINAL: TRAIN_PRINTF.trainFinal,
      SC_FMT_TRAIN_NO_NCCL: TRAIN_PRINTF.trainNoNccl,
    });
    const cu = readFileSync(join(defaultWorkloadsDir(), "train-step.cu"), "utf8");
    const used = new Set([...cu.matchAll(/sc_line\((SC_FMT_\w+)/g)].map((m) => m[1]));
    assert.deepEqual([...used].sort(), Object.keys(defines).sort());
  });

  it("parses the lines into step_ms and friends; step_ms and its halves read larger as worse", () => {
    const text = [
      "slicecheck-device program=train-step uuid=MIG-1 sms=60 cc=9.0 memory_bytes=1 name=X MIG 3g.40gb",
      formatTrainLine({ step: 1, stepMs: 50.5, computeMs: 50.49, allreduceMs: 0.01 }),
      formatTrainLine({ step: 2, stepMs: 51.5, computeMs: 51.49, allreduceMs: 0.01 }),
      formatTrainFinalLine({
        steps: 2,
        ranks: 1,
        meanStepMs: 51,
        p50StepMs: 51,
        stepsPerS: 19.6,
        errors: 0,
      }),
    ].join("\n");
    const metrics = Object.fromEntries(
      metricsOf("train-step", text).map((m) => [m.metric, [m.value, m.unit]]),
    );
    assert.deepEqual(metrics, {
      step_ms: [51, "ms"],
      step_p50_ms: [51, "ms"],
      compute_ms: [50.99, "ms"],
      allreduce_ms: [0.01, "ms"],
      steps_per_s: [19.6, "steps/s"],
      errors: [0, "count"],
      ranks: [1, "ranks"],
    });
    for (const m of ["step_ms", "step_p50_ms", "compute_ms", "allreduce_ms"])
      assert.equal(lowerIsBetter(m, "ms"), true, m);
    assert.equal(lowerIsBetter("steps_per_s", "steps/s"), false);
    assert.equal(statusOf(outcome(text, 0)), "passed");
  });

  it("refuses a garbled tagged line and a second final line; keeps the steps of a killed run", () => {
    assert.throws(
      () =>
        parseTrainStepOutput("SLICECHECK train step=1 step_ms=fast compute_ms=1 allreduce_ms=0"),
      /train-step: line 1: expected/,
    );
    const final = formatTrainFinalLine({
      steps: 0,
      ranks: 1,
      meanStepMs: 0,
      p50StepMs: 0,
      stepsPerS: 0,
      errors: 0,
    });
    assert.throws(() => parseTrainStepOutput(`${final}\n${final}`), /one 'train-final' line/);
    const killed = formatTrainLine({ step: 1, stepMs: 9, computeMs: 8, allreduceMs: 1 });
    const m = trainStepMetrics(parseTrainStepOutput(killed));
    assert.deepEqual(
      m.map((x) => x.metric),
      ["step_ms", "compute_ms", "allreduce_ms"],
      "no error count is made up for a run that never said",
    );
  });

  it("simulator: a MIG-less node's two GPUs are two ranks; --plant-error and wrong-gradient fail the check", async function () {
    this.timeout(60_000);
    const state = simNode(2);
    const ok = runSim(state, ["--steps", "2"]);
    assert.equal(ok.code, 0, ok.stderr);
    const good = parseTrainStepOutput(ok.stdout);
    assert.equal(good.final?.ranks, 2);
    assert.ok((good.steps[0]?.allreduceMs ?? 0) > 0.035, "two ranks move the gradient over NVLink");
    assert.equal(statusOf(outcome(ok.stdout, 0)), "passed");

    const one = runSim(state, ["--steps", "2", "--plant-error"], { CUDA_VISIBLE_DEVICES: "0" });
    assert.equal(one.code, 1);
    assert.equal(parseTrainStepOutput(one.stdout).final?.ranks, 1);
    assert.equal(statusOf(outcome(one.stdout, 1)), "failed");

    await plantFault(state, "wrong-gradient");
    const bad = runSim(state, ["--steps", "2"]);
    assert.equal(bad.code, 1);
    assert.equal(parseTrainStepOutput(bad.stdout).final?.errors, 1);
    // The planted run's exit alone would fail it; the error count fails it as well.
    assert.equal(statusOf(outcome(bad.stdout, 0)), "failed");
    await clearFaults(state);
    assert.equal(runSim(state, ["--steps", "1"]).code, 0, "--clear undoes the fault");
  });

  it("without NCCL: one reason line and exit 4, from the simulator and the real binary (nvcc)", function () {
    this.timeout(180_000);
    const sim = runSim(simNode(1), [], { SLICECHECK_NCCL_LIB: "/nonexistent/libnccl.so.2" });
    assert.equal(sim.code, TRAIN_EXIT_NO_NCCL);
    assert.match(parseTrainStepOutput(sim.stdout).noNccl ?? "", /cannot load \/nonexistent/);
    const nvcc = ["/usr/local/cuda/bin/nvcc", process.env.NVCC].find((c) => c && existsSync(c));
    if (!nvcc) {
      console.log("      (no nvcc on this machine: the real binary's part skipped)");
      return;
    }
    const bin = join(tempDir("train-nvcc"), "train-step");
    execFileSync(nvcc, [
      "-O3",
      "-arch=sm_80",
      "-o",
      bin,
      join(defaultWorkloadsDir(), "train-step.cu"),
    ]);
    const real = spawnSync(bin, [], {
      env: { SLICECHECK_NCCL_LIB: "/nonexistent/libnccl.so.2" },
      encoding: "utf8",
    });
    assert.equal(real.status, TRAIN_EXIT_NO_NCCL, real.stderr);
    assert.deepEqual(
      parseTrainStepOutput(real.stdout).noNccl?.replace(/: .*/, ""),
      parseTrainStepOutput(sim.stdout).noNccl?.replace(/: .*/, ""),
      "the simulator says what the real one says",
    );
    const usage = spawnSync(bin, ["--size", "100"], { encoding: "utf8" });
    assert.equal(usage.status, 3);
    assert.match(usage.stderr, /^train-step: --size needs a multiple of 64/);
  });
});
