import assert from "node:assert/strict";
import { join } from "node:path";
import { type PlanCliOptions, planCommand } from "../../src/cli/commands/plan.js";
import { type ErrorCode, isSlicecheckError } from "../../src/errors.js";

const LAYOUTS = join(import.meta.dirname, "../../fixtures/layouts");
const at = (f: string) => join(LAYOUTS, f);

async function plan(layout: string | undefined, o: PlanCliOptions) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await planCommand(layout, o, { out: (l) => out.push(l), err: (l) => err.push(l) });
  const text = out.join("\n");
  return { code, text, err, json: () => JSON.parse(text) as Record<string, unknown> };
}

async function refused(layout: string | undefined, o: PlanCliOptions, code: ErrorCode) {
  try {
    await planCommand(layout, o, { out: () => {}, err: () => {} });
  } catch (e) {
    assert.ok(isSlicecheckError(e, code), String(e));
    return e.message;
  }
  assert.fail("expected a refusal");
}

interface DeviceJson {
  gpu: number;
  appliesTo: "all" | number[];
  fits: boolean;
  instances: { profile: string; start: number; size: number; computeInstances: unknown[] }[];
  commands: string[][];
}

describe("slicecheck plan", () => {
  it("exit 0 and a slice map with the commands when it fits", async () => {
    const r = await plan(at("placements.yaml"), { config: "upper-3g", gpu: "H100" });
    assert.equal(r.code, 0);
    assert.deepEqual(r.text.split("\n"), [
      `config 'upper-3g' of ${at("placements.yaml")} on H100-80GB (NVIDIA H100 80GB HBM3, 0x233010DE), driver 580.173.02`,
      "every GPU (entry 1, line 9): fits",
      "     0 1 2 3 4 5 6 7",
      "    [A A|B B|C C C C]",
      "    A  2g.20gb  slices 0-1   CI 2g.20gb",
      "    B  2g.20gb  slices 2-3   CI 2g.20gb",
      "    C  3g.40gb  slices 4-7   CI 3g.40gb",
      "  commands (shown for GPU 0; use -i N for each GPU):",
      "    nvidia-smi mig -cgi 9:4 -C -i 0",
      "    nvidia-smi mig -cgi 14:0 -C -i 0",
      "    nvidia-smi mig -cgi 14:2 -C -i 0",
      "result: fits",
    ]);
  });

  it("--json when it fits: devices with instances and compute instances, and the commands", async () => {
    const r = await plan(at("custom.yaml"), { config: "per-index", gpu: "0x233010DE", json: true });
    assert.equal(r.code, 0);
    const j = r.json();
    assert.equal(j.fits, true);
    assert.equal(j.gpu, "H100-80GB");
    assert.equal(j.driver, "580.173.02");
    const devices = j.devices as DeviceJson[];
    assert.deepEqual(
      devices.map((d) => [d.gpu, d.instances.length, d.commands.length]),
      [
        [0, 7, 7],
        [1, 7, 7],
        [2, 2, 2],
        [3, 2, 2],
        [4, 0, 0],
        [5, 0, 0],
        [6, 0, 0],
        [7, 0, 0],
      ],
    );
    assert.deepEqual(devices[2]!.instances[1], {
      profile: "3g.40gb",
      profileId: 9,
      start: 4,
      size: 4,
      placedBy: "command",
      computeInstances: [{ profile: "3g.40gb", profileId: 2, start: 0, size: 3 }],
    });
    assert.deepEqual((j.commands as string[][]).length, 18);
    assert.deepEqual(devices[3]!.commands[0], [
      "nvidia-smi",
      "mig",
      "-cgi",
      "9:0",
      "-C",
      "-i",
      "3",
    ]);
    assert.deepEqual([j.reasons, j.alternatives], [[], []]);
  });

  it("exit 1 with the reasons and the closest layouts when it does not fit", async () => {
    const r = await plan(at("unfit.yaml"), { config: "impossible", gpu: "H100-80GB" });
    assert.equal(r.code, 1);
    const lines = r.text.split("\n");
    assert.equal(lines[1], "every GPU (entry 1, line 23): does not fit");
    assert.equal(lines[2], "  why:");
    assert.match(lines[3]!, /^ {4}- 2g\.20gb does not fit: it can start only at slice 0, 2 or 4/);
    assert.equal(lines[4], "  closest layouts that fit:");
    assert.ok(lines.includes("    - 2g.20gb × 2, 3g.40gb × 1  (replace 4g.40gb with 3g.40gb)"));
    assert.equal(lines[lines.length - 1], "result: does not fit");
    const j = (
      await plan(at("unfit.yaml"), { config: "too-many", gpu: "H100", json: true })
    ).json();
    assert.equal(j.fits, false);
    assert.deepEqual(j.reasons, [
      "3 × 3g.40gb asked, but H100-80GB at driver 580.173.02 offers at most 2 3g.40gb instances",
      "the GPU instances need 12 memory slices (3 × 3g.40gb = 12), but H100-80GB has 8",
    ]);
    assert.deepEqual((j.alternatives as { migDevices: unknown; gpu: number }[])[0], {
      gpu: 0,
      migDevices: { "3g.40gb": 2 },
      distance: 1,
      change: "drop 3g.40gb",
    });
  });

  it("a config with no entry for the GPU is refused for that GPU with that reason", async () => {
    const r = await plan(at("unfit.yaml"), { config: "wrong-gpu", gpu: "H200", json: true });
    assert.equal(r.code, 1);
    const j = r.json();
    assert.deepEqual([j.fits, j.devices], [false, []]);
    assert.deepEqual(j.reasons, [
      "config 'wrong-gpu' has no entry for H200 (PCI device id 0x233510DE): its entries apply only to 0x20B710DE",
    ]);
  });

  it("plans for an older driver: plain profile IDs and a 4g + 3g refusal", async () => {
    const ok = await plan(at("default.yaml"), {
      config: "all-balanced",
      gpu: "A100-80GB",
      driver: "470.42.01",
      json: true,
    });
    assert.equal(ok.code, 0);
    assert.deepEqual(
      (ok.json().commands as string[][]).map((c) => c[3]),
      ["9", "14", "19", "19"],
    );
    const bad = await plan(at("custom.yaml"), {
      config: "train-and-dev",
      gpu: "A100-80GB",
      driver: "470.42.01",
    });
    assert.equal(bad.code, 1);
    assert.match(bad.text, /cannot be used together before driver R510/);
  });

  it("--enumerate --json lists every combination", async () => {
    const r = await plan(undefined, { gpu: "H100", enumerate: true, json: true });
    assert.equal(r.code, 0);
    const j = r.json() as { gpu: string; driver: string; combinations: Record<string, number>[] };
    assert.deepEqual([j.gpu, j.driver, j.combinations.length], ["H100-80GB", "580.173.02", 127]);
    const keys = j.combinations.map((c) => JSON.stringify(c));
    assert.ok(keys.includes('{"1g.10gb":7}'));
    assert.ok(keys.includes('{"3g.40gb":1,"4g.40gb":1}'));
    assert.ok(!keys.includes('{"2g.20gb":2,"4g.40gb":1}'));
    const a30 = await plan(undefined, { gpu: "A30", driver: "460.73.01", enumerate: true });
    assert.equal(
      a30.text.split("\n")[0],
      "A30, driver 460.73.01: 9 combinations of GPU-instance profiles fit",
    );
    assert.equal(a30.text.split("\n").length, 10);
  });

  it("refuses bad input before planning (exit 3 through the caller)", async () => {
    assert.match(
      await refused(undefined, { gpu: "V100" }, "USAGE"),
      /^unknown GPU 'V100'; give a catalogued product \(A30, A100-40GB/,
    );
    assert.match(
      await refused(at("default.yaml"), { gpu: "H100", driver: "latest" }, "USAGE"),
      /'latest' is not a driver version/,
    );
    assert.match(
      await refused(at("default.yaml"), { gpu: "H200", driver: "535.183.01" }, "USAGE"),
      /H200 has no MIG support before driver 550\.90\.07/,
    );
    assert.equal(
      await refused(undefined, { gpu: "H100" }, "USAGE"),
      "plan needs a LAYOUT file (a mig-parted config) or --enumerate",
    );
    assert.match(
      await refused(at("default.yaml"), { gpu: "H100", enumerate: true }, "USAGE"),
      /--enumerate .* takes no LAYOUT/,
    );
    assert.match(
      await refused(at("default.yaml"), { gpu: "H100", config: "all-10g" }, "USAGE"),
      /default\.yaml has no config 'all-10g'; it has: all-disabled, all-enabled, /,
    );
    assert.match(
      await refused(at("invalid.yaml"), { gpu: "H100", config: "broken" }, "LAYOUT"),
      /invalid\.yaml:5: config 'broken', entry 1, devices: expected "all"/,
    );
    assert.match(
      await refused(at("nope.yaml"), { gpu: "H100" }, "LAYOUT"),
      /nope\.yaml: cannot read the layout file \(ENOENT\)/,
    );
  });
});
