// `plan` from a GPU's own `-lgip`/`-lgipp` (public captures) and from a node read over SSH: the
// RTX PRO 6000 Blackwell (12-unit placement grid, +gfx, -me, +me.all) is planned from what its
// driver printed, and its built-in entry must plan the same; on H100 PCIe the listings give the
// same plan as the catalogue (each path the oracle of the other).
import assert from "node:assert/strict";
import { join } from "node:path";
import { type PlanCliOptions, planCommand } from "../../src/cli/commands/plan.js";
import { isSlicecheckError } from "../../src/errors.js";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";
import { smi, stateDir } from "../mig/apply-helpers.js";

const CAP = join(import.meta.dirname, "../../fixtures/captures");
const LAYOUTS = join(import.meta.dirname, "../../fixtures/layouts");
const RTX = join(LAYOUTS, "rtx-pro-6000.yaml");
const SERVER = {
  lgip: join(CAP, "nvidia-smi_mig-lgip_RTX-PRO-6000-Blackwell-Server_610.43.02.txt"),
  lgipp: join(CAP, "nvidia-smi_mig-lgipp_RTX-PRO-6000-Blackwell-Server_610.43.02.txt"),
  driver: "610.43.02",
};

interface Planned {
  fits: boolean;
  catalogue: string;
  devices: { instances: { profile: string; start: number; size: number }[] }[];
  commands: string[][];
  reasons: string[];
}

async function plan(layout: string | undefined, o: PlanCliOptions) {
  const out: string[] = [];
  const code = await planCommand(
    layout,
    { json: true, ...o },
    { out: (l) => out.push(l), err: () => {} },
  );
  return { code, json: JSON.parse(out.join("\n")) as Planned };
}
const placed = (p: Planned) =>
  p.devices[0]!.instances.map((i) => `${i.profile}@${i.start}:${i.size}`);

