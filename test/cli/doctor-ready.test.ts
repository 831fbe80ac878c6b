// doctor's "ready" verdict against planted faults: it must say "not ready" exactly where apply
// and the isolation suite would refuse, with their words, because it asks the same interlocks
// on the same reads. Each plant is checked both ways: doctor's message is the one apply prints.
import assert from "node:assert/strict";
import { join } from "node:path";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";
import { freshNode, inventoryWithSlurm, smi } from "../mig/apply-helpers.js";

interface Blocker {
  blocks: "apply" | "isolation";
  check: string;
  gpu: number | null;
  message: string;
}
interface Node {
  name: string;
  ready: boolean;
  loginMs: number | null;
  notReady: Blocker[];
  problems: string[];
}

const CUSTOM = join(import.meta.dirname, "../../fixtures/layouts/custom.yaml");

describe("doctor: ready, or not ready and why (real sshd, planted faults)", function () {
  this.timeout(90_000);
  const c = useCluster([
    { gpu: "A100-40GB", driver: "535.183.01" },
    { gpu: "H100-80GB", driver: "580.65.06" },
  ]);
  const fault = (...args: string[]) => cli("sim", "fault", ...args, "-i", c.inventoryPath);
  async function doctor(inv = c.inventoryPath) {
    const r = await cli("doctor", "-i", inv, "--json");
    const nodes = JSON.parse(r.stdout).nodes as Node[];
    return { code: r.code, nodes, byName: (n: string) => nodes.find((x) => x.name === n)! };
  }
  /** apply's own refusal lines for sim02 (exit 2, nothing changed). */
  async function applyRefusals(inv = c.inventoryPath): Promise<string> {
    const r = await cli(
      "apply",
      "-i",
      inv,
      "--nodes",
      "sim02",
      CUSTOM,
      "-c",
      "inference",
      "--journal-dir",
      join(c.dir, "journal"),
    );
    assert.equal(r.code, 2, r.stdout + r.stderr);
    return r.stdout;
  }
  beforeEach(() => {
    freshNode(c, "sim01");
    freshNode(c, "sim02");
  });

  it("fresh nodes are ready, with the login shell's time, and doctor exits 0", async () => {
    const d = await doctor();
    assert.equal(d.code, 0, JSON.stringify(d.nodes));
    assert.deepEqual(
      d.nodes.map((n) => [n.name, n.ready, n.notReady]),
      [
        ["sim01", true, []],
        ["sim02", true, []],
      ],
    );
    assert.ok(d.nodes.every((n) => typeof n.loginMs === "number" && n.loginMs >= 0));
    const text = await cli("doctor", "-i", c.inventoryPath);
    assert.match(text.stdout, /^sim01: ready$/m);
    assert.match(text.stdout, /^NODE .* READY$/m);
  });

  it("a foreign process: not ready for apply nor isolation, in apply's words; the other node stays ready", async () => {
    assert.equal((await fault("sim02", "foreign-process", "--gpu", "0")).code, 0);
    const d = await doctor();
    assert.equal(d.code, 2);
    assert.equal(d.byName("sim01").ready, true);
    const n = d.byName("sim02");
    assert.equal(n.ready, false);
    assert.deepEqual(
      n.notReady.map((b) => [b.blocks, b.check, b.gpu]),
      [
        ["apply", "foreign-process", 0],
        ["isolation", "foreign-process", 0],
      ],
    );
    assert.match(n.notReady[1]!.message, /pid 31000 python3.*slicecheck faults no GPU in use/);
    assert.ok((await applyRefusals()).includes(n.notReady[0]!.message));
    const text = await cli("doctor", "-i", c.inventoryPath);
    assert.match(
      text.stdout,
      /^ {2}sim02: not ready: apply \(a MIG layout\) would refuse: GPU 0: 1 compute process\(es\) of someone else/m,
    );
    assert.match(
      text.stdout,
      /^sim02: not ready: apply \(a MIG layout\) and the isolation suite would refuse/m,
    );
  });

  it("nvidia-persistenced blocks the MIG mode change only: ready once MIG is on", async () => {
    await fault("sim02", "holder", "--name", "nvidia-persistenced");
    const d = await doctor();
    const n = d.byName("sim02");
    assert.deepEqual(
      n.notReady.map((b) => [b.blocks, b.check]),
      [["apply", "holder"]],
    );
    assert.ok((await applyRefusals()).includes(n.notReady[0]!.message));
    // With MIG already enabled, apply changes only the geometry, which the daemon allows.
    // (MIG is turned on with the daemon stopped, as an operator would, then it is started again.)
    await fault("sim02", "--clear");
    smi(join(c.dir, ".sim.d/nodes/sim02/state"), "-mig", "1");
    await fault("sim02", "holder", "--name", "nvidia-persistenced");
    const after = await doctor();
    assert.equal(after.byName("sim02").ready, true, JSON.stringify(after.byName("sim02")));
  });

  it("a Slurm node that is not drained (slurm_node set) refuses both; drained, ready", async () => {
    const inv = inventoryWithSlurm(c, { sim02: "sim02" });
    const d = await doctor(inv);
    const n = d.byName("sim02");
    assert.deepEqual(
      n.notReady.map((b) => [b.blocks, b.check, b.gpu]),
      [
        ["apply", "slurm", null],
        ["isolation", "slurm", null],
      ],
    );
    assert.match(n.notReady[0]!.message, /Slurm node sim02 is IDLE, not drained/);
    assert.ok((await applyRefusals(inv)).includes(n.notReady[0]!.message));
    // Without slurm_node in the inventory the same node is not asked about Slurm at all.
    assert.equal((await doctor()).byName("sim02").ready, true);
    await fault("sim02", "slurm", "--state", "drained");
    assert.equal((await doctor(inv)).byName("sim02").ready, true);
  });
});
