// The simulated built-in workloads (slicecheck-stress, -memhog, -crasher) as real processes on a
// simulated node's state, read back with the parsers the harness uses on real GPUs.
import assert from "node:assert/strict";
import { parseXid } from "../../../src/nvsmi/xid.js";
import { parseBuiltinOutput } from "../../../src/workloads/parsers/builtin.js";
import { parseCudaErrors } from "../../../src/workloads/parsers/cuda-errors.js";
import { dmesgMain } from "../../src/klog/dmesg.js";
import { smRates } from "../../src/workloads/model.js";
import {
  cleanup,
  computePids,
  median,
  migUuid,
  node,
  run,
  start,
  state,
  until,
  viaResident,
} from "./helpers.js";

const H100_FP32_PER_SM = smRates("H100-80GB", "hopper").fp32;

async function dmesg(stateDir: string, args: string[] = []): Promise<string> {
  let out = "";
  const code = await dmesgMain(args, {
    stateDir,
    stdout: (s) => {
      out += s;
    },
    stderr: (s) => {
      out += s;
    },
    uid: 0,
  });
  assert.equal(code, 0, out);
  return out;
}

// Each program runs as its own Node process, and again inside the resident simulator for its
// bash client: the two must behave alike, exit codes, signals and process list included.
for (const via of ["own process", "resident simulator"] as const)
  describe(`simulated workloads: stress, memhog, crasher (${via})`, function () {
    this.timeout(30_000);
    afterEach(cleanup);
    if (via === "resident simulator") {
      let undo: () => Promise<void> = async () => {};
      before(async () => {
        undo = await viaResident();
      });
      // A run the resident did not serve exits 99 (helpers.ts NOT_RUN_BY_RESIDENT), with no
      // output: every test below then fails on its exit code or its lines.
      after(() => undo());
    }

    it("stress: throughput is proportional to the instance's SMs (1g, 3g, 7g on H100)", async () => {
      const dir = await node(
        "H100-80GB",
        2,
        "-i 0 -mig 1",
        "-i 1 -mig 1",
        "mig -i 0 -cgi 19,9 -C",
        "mig -i 1 -cgi 0 -C",
      );
      const profiles = [
        { gpu: 0, id: 19, sm: 16 },
        { gpu: 0, id: 9, sm: 60 },
        { gpu: 1, id: 0, sm: 132 },
      ];
      const runs = await Promise.all(
        profiles.map((p) =>
          run(dir, "stress", ["--duration", "1", "--interval", "0.25"], migUuid(dir, p.gpu, p.id)),
        ),
      );
      for (const [k, r] of runs.entries()) {
        assert.equal(r.code, 0, r.err);
        const b = parseBuiltinOutput(r.out);
        assert.ok(b.stress.length >= 3, r.out);
        const perSm = (b.stressFinal?.tflops ?? 0) / profiles[k]!.sm;
        // Each instance alone on its SMs: the per-SM rate is the product's, within the ±1 % noise.
        assert.ok(Math.abs(perSm / H100_FP32_PER_SM - 1) < 0.03, `${perSm} per SM in ${r.out}`);
        assert.match(
          r.out,
          new RegExp(
            `^slicecheck-device program=stress uuid=MIG-\\S+ sms=${profiles[k]!.sm} cc=9.0 `,
            "m",
          ),
        );
      }
    });

    it("stress: time-slicing without MIG, re-evaluated each interval (2 processes: half each)", async () => {
      const dir = await node("H100-80GB", 1);
      const gpu = state(dir).gpus[0]!.uuid;
      const whole = 132 * H100_FP32_PER_SM;
      const near = (x: number, want: number) => Math.abs(x / want - 1) < 0.05;
      // A outlasts B by seconds: under a loaded unit group B's own process took over 1.4 s to
      // start, and A (2.6 s then) had ended before B's last intervals (CI, 6 December 2026).
      const a = start(dir, "stress", ["--duration", "5", "--interval", "0.2"], gpu);
      assert.ok(await until(() => a.out.includes("SLICECHECK stress "), 10_000), a.err);
      const b = await run(dir, "stress", ["--duration", "1.2", "--interval", "0.2"], gpu);
      assert.equal((await a.done).code, 0, a.err);
      assert.equal(b.code, 0, b.err);
      const alone = parseBuiltinOutput(a.out).stress.map((x) => x.tflops);
      const shared = parseBuiltinOutput(b.out).stress.map((x) => x.tflops);
      assert.ok(near(alone[0]!, whole), `alone first: ${alone[0]} against ${whole}`);
      assert.ok(near(median(shared), whole / 2), `shared: ${shared.join(" ")}`);
      assert.ok(
        alone.filter((x) => near(x, whole / 2)).length >= 3,
        `A while B ran: ${alone.join(" ")}`,
      );
    });

    it("registered processes appear in --query-compute-apps and leave on exit and on SIGTERM", async () => {
      const dir = await node("H100-80GB", 1);
      const r = start(dir, "stress", ["--duration", "20", "--interval", "0.5"]);
      assert.ok(await until(() => r.out.includes("SLICECHECK stress "), 10_000), r.err);
      assert.deepEqual(await computePids(dir), [r.child.pid]);
      r.child.kill("SIGTERM");
      const end = await r.done;
      // stress.cu stops at SIGTERM with its final line, then says it was stopped, and exits
      // 128 + 15: a run cut short is never a pass.
      assert.equal(end.code, 143);
      const out = parseBuiltinOutput(r.out);
      assert.ok(out.stressFinal, r.out);
      assert.equal(out.stopped?.signal, "SIGTERM");
      assert.ok(out.stopped.t < 20, r.out);
      assert.match(
        r.out.trimEnd().split("\n").at(-1)!,
        /^SLICECHECK stopped program=stress signal=SIGTERM t=/,
      );
      assert.deepEqual(await computePids(dir), []);
    });

    it("memhog: capped at the GI's memory, OOM marked; another GI of the GPU is untouched", async () => {
      const dir = await node("H100-80GB", 1, "-i 0 -mig 1", "mig -i 0 -cgi 19,9 -C");
      const small = migUuid(dir, 0, 19);
      const giMiB = 9984;
      // Held far longer than the checks beside it take (two more memhog processes: over 3 s on
      // a loaded machine, when the hog then ended by itself before the SIGINT); it is stopped.
      const hog = start(dir, "memhog", ["--bytes", "20G", "--hold", "25"], small);
      assert.ok(await until(() => hog.out.includes("SLICECHECK memhog "), 10_000), hog.err);
      const m = parseBuiltinOutput(hog.out).memhog!;
      assert.equal(m.oom, true);
      assert.equal(m.requestedBytes, 20 * 2 ** 30);
      assert.ok(m.allocatedBytes <= giMiB * 2 ** 20 && m.allocatedBytes > (giMiB - 300) * 2 ** 20);
      // The same GI is full: a new CUDA context there fails with the runtime's OOM error.
      const late = await run(dir, "memhog", ["--bytes", "1M"], small);
      assert.equal(late.code, 2);
      assert.equal(parseCudaErrors(late.err)[0]?.kind, "oom", late.err);
      assert.match(
        late.err,
        /^CUDA error: out of memory \(cudaErrorMemoryAllocation=2 from cudaSetDevice\(0\) at slicecheck\.cuh:\d+\)$/m,
      );
      // The 3g GI next to it still has all its memory.
      const other = await run(
        dir,
        "memhog",
        ["--fraction", "1", "--check", "1M"],
        migUuid(dir, 0, 9),
      );
      assert.equal(other.code, 1, "nothing is left for the check after taking everything");
      const o = parseBuiltinOutput(other.out);
      assert.equal(o.memhog?.oom, false);
      assert.ok((o.memhog?.allocatedBytes ?? 0) > 39_000 * 2 ** 20, other.out);
      assert.deepEqual(o.memhogChecks, [{ bytes: 2 ** 20, ok: false }]);
      hog.child.kill("SIGINT");
      assert.equal((await hog.done).code, 130, "stopped by SIGINT: 128 + 2");
      assert.equal(parseBuiltinOutput(hog.out).stopped?.signal, "SIGINT", hog.out);
    });

    it("crasher illegal-address: Xid 31 against its GI/CI in dmesg, exit 2; a neighbour runs on", async () => {
      const dir = await node("H100-80GB", 1, "-i 0 -mig 1", "mig -i 0 -cgi 19,9 -C");
      const gi3 = state(dir).gpus[0]!.gis.find((g) => g.profileId === 9)!;
      const victim = start(
        dir,
        "stress",
        ["--duration", "2", "--interval", "0.5"],
        migUuid(dir, 0, 19),
      );
      const c = await run(
        dir,
        "crasher",
        ["--mode", "illegal-address", "--after", "0.3"],
        migUuid(dir, 0, 9),
      );
      assert.equal(c.code, 2);
      assert.equal(parseBuiltinOutput(c.out).crasher?.mode, "illegal-address");
      assert.equal(parseCudaErrors(c.err)[0]?.kind, "illegal-address", c.err);
      const events = parseXid(await dmesg(dir)).events;
      assert.equal(events.length, 1);
      assert.deepEqual(
        [events[0]!.xid, events[0]!.pid, events[0]!.gpuInstanceId, events[0]!.computeInstanceId],
        [31, c.pid, gi3.id, 0],
      );
      assert.equal(events[0]!.name, "slicecheck-cras");
      assert.ok(events[0]!.time !== null);
      const v = await victim.done;
      assert.equal(v.code, 0, victim.err);
      assert.ok(parseBuiltinOutput(victim.out).stressFinal);
    });

    it("crasher trap: Xid 13 and `unspecified launch failure`", async () => {
      const dir = await node("A100-40GB", 1, "-i 0 -mig 1", "mig -i 0 -cgi 19 -C");
      const c = await run(dir, "crasher", ["--mode", "trap"], migUuid(dir, 0, 19));
      assert.equal(c.code, 2);
      assert.equal(parseCudaErrors(c.err)[0]?.kind, "launch-failure", c.err);
      const events = parseXid(await dmesg(dir, ["-T"])).events;
      assert.ok(
        events.length >= 1 && events.every((e) => e.xid === 13 && e.gpuInstanceId !== null),
      );
    });

    it("crasher sigkill dies by SIGKILL, and its stale entry is pruned", async () => {
      const dir = await node("H100-80GB", 1);
      const c = start(dir, "crasher", ["--mode", "sigkill", "--after", "0.3"]);
      assert.ok(await until(() => c.out.includes("armed"), 10_000), c.err);
      const end = await c.done;
      assert.equal(end.signal, "SIGKILL");
      assert.ok(await until(() => state(dir).gpus[0]!.processes.length === 0, 5_000), "pruned");
      assert.deepEqual(await computePids(dir), []);
    });

    it("crasher hang runs until killed; SIGTERM kills it (no handler) and unregisters it", async () => {
      const dir = await node("H100-80GB", 1);
      const c = start(dir, "crasher", ["--mode", "hang"]);
      assert.ok(await until(() => c.out.includes("SLICECHECK crasher mode=hang armed"), 10_000));
      await new Promise((r) => setTimeout(r, 700));
      assert.equal(c.child.exitCode, null, "still running");
      assert.deepEqual(await computePids(dir), [c.child.pid]);
      c.child.kill("SIGTERM");
      assert.equal((await c.done).signal, "SIGTERM");
      assert.deepEqual(await computePids(dir), []);
    });

    it("no device: a MIG-enabled GPU named by UUID or index is not a CUDA device", async () => {
      const dir = await node("H100-80GB", 1, "-i 0 -mig 1", "mig -i 0 -cgi 19 -C");
      for (const visible of [state(dir).gpus[0]!.uuid, "0", undefined]) {
        const r = await run(dir, "stress", ["--duration", "1"], visible);
        assert.equal(r.code, 2);
        assert.equal(parseCudaErrors(r.err)[0]?.kind, "no-device", r.err);
        assert.match(
          r.err,
          /from cudaSetDeviceFlags\(cudaDeviceScheduleBlockingSync\) at slicecheck\.cuh:[1-9]\d*\)/,
        );
      }
    });
  });