describe("plan from a GPU's own -lgip/-lgipp (RTX PRO 6000 Blackwell, public captures)", () => {
  it("four 1g.24gb on the 12-unit grid at 0, 3, 6, 9, and the filter matches the given PCI id", async () => {
    const r = await plan(RTX, { config: "all-1g.24gb", gpu: "0x2BB510DE", ...SERVER });
    assert.equal(r.code, 0, JSON.stringify(r.json.reasons));
    assert.deepEqual(placed(r.json), ["1g.24gb@0:3", "1g.24gb@3:3", "1g.24gb@6:3", "1g.24gb@9:3"]);
    assert.deepEqual(r.json.commands[0], ["nvidia-smi", "mig", "-cgi", "14:0", "-C", "-i", "0"]);
    assert.match(r.json.catalogue, /RTX-PRO-6000-Blackwell-Server_610\.43\.02\.txt \(GPU 0\)$/);
    // Without the PCI id, the entry's device-filter matches nothing: the filter was really used.
    const unfiltered = await plan(RTX, { config: "all-1g.24gb", ...SERVER });
    assert.equal(unfiltered.code, 1);
  });

  it("a half and two quarters fit; five quarters and two +me.all do not, with the driver's limits", async () => {
    const mixed = await plan(RTX, { config: "half-and-quarters", ...SERVER });
    assert.deepEqual(placed(mixed.json), ["2g.48gb@0:6", "1g.24gb@6:3", "1g.24gb@9:3"]);
    const five = await plan(RTX, { config: "five-1g", ...SERVER });
    assert.equal(five.code, 1);
    assert.ok(five.json.reasons.some((x) => /offers at most 4 1g\.24gb instances/.test(x)));
    assert.ok(five.json.reasons.some((x) => /need 15 memory slices .* has 12/.test(x)));
    const meAll = await plan(RTX, { config: "two-me-all", ...SERVER });
    assert.equal(meAll.code, 1);
    assert.ok(meAll.json.reasons.some((x) => /at most 1 1g\.24gb\+me\.all instance/.test(x)));
  });

  it("+gfx and -me variants are placed by their own profile IDs (35, 47, 67)", async () => {
    const r = await plan(RTX, { config: "graphics-mix", ...SERVER });
    assert.equal(r.code, 0, JSON.stringify(r.json.reasons));
    assert.deepEqual(
      r.json.commands.map((c) => c[3]),
      ["35:0", "47:6", "67:9"],
    );
  });

  it("pinned quarters at 3 and 6 leave no 6 contiguous units for the half", async () => {
    const r = await plan(RTX, { config: "fragmented", ...SERVER });
    assert.equal(r.code, 1);
  });

  it("enumerates on the 12-unit grid: the whole card as 4g.96gb or 4g.96gb+gfx", async () => {
    const out: string[] = [];
    await planCommand(
      undefined,
      { enumerate: true, json: true, ...SERVER },
      { out: (l) => out.push(l), err: () => {} },
    );
    const j = JSON.parse(out.join("\n")) as {
      memorySlices: number;
      combinations: Record<string, number>[];
    };
    assert.equal(j.memorySlices, 12);
    assert.ok(j.combinations.some((c) => c["4g.96gb+gfx"] === 1 && Object.keys(c).length === 1));
    assert.ok(!j.combinations.some((c) => (c["1g.24gb"] ?? 0) > 4));
  });

  it("on a catalogued GPU (H100 PCIe, 525.125.06) the captures plan exactly as the catalogue", async () => {
    const o = { config: "all-balanced" };
    const layout = join(LAYOUTS, "default.yaml");
    const fromCaptures = await plan(layout, {
      ...o,
      gpu: "H100-PCIE",
      driver: "525.125.06",
      lgip: join(CAP, "nvidia-smi_mig-lgip_H100-PCIe-80GB_525.125.06.txt"),
      lgipp: join(CAP, "nvidia-smi_mig-lgipp_H100-PCIe-80GB_525.125.06.txt"),
    });
    const builtin = await plan(layout, { ...o, gpu: "H100-PCIE", driver: "525.125.06" });
    assert.equal(builtin.code, 0, JSON.stringify(builtin.json.reasons));
    assert.deepEqual(fromCaptures.json.commands, builtin.json.commands);
    assert.deepEqual(placed(fromCaptures.json), placed(builtin.json));
    assert.equal(builtin.json.catalogue, "built-in catalogue");
  });

  for (const config of [
    "all-1g.24gb",
    "half-and-quarters",
    "five-1g",
    "two-me-all",
    "graphics-mix",
    "fragmented",
  ]) {
    it(`the built-in RTX-PRO-6000 entry plans ${config} exactly as the Server captures do`, async () => {
      const fromCaptures = await plan(RTX, { config, gpu: "0x2BB510DE", ...SERVER });
      const builtin = await plan(RTX, { config, gpu: "RTX PRO 6000", driver: "610.43.02" });
      assert.equal(builtin.json.catalogue, "built-in catalogue");
      assert.deepEqual(
        [builtin.code, builtin.json.commands, builtin.json.reasons],
        [
          fromCaptures.code,
          fromCaptures.json.commands,
          fromCaptures.json.reasons.map((r) =>
            r.replaceAll("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000"),
          ),
        ],
      );
    });
  }

  const refusals: [string, PlanCliOptions, RegExp][] = [
    [
      "--lgip without --lgipp",
      { lgip: SERVER.lgip, driver: "610.43.02" },
      /--lgip and --lgipp go together/,
    ],
    ["no --driver", { lgip: SERVER.lgip, lgipp: SERVER.lgipp }, /need --driver VERSION/],
    [
      "the files swapped",
      { lgip: SERVER.lgipp, lgipp: SERVER.lgip, driver: "610.43.02" },
      /--lgip .*lgipp.*\.txt: /,
    ],
    [
      "no GPU at all",
      {},
      /plan needs the GPU: --gpu PRODUCT .* --lgip FILE --lgipp FILE .* --node NAME/,
    ],
  ];
  for (const [name, o, why] of refusals) {
    it(`refuses ${name} (exit 3)`, async () => {
      await assert.rejects(
        planCommand(RTX, { config: "all-1g.24gb", ...o }, { out: () => {}, err: () => {} }),
        (e) => {
          assert.ok(isSlicecheckError(e), String(e));
          assert.match(e.message, why);
          return true;
        },
      );
    });
  }

  it("an unknown --gpu suggests the near product and the listings route", async () => {
    const r = await cli("plan", RTX, "-c", "all-1g.24gb", "--gpu", "H200X");
    assert.equal(r.code, 3);
    assert.match(
      r.stderr,
      /unknown GPU 'H200X' \(did you mean 'H200'\?\).*--lgip FILE --lgipp FILE/,
    );
  });
});

describe("plan --node: the node's live profiles (real sshd, simulated GPUs)", function () {
  this.timeout(90_000);
  const c = useCluster([
    { gpu: "H100-80GB", driver: "580.173.02" },
    { gpu: "A100-40GB", driver: "535.183.01" },
  ]);
  it("plans from what the node's driver lists, as apply would", async () => {
    smi(stateDir(c, "sim01"), "-mig", "1");
    const r = await cli(
      "plan",
      join(LAYOUTS, "default.yaml"),
      "-c",
      "all-1g.10gb",
      "--node",
      "sim01",
      "-i",
      c.inventoryPath,
      "--json",
    );
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const j = JSON.parse(r.stdout) as Planned;
    assert.equal(j.catalogue, "sim01 GPU 0: its driver's -lgip/-lgipp");
    assert.equal(j.devices[0]!.instances.length, 7);
  });
  it("falls back to the built-in entry where the driver lists nothing while MIG is off (R535)", async () => {
    const r = await cli(
      "plan",
      join(LAYOUTS, "default.yaml"),
      "-c",
      "all-1g.5gb",
      "--node",
      "sim02",
      "-i",
      c.inventoryPath,
      "--json",
    );
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match((JSON.parse(r.stdout) as Planned).catalogue, /^sim02 GPU 0: built-in catalogue/);
  });
  it("refuses --node with --gpu", async () => {
    const r = await cli(
      "plan",
      join(LAYOUTS, "default.yaml"),
      "-c",
      "all-1g.10gb",
      "--node",
      "sim01",
      "--gpu",
      "H100",
      "-i",
      c.inventoryPath,
    );
    assert.equal(r.code, 3);
    assert.match(r.stderr, /--node reads the GPU from the node: drop --gpu/);
  });
});
