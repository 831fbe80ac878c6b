// Route detection on simulated nodes over real sshd, one mode at a time: a whole card alone, two
// processes time-sliced on it, an MPS daemon, MIG, and a vGPU guest and host (planted). The
// route is read from what the node prints (`-q`, `vgpu -q`, the MPS pipe, the compute
// processes), so each case also proves the others are not the default answer.
import assert from "node:assert/strict";
import {
  describeRoute,
  promisesOf,
  promiseText,
  readRoutes,
  routeOf,
} from "../../src/chaos/routes.js";
import type { NodeSpec } from "../../src/inventory/types.js";
import { parseVirtualization } from "../../src/nvsmi/virt.js";
import { newRunId } from "../../src/transport/open.js";
import { SshTransport } from "../../src/transport/ssh.js";
import { discoverInstances } from "../../src/workloads/instances.js";
import { runOnInstances } from "../../src/workloads/launcher.js";
import { stressSpec } from "../../src/workloads/specs.js";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";
import { tempDir } from "../helpers/tmp.js";

describe("routes: each GPU's route as the node shows it (simulated H100, real sshd)", function () {
  this.timeout(90_000);
  const c = useCluster([{ gpu: "H100-80GB", driver: "580.65.06" }]);
  const out = tempDir("routes");
  let node: NodeSpec;
  let t: SshTransport;
  before(async () => {
    node = c.inventory.nodes[0]!;
    t = new SshTransport(node, { runId: newRunId() });
    await t.connect();
  });
  after(async () => {
    await t?.close();
  });
  afterEach(async () => {
    await cli("sim", "fault", "sim01", "--clear", "--inventory", c.inventoryPath);
  });
  const route = async () => {
    const { instances } = await discoverInstances(t);
    return (await readRoutes(t, instances)).get(0)!;
  };

  it("a whole card alone, time-sliced by two processes, and under an MPS daemon", async () => {
    assert.deepEqual(await route(), { kind: "whole-card" });
    const { instances } = await discoverInstances(t);
    const spec = { ...stressSpec(4, 0.5) };
    const running = runOnInstances([t], [instances[0]!, { ...instances[0]! }], spec, {
      outDir: out,
    });
    let seen = "";
    for (let k = 0; k < 30 && seen !== "time-slicing"; k++) {
      seen = (await route()).kind;
      if (seen !== "time-slicing") await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(seen, "time-slicing", "two compute processes on one card without MPS");
    const done = await running;
    assert.deepEqual(
      done.map((d) => d.exitCode),
      [0, 0],
    );
    const on = await t.exec({ argv: ["nvidia-cuda-mps-control", "-d"] }, { timeoutMs: 30_000 });
    assert.equal(on.exitCode, 0, on.stderr);
    try {
      const r = await route();
      assert.equal(r.kind, "mps");
      // The limits are the clients' own: unknown to the node's listing, so no memory promise.
      assert.deepEqual(promisesOf(r), { compute: false, memory: false, fault: false });
      assert.equal(describeRoute(r), "MPS (no limits)");
    } finally {
      await t.exec({ shell: "echo quit | nvidia-cuda-mps-control" }, { timeoutMs: 30_000 });
    }
    assert.equal((await route()).kind, "whole-card");
  });

  it("a vGPU guest and a vGPU host with its scheduler policy", async () => {
    let p = await cli(
      "sim",
      "fault",
      "sim01",
      "vgpu",
      "--name",
      "guest",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(p.code, 0, p.stderr);
    // The guest's framebuffer (memory.total; an H100-20C's 20 GiB) is its memory promise.
    const guest = await route();
    assert.deepEqual(guest, { kind: "vgpu-guest", vgpuFramebufferMiB: 20480 });
    assert.equal(describeRoute(guest), "vGPU (guest, framebuffer 20480 MiB)");
    await cli("sim", "fault", "sim01", "--clear", "--inventory", c.inventoryPath);
    p = await cli(
      "sim",
      "fault",
      "sim01",
      "vgpu",
      "--name",
      "host",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(p.code, 0, p.stderr);
    const r = await route();
    assert.deepEqual(r, { kind: "vgpu-host", scheduler: "BEST_EFFORT" });
    assert.equal(describeRoute(r), "vGPU (host, scheduler BEST_EFFORT)");
    const q = await t.exec({ argv: ["nvidia-smi", "vgpu", "-q"] }, { timeoutMs: 30_000 });
    assert.match(q.stdout, /Active vGPUs\s+: 2/);
  });

  it("MIG: instances on the GPU", async () => {
    for (const argv of [
      ["nvidia-smi", "-i", "0", "-mig", "1"],
      ["nvidia-smi", "mig", "-i", "0", "-cgi", "19,19", "-C"],
    ]) {
      const r = await t.exec({ argv }, { timeoutMs: 30_000 });
      assert.equal(r.exitCode, 0, r.stdout);
    }
    const r = await route();
    assert.deepEqual(r, { kind: "mig" });
    assert.deepEqual(promisesOf(r), { compute: true, memory: true, fault: true });
  });
});

describe("routes: pure reading", () => {
  it("reads the virtualization mode and a host's vGPU count by key, per GPU bus id", () => {
    const q = [
      "GPU 00000000:98:00.0",
      "    Product Name                          : NVIDIA H100 NVL",
      "    GPU Virtualization Mode",
      "        Virtualization Mode               : Host VGPU",
      "        vGPU Scheduler Policy             : EQUAL_SHARE",
      "GPU 00000000:99:00.0",
      "    Product Name                          : NVIDIA H100 NVL",
    ].join("\n");
    const v = parseVirtualization(
      q,
      "GPU 00000000:98:00.0\n    Active vGPUs                          : 3\n",
    );
    assert.deepEqual(v, [
      { pciBusId: "00000000:98:00.0", mode: "Host VGPU", scheduler: "EQUAL_SHARE", activeVgpus: 3 },
      { pciBusId: "00000000:99:00.0", mode: null, scheduler: null, activeVgpus: null },
    ]);
  });

  it("gives vGPU precedence over MIG, MIG over MPS, and needs two processes for time-slicing", () => {
    const f = {
      gpu: 0,
      pciBusId: null,
      migEnabled: true,
      virtualizationMode: "VGPU",
      scheduler: null,
      mpsDaemon: true,
      computeProcesses: 2,
    };
    assert.equal(routeOf(f).kind, "vgpu-guest");
    assert.equal(routeOf({ ...f, virtualizationMode: "None" }).kind, "mig");
    assert.equal(routeOf({ ...f, virtualizationMode: null, migEnabled: false }).kind, "mps");
    const plain = { ...f, virtualizationMode: null, migEnabled: false, mpsDaemon: false };
    assert.equal(routeOf(plain).kind, "time-slicing");
    assert.equal(routeOf({ ...plain, computeProcesses: 1 }).kind, "whole-card");
    assert.deepEqual(promisesOf({ kind: "mps", memLimitMiB: 1024 }), {
      compute: false,
      memory: true,
      fault: false,
    });
  });

  it("a vGPU promises memory isolation; its scheduler policy decides the compute expected", () => {
    for (const kind of ["vgpu-guest", "vgpu-host"] as const)
      assert.deepEqual(promisesOf({ kind }), { compute: false, memory: true, fault: false });
    const guest = (scheduler: string | null) =>
      promiseText(scheduler ? { kind: "vgpu-guest", scheduler } : { kind: "vgpu-guest" });
    assert.match(guest("BEST_EFFORT"), /^promises memory isolation; compute shared \(best effort/);
    assert.match(guest("EQUAL_SHARE"), /equal share .*1\/N of the GPU per active vGPU/);
    assert.match(guest("FIXED_SHARE"), /fixed share/);
    assert.match(guest(null), /policy is not shown here/);
    // The soft routes are unchanged: no memory promise without a pinned limit.
    assert.equal(promiseText({ kind: "time-slicing" }), "promises no isolation");
    assert.equal(
      describeRoute(
        routeOf({
          gpu: 0,
          pciBusId: null,
          migEnabled: false,
          virtualizationMode: "VGPU",
          scheduler: "EQUAL_SHARE",
          mpsDaemon: false,
          computeProcesses: 0,
        }),
      ),
      "vGPU (guest, scheduler EQUAL_SHARE)",
    );
  });
});
