// End to end: a real simulated node (sshd), MIG set up over SSH, the built-in stress on two MIG
// instances at once through `CUDA_VISIBLE_DEVICES=MIG-…`, and an Xid read back with dmesg.
import assert from "node:assert/strict";
import type { NodeSpec } from "../../../src/inventory/types.js";
import { parseGpus } from "../../../src/nvsmi/gpus.js";
import { parseLgi } from "../../../src/nvsmi/lgi.js";
import { parseXid } from "../../../src/nvsmi/xid.js";
import { newRunId } from "../../../src/transport/open.js";
import { SshTransport } from "../../../src/transport/ssh.js";
import { parseBuiltinOutput } from "../../../src/workloads/parsers/builtin.js";
import { startCluster, type TestCluster } from "../../../test/helpers/cluster.js";

describe("simulated workloads end to end (real sshd)", function () {
  this.timeout(60_000);
  let cluster: TestCluster;
  let t: SshTransport;

  before(async () => {
    cluster = await startCluster([{ gpu: "H100-80GB", gpus: 1, driver: "580.65.06" }]);
    t = new SshTransport(cluster.inventory.nodes[0] as NodeSpec, { runId: newRunId() });
  });
  after(async () => {
    await t?.close();
    await cluster?.stop();
  });

  async function sh(argv: string[], env?: Record<string, string>) {
    const r = await t.exec({ argv }, { timeoutMs: 30_000, env });
    return r;
  }

  it("stress on a 1g and a 3g instance over SSH: TFLOP/s in proportion to their SMs", async () => {
    for (const argv of [
      ["nvidia-smi", "-i", "0", "-mig", "1"],
      ["nvidia-smi", "mig", "-i", "0", "-cgi", "19,9", "-C"],
    ]) {
      const r = await sh(argv);
      assert.equal(r.exitCode, 0, r.stdout + r.stderr);
    }
    const devices = parseGpus((await sh(["nvidia-smi", "-L"])).stdout).gpus[0]!.migDevices;
    const small = devices.find((d) => d.name.startsWith("1g"))!;
    const big = devices.find((d) => d.name.startsWith("3g"))!;
    const stress = ["slicecheck-stress", "--duration", "1.5", "--interval", "0.25"];
    const [a, b] = await Promise.all(
      [small, big].map((d) => sh(stress, { CUDA_VISIBLE_DEVICES: d.uuid })),
    );
    assert.equal(a!.exitCode, 0, a!.stderr);
    assert.equal(b!.exitCode, 0, b!.stderr);
    const ta = parseBuiltinOutput(a!.stdout).stressFinal!.tflops;
    const tb = parseBuiltinOutput(b!.stdout).stressFinal!.tflops;
    const ratio = tb / ta;
    assert.ok(Math.abs(ratio / (60 / 16) - 1) < 0.03, `3g/1g = ${ratio}, SMs 60/16`);

    const crash = await sh(["slicecheck-crasher", "--mode", "illegal-address"], {
      CUDA_VISIBLE_DEVICES: small.uuid,
    });
    assert.equal(crash.exitCode, 2);
    const gis = parseLgi((await sh(["nvidia-smi", "mig", "-lgi"])).stdout).gpuInstances;
    const smallGi = gis.find((g) => g.profileId === 19)!.id;
    const xids = parseXid((await sh(["dmesg", "-T"])).stdout).events;
    assert.deepEqual(
      xids.map((x) => [x.xid, x.gpuInstanceId, x.computeInstanceId]),
      [[31, smallGi, 0]],
    );
  });
});
