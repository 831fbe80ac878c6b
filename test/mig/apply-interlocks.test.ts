// Each interlock refuses with its own message, exit 2, and leaves the node exactly as it was
// (the simulator's own state file before and after is the oracle); a refused node stops the
// others of the same apply too.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";
import {
  freshNode,
  fullState,
  inventoryWithSlurm,
  journalsExist,
  layoutOf,
  smi,
} from "./apply-helpers.js";

const LAYOUTS = join(import.meta.dirname, "../../fixtures/layouts");
const CUSTOM = join(LAYOUTS, "custom.yaml");
const DEFAULT = join(LAYOUTS, "default.yaml");

describe("apply interlocks (real sshd, simulated A100 and H100)", function () {
  this.timeout(60_000);
  const c = useCluster([
    { gpu: "A100-40GB", driver: "535.183.01" },
    { gpu: "H100-80GB", driver: "580.65.06" },
  ]);
  const journal = () => ["--journal-dir", join(c.dir, "journal")];
  const fault = (...args: string[]) => cli("sim", "fault", ...args, "--inventory", c.inventoryPath);

  /** Applies and checks the refusal: exit 2, the message, no change, no journal. */
  async function refused(node: string, inv: string, args: string[], why: RegExp[]) {
    const dir = join(c.dir, ".sim.d/nodes", node, "state");
    const before = fullState(dir);
    const r = await cli("apply", "-i", inv, "--nodes", node, ...args, ...journal());
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stdout, new RegExp(`${node}: REFUSED, nothing was changed:`));
    for (const w of why) assert.match(r.stdout, w);
    assert.match(r.stdout, /nothing was changed on any node/);
    assert.deepEqual(fullState(dir), before);
    assert.deepEqual(journalsExist(c, node), [false, false]);
    return r;
  }

  it("someone else's compute process on the GPU; a refused node holds back the others", async () => {
    freshNode(c, "sim01");
    const dir2 = freshNode(c, "sim02");
    assert.equal((await fault("sim02", "foreign-process", "--gpu", "0")).code, 0);
    await refused(
      "sim02",
      c.inventoryPath,
      [CUSTOM, "-c", "inference"],
      [
        /- GPU 0: 1 compute process\(es\) of someone else run on it \(pid 31000 python3, 2048 MiB\)/,
      ],
    );
    // all-1g.10gb has an entry for each of the two GPUs: sim01 alone would be fine.
    const a100 = fullState(join(c.dir, ".sim.d/nodes/sim01/state"));
    const both = await cli(
      "apply",
      "-i",
      c.inventoryPath,
      DEFAULT,
      "-c",
      "all-1g.10gb",
      ...journal(),
    );
    assert.equal(both.code, 2);
    assert.match(both.stdout, /sim01: not changed, because another node was refused/);
    assert.deepEqual(fullState(join(c.dir, ".sim.d/nodes/sim01/state")), a100);
    assert.equal(layoutOf(dir2)[0]!.gis.length, 0);
  });

  it("a Slurm node that is not drained (or still draining); drained, the apply goes ahead", async () => {
    freshNode(c, "sim02");
    const inv = inventoryWithSlurm(c, { sim02: "sim02" });
    await refused(
      "sim02",
      inv,
      [CUSTOM, "-c", "inference"],
      [
        /- Slurm node sim02 is IDLE, not drained: drain it first \(scontrol update nodename=sim02 state=drain reason=slicecheck\)/,
      ],
    );
    await fault("sim02", "slurm", "--state", "draining");
    await refused(
      "sim02",
      inv,
      [CUSTOM, "-c", "inference"],
      [/- Slurm node sim02 is MIXED\+DRAIN: it is draining but jobs still run on it/],
    );
    await fault("sim02", "slurm", "--state", "drained");
    const ok = await cli(
      "apply",
      "-i",
      inv,
      "--nodes",
      "sim02",
      CUSTOM,
      "-c",
      "inference",
      ...journal(),
    );
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    const back = await cli("restore", "-i", inv, "--nodes", "sim02", ...journal());
    assert.equal(back.code, 0, back.stdout + back.stderr);
  });

  it("a config naming a GPU index the node lacks is bad input for that node, and nothing changes", async () => {
    const file = join(c.dir, "absent-gpu.yaml");
    writeFileSync(
      file,
      [
        "version: v1",
        "mig-configs:",
        "  four-gpus:",
        "    - devices: [0, 3]",
        "      mig-enabled: true",
        "      mig-devices:",
        '        "3g.20gb": 2',
        "",
      ].join("\n"),
    );
    const dir = join(c.dir, ".sim.d/nodes/sim01/state");
    const before = fullState(dir);
    const r = await cli(
      "apply",
      "-i",
      c.inventoryPath,
      "--nodes",
      "sim01",
      file,
      "-c",
      "four-gpus",
      ...journal(),
    );
    assert.equal(r.code, 3, r.stdout + r.stderr);
    assert.match(
      r.stdout + r.stderr,
      /sim01.*config 'four-gpus', entry 1 \(line 4\) names GPU 3, which this node does not have \(its GPUs: 0\)/s,
    );
    assert.deepEqual(fullState(dir), before);
  });

  it("driver clients block a MIG mode change, not a change of the geometry alone", async () => {
    const dir = freshNode(c, "sim02");
    for (const name of ["nvidia-persistenced", "nv-hostengine", "nvidia_drm"]) {
      assert.equal((await fault("sim02", "holder", "--name", name)).code, 0);
    }
    await refused(
      "sim02",
      c.inventoryPath,
      [CUSTOM, "-c", "inference"],
      [
        /- GPU 0: a MIG mode change needs every GPU client gone, but nvidia-persistenced is running: stop it \(systemctl stop nvidia-persistenced\)/,
        /- GPU 0: .* but DCGM's nv-hostengine is running/,
        /- GPU 0: .* but the nvidia_drm kernel module is loaded: unload it/,
      ],
    );
    // With MIG already on, only GIs change: the clients do not stand in the way.
    await fault("sim02", "--clear");
    smi(dir, "-mig", "1");
    await fault("sim02", "holder", "--name", "nvidia-persistenced");
    const r = await cli(
      "apply",
      "-i",
      c.inventoryPath,
      "--nodes",
      "sim02",
      CUSTOM,
      "-c",
      "inference",
      ...journal(),
    );
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(layoutOf(dir)[0]!.gis.length, 4);
    const back = await cli("restore", "-i", c.inventoryPath, "--nodes", "sim02", ...journal());
    assert.equal(back.code, 0, back.stdout + back.stderr);
    assert.deepEqual(layoutOf(dir)[0]!.gis, []);
  });

  it("an Ampere GPU whose reset the hypervisor blocks (VM passthrough)", async () => {
    freshNode(c, "sim01");
    assert.equal((await fault("sim01", "no-reset", "--gpu", "0")).code, 0);
    await refused(
      "sim01",
      c.inventoryPath,
      [CUSTOM, "-c", "mixed-node"],
      [
        /- GPU 0 \(NVIDIA A100-SXM4-40GB\) runs in a VM passthrough: its MIG mode change needs a GPU reset, which the hypervisor may block/,
      ],
    );
  });
});
