// Device fencing in the simulation (what a Slurm job's device cgroup gives it under
// ConstrainDevices=yes): the job's CUDA and nvidia-smi -L see its own instance only; a
// neighbour's UUID names nothing; the TaskProlog's lines and caps view follow the job's record.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fenceOf } from "../src/fence.js";
import { migMinor } from "../src/nvsmi/caps.js";
import { formatList } from "../src/nvsmi/fmt/list.js";
import { layoutFor } from "../src/nvsmi/layout.js";
import { viewOf } from "../src/nvsmi/view.js";
import {
  allocationOf,
  constrainDevices,
  fenceLines,
  heldDevices,
  writeCapsView,
} from "../src/slurmd/cgroup.js";
import { devicesOf } from "../src/slurmd/conf.js";
import { visibleDevices } from "../src/workloads/device.js";
import { cleanupNodes } from "./nvsmi/helpers.js";
import { h100TwoSmall } from "./nvsmi/scenarios.js";

describe("sim: device fencing of a Slurm job (ConstrainDevices)", () => {
  after(cleanupNodes);

  it("a fenced CUDA sees its own instance (unset or index 0) and nothing by a neighbour's UUID", async () => {
    const n = await h100TwoSmall();
    const s = n.state();
    const [mine, other] = devicesOf(s);
    assert.ok(mine && other);
    const fence = new Set([mine.uuid.toLowerCase()]);
    assert.deepEqual(
      visibleDevices(s, undefined, fence).map((d) => d.uuid),
      [mine.uuid],
    );
    assert.deepEqual(
      visibleDevices(s, "0", fence).map((d) => d.uuid),
      [mine.uuid],
    );
    assert.deepEqual(visibleDevices(s, other.uuid, fence), []);
    assert.deepEqual(visibleDevices(s, "1", fence), []);
    // Unfenced, the neighbour's UUID is a device like any other.
    assert.deepEqual(
      visibleDevices(s, other.uuid).map((d) => d.uuid),
      [other.uuid],
    );
  });

  it("a fenced nvidia-smi -L lists the GPU and the job's own MIG device, numbered from 0", async () => {
    const n = await h100TwoSmall();
    const s = n.state();
    const [, second] = devicesOf(s);
    assert.ok(second);
    const views = s.gpus.map((g) => viewOf(s, g));
    const layout = layoutFor(s.driver);
    assert.equal(formatList(views, layout).length, 3);
    const fenced = formatList(views, layout, new Set([second.uuid.toLowerCase()]));
    assert.equal(fenced.length, 2);
    assert.match(fenced[0] ?? "", /^GPU 0: /);
    assert.match(fenced[1] ?? "", new RegExp(`Device  0: \\(UUID: ${second.uuid}\\)$`));
    assert.deepEqual(formatList(views, layout, new Set()), []);
  });

  it("reads the fence from the environment: unset is no fence, `none` fences everything", () => {
    assert.equal(fenceOf({}), null);
    assert.deepEqual([...(fenceOf({ SLICECHECK_SIM_FENCE: "none" }) ?? [])], []);
    assert.deepEqual(
      [...(fenceOf({ SLICECHECK_SIM_FENCE: "MIG-A,MIG-b" }) ?? [])],
      ["mig-a", "mig-b"],
    );
  });

  it("the TaskProlog fences a job holding gres to its record's devices, only when constrained", async () => {
    const n = await h100TwoSmall();
    const devices = devicesOf(n.state());
    const conf = { devices };
    // As Slurm 22.05 prints a job's per-node line.
    const show =
      "   JOB_GRES=gpu:1g.10gb:1\n     Nodes=sim01 CPU_IDs=0 Mem=0 GRES=gpu:1g.10gb:1(IDX:1)\n";
    const got = allocationOf(show, "sim01", conf);
    assert.deepEqual(
      got?.map((d) => d.uuid),
      [devices[1]?.uuid],
    );
    assert.equal(allocationOf(show, "sim02", conf), null);
    assert.equal(allocationOf("JobId=3 JobName=x\n", "sim01", conf), null);
    assert.equal(constrainDevices("# x\nConstrainDevices=yes\n"), true);
    assert.equal(constrainDevices("ConstrainDevices=no\n"), false);
    assert.equal(constrainDevices(""), false);
    assert.deepEqual(fenceLines({ constrained: true, allocated: got, view: "/v", cvd: "1" }), [
      "export SLICECHECK_DEV=/v",
      `export SLICECHECK_SIM_FENCE=${devices[1]?.uuid}`,
      "export CUDA_VISIBLE_DEVICES=0",
      "export GPU_DEVICE_ORDINAL=0",
    ]);
    assert.deepEqual(fenceLines({ constrained: false, allocated: got, view: "/v", cvd: "1" }), [
      "export SLICECHECK_DEV=/v",
      "unset SLICECHECK_SIM_FENCE",
    ]);
    assert.deepEqual(
      fenceLines({ constrained: true, allocated: null, view: null, cvd: undefined }),
      ["unset SLICECHECK_SIM_FENCE", "unset SLICECHECK_DEV"],
    );
    // A job holding no gres: denied every device when constrained (a fence of none), left
    // unfenced when not.
    const none = heldDevices(allocationOf("JobId=3 JobName=x\n", "sim01", conf), true);
    assert.deepEqual(none, []);
    assert.deepEqual(
      fenceLines({ constrained: true, allocated: none, view: "/v", cvd: undefined }),
      ["export SLICECHECK_DEV=/v", "export SLICECHECK_SIM_FENCE=none"],
    );
    assert.equal(heldDevices(null, false), null);
    assert.deepEqual(fenceOf({ SLICECHECK_SIM_FENCE: "none" })?.size, 0);
  });

  it("the job's /dev/nvidia-caps: its own GI and CI caps open, its neighbour's refused by open()", async () => {
    const n = await h100TwoSmall();
    const devices = devicesOf(n.state());
    const root = mkdtempSync(join(tmpdir(), "slicecheck-caps-"));
    try {
      const mine = devices[0];
      assert.ok(mine);
      const view = writeCapsView(join(root, "job"), devices, [mine]);
      const opens = (minor: number) =>
        spawnSync("sh", ["-c", `: < "${view}/nvidia-caps/nvidia-cap${minor}"`], {
          encoding: "utf8",
        });
      const other = devices[1];
      assert.ok(other && other.gi !== null && mine.gi !== null);
      assert.equal(opens(migMinor(0, mine.gi, 0)).status, 0);
      assert.equal(opens(migMinor(0, mine.gi, null)).status, 0);
      const denied = opens(migMinor(0, other.gi, 0));
      assert.notEqual(denied.status, 0);
      assert.match(denied.stderr, /cannot open/);
      assert.equal(opens(1).status, 0, "mig/config is no gres File: not Slurm's to deny");
      // Unconstrained: every cap opens.
      const all = writeCapsView(join(root, "all"), devices, null);
      assert.equal(
        spawnSync("sh", ["-c", `: < "${all}/nvidia-caps/nvidia-cap${migMinor(0, other.gi, 0)}"`])
          .status,
        0,
      );
      assert.ok(existsSync(join(all, "nvidia-caps", "nvidia-cap2")));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
