// doctor compares the nvcc the workloads would be built with against the driver's CUDA (the
// banner's "CUDA Version: 12.2"): nvcc 13.0 on a 535 driver (CUDA 12.2) cannot produce anything
// that starts there, so the node is not ready, with the fix. Planted with `sim fault nvcc`.
import assert from "node:assert/strict";
import { join } from "node:path";
import { clearFaults, plantFault } from "../../sim/src/faults.js";
import { cudaMismatch } from "../../src/cli/commands/doctor.js";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";

interface Node {
  name: string;
  ready: boolean;
  driverCuda: string | null;
  nvcc: string | null;
  problems: string[];
  warnings: string[];
}

describe("doctor: nvcc against the driver's CUDA (real sshd, simulated A100 on 535)", function () {
  this.timeout(90_000);
  const c = useCluster([{ gpu: "A100-80GB", driver: "535.183.01", gpus: 1 }]);
  const state = () => join(c.dir, ".sim.d/nodes/sim01/state");
  const doctor = async () => {
    const r = await cli("doctor", "-i", c.inventoryPath, "--json");
    return { code: r.code, node: (JSON.parse(r.stdout) as { nodes: Node[] }).nodes[0]! };
  };
  afterEach(() => clearFaults(state()));

  it("nvcc 13.0 on a driver whose CUDA is 12.2: not ready, with the fix", async () => {
    await plantFault(state(), "nvcc", { name: "13.0" });
    const { code, node } = await doctor();
    assert.equal(code, 2);
    assert.equal(node.ready, false);
    assert.equal(node.driverCuda, "12.2");
    assert.equal(node.nvcc, "13.0");
    const p = node.problems.find((x) => x.startsWith("nvcc 13.0"));
    assert.ok(p, node.problems.join("; "));
    assert.match(p, /driver runs CUDA 12\.2 at most/);
    assert.match(p, /install a CUDA toolkit of release 12\.2 or older/);
    assert.match(p, /cuda-compat-13-0/);
  });

  it("nvcc 12.2 on the same driver: ready", async () => {
    await plantFault(state(), "nvcc", { name: "12.2" });
    const { code, node } = await doctor();
    assert.equal(node.nvcc, "12.2");
    assert.deepEqual(node.problems, []);
    assert.equal(node.ready, true);
    assert.equal(code, 0);
  });

  it("the comparison: a newer major blocks, a newer minor warns, an older one is fine", () => {
    assert.equal(cudaMismatch("13.0", "12.2")?.blocks, true);
    assert.equal(cudaMismatch("12.4", "12.2")?.blocks, false);
    assert.equal(cudaMismatch("12.2", "12.2"), null);
    assert.equal(cudaMismatch("11.8", "12.2"), null);
    assert.equal(cudaMismatch("12.2", null)?.blocks, false);
    // Forward compatibility (cuda-compat's libcuda in the toolkit's compat/ folder): reported,
    // not blocking.
    const fwd = cudaMismatch("13.0", "12.2", "/usr/local/cuda-13.0/compat/libcuda.so.1");
    assert.equal(fwd?.blocks, false);
    assert.match(
      fwd?.message ?? "",
      /forward-compatibility libraries in \/usr\/local\/cuda-13\.0\/compat/,
    );
  });
});
