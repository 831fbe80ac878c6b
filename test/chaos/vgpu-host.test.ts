// A vGPU host's GPU with active vGPUs serves other VMs' tenants: the isolation suite must never
// fault it (an interlock, like someone else's compute process), and its checks say why, naming
// the vGPUs. Planted with `sim fault NODE vgpu --name host` (2 active vGPUs); cleared, the
// interlock lets the suite go ahead.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { clearFaults, plantFault } from "../../sim/src/faults.js";
import type { CheckRecord } from "../../src/verdicts/checks.js";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";

describe("vGPU host interlock (run --suites isolation, real sshd, simulated H100)", function () {
  this.timeout(240_000);
  const c = useCluster([{ gpu: "H100-80GB", driver: "580.65.06", gpus: 1 }]);
  const state = () => join(c.dir, ".sim.d/nodes/sim01/state");
  const isolation = async (tag: string) => {
    const out = join(c.dir, tag);
    const r = await cli(
      "run",
      "-i",
      c.inventoryPath,
      "--suites",
      "isolation",
      "--faults",
      "oom",
      "--duration",
      "1",
      "--out",
      out,
      "--json",
    );
    const history = join(out, "history.jsonl");
    const faultEvents = existsSync(history)
      ? readFileSync(history, "utf8")
          .split("\n")
          .filter((l) => l.includes('"op":"fault"')).length
      : 0;
    const checks = (JSON.parse(r.stdout) as { checks: CheckRecord[] }).checks;
    return { r, checks, faultEvents };
  };

  it("a vGPU host with 2 active vGPUs is never faulted: its checks are broken, naming the vGPUs", async () => {
    await plantFault(state(), "vgpu", { gpu: 0, name: "host" });
    const { r, checks, faultEvents } = await isolation("host");
    assert.equal(r.code, 2, r.stderr);
    assert.equal(faultEvents, 0, "no fault may be injected on a vGPU host");
    assert.ok(checks.length > 0);
    for (const x of checks) {
      assert.equal(x.status, "broken", `${x.title}: ${x.message}`);
      assert.match(x.message, /vGPU host serving 2 active vGPU\(s\)/);
      assert.match(x.message, /NVIDIA H100-\d+C of VM vm-gpu0-1; NVIDIA H100-\d+C of VM vm-gpu0-2/);
    }
    assert.match(r.stderr, /suites that inject faults are refused: GPU 0 is a vGPU host/);
  });

  // The interlock's judgement on the same reads is doctor's (readiness): planted, the isolation
  // suite would refuse; cleared, it would go ahead. (A whole soft-route isolation run takes
  // minutes; the run above already shows what the refusal does to it.)
  it("doctor says the same: not ready for isolation while the vGPUs run, ready once they are gone", async () => {
    const doctor = async () => {
      const r = await cli("doctor", "-i", c.inventoryPath, "--json");
      return (
        JSON.parse(r.stdout) as {
          nodes: {
            ready: boolean;
            notReady: { blocks: string; check: string; message: string }[];
          }[];
        }
      ).nodes[0]!;
    };
    await plantFault(state(), "vgpu", { gpu: 0, name: "host" });
    const host = await doctor();
    assert.equal(host.ready, false);
    const b = host.notReady.find((x) => x.check === "vgpu-host");
    assert.ok(b, JSON.stringify(host.notReady));
    assert.equal(b.blocks, "isolation");
    await clearFaults(state());
    const plain = await doctor();
    assert.deepEqual(plain.notReady, []);
    assert.equal(plain.ready, true);
  });
});
