import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isSlicecheckError } from "../../src/errors.js";
import { catalogFor } from "../../src/mig/catalog/index.js";
import { entriesFor, loadLayout, selectConfig } from "../../src/mig/layout/index.js";
import {
  builtinCatalog,
  type DeviceRequest,
  enumerateCombinations,
  fromListings,
  type PlannedGi,
  type PlannerCatalog,
  type PlanRequest,
  planRequest,
  sliceMap,
  stepArgv,
  supportsPlacementSyntax,
} from "../../src/mig/planner/index.js";
import { parseLgip, parseLgipp, stripSourceLines } from "../../src/nvsmi/index.js";

const LAYOUTS = join(import.meta.dirname, "../../fixtures/layouts");
const CAPTURES = join(import.meta.dirname, "../../fixtures/captures");

function dev(key: string, count: number): DeviceRequest {
  const m = /^(?:(\d)c\.)?(.+)$/.exec(key)!;
  return { key, gi: m[2]!, ciSlices: m[1] === undefined ? null : Number(m[1]), count };
}

function req(devices: Record<string, number>, placements: Record<string, number[]> = {}) {
  const r: PlanRequest = {
    migEnabled: true,
    devices: Object.entries(devices).map(([k, n]) => dev(k, n)),
    placements,
  };
  return r;
}

function fromFixture(file: string, config: string, entry = 0): PlanRequest {
  const e = selectConfig(loadLayout(join(LAYOUTS, file)), config).entries[entry]!;
  return { migEnabled: e.migEnabled, devices: e.migDevices, placements: e.placements };
}

const H100 = () => builtinCatalog("H100-80GB", "580.173.02");

describe("planner: layouts that fit", () => {
  it("all-balanced on H100: the 3g must take slices 4-7; commands create it first, at 9:4", () => {
    const config = selectConfig(loadLayout(join(LAYOUTS, "default.yaml")), "all-balanced");
    const e = entriesFor(config, "0x233010DE")[0]!;
    const balanced = { migEnabled: true, devices: e.migDevices, placements: e.placements };
    const r = planRequest(H100(), balanced, 2);
    assert.equal(r.fits, true);
    assert.deepEqual(r.reasons, []);
    const g3 = r.instances.find((i) => i.profile === "3g.40gb")!;
    assert.deepEqual([g3.start, g3.size, g3.placedBy], [4, 4, "command"]);
    assert.deepEqual(r.commands[0], ["nvidia-smi", "mig", "-cgi", "9:4", "-C", "-i", "2"]);
    assert.deepEqual(
      r.commands.map((c) => c[3]!.split(":")[0]),
      ["9", "14", "19", "19"],
      "largest first",
    );
    assert.deepEqual(r.instances.flatMap((i) => i.computeInstances.map((c) => c.profile)).sort(), [
      "1g.10gb",
      "1g.10gb",
      "2g.20gb",
      "3g.40gb",
    ]);
  });

  it("before R525 the driver picks placements: plain IDs, largest first, and a note", () => {
    const c = builtinCatalog("A100-80GB", "515.86.01");
    assert.equal(c.placementSyntax, false);
    const r = planRequest(c, req({ "1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1 }));
    assert.equal(r.fits, true);
    assert.deepEqual(r.commands, [
      ["nvidia-smi", "mig", "-cgi", "9", "-C", "-i", "0"],
      ["nvidia-smi", "mig", "-cgi", "14", "-C", "-i", "0"],
      ["nvidia-smi", "mig", "-cgi", "19", "-C", "-i", "0"],
      ["nvidia-smi", "mig", "-cgi", "19", "-C", "-i", "0"],
    ]);
    assert.ok(r.instances.every((i) => i.placedBy === "driver"));
    assert.match(r.notes.join("\n"), /predates `-cgi ID:start` \(R525\): the driver picks/);
    assert.equal(supportsPlacementSyntax("520.61.05"), false);
    assert.equal(supportsPlacementSyntax("525.60.13"), true);
  });

  it("explicit placements are kept and given to -cgi", () => {
    const r = planRequest(H100(), fromFixture("placements.yaml", "upper-3g"));
    assert.equal(r.fits, true);
    assert.deepEqual(
      r.instances.map((i) => [i.profile, i.start]),
      [
        ["2g.20gb", 0],
        ["2g.20gb", 2],
        ["3g.40gb", 4],
      ],
    );
    const spread = planRequest(H100(), fromFixture("placements.yaml", "spread-1g"));
    assert.deepEqual(
      spread.commands.map((c) => c[3]),
      ["19:0", "19:3", "19:6"],
    );
  });

  it("compute-instance splits: 3 × 1c.3g.40gb go in a second 3g GI, created bare, then -cci", () => {
    const r = planRequest(H100(), fromFixture("splits.yaml", "h100-3g-split"));
    assert.equal(r.fits, true);
    const split = r.instances.find((i) => i.computeInstances.length === 3)!;
    const whole = r.instances.find((i) => i.computeInstances.length === 1)!;
    assert.deepEqual(
      split.computeInstances.map((c) => [c.profile, c.profileId, c.start, c.size]),
      [
        ["1c.3g.40gb", 0, 0, 1],
        ["1c.3g.40gb", 0, 1, 1],
        ["1c.3g.40gb", 0, 2, 1],
      ],
    );
    assert.deepEqual(
      whole.computeInstances.map((c) => [c.profile, c.profileId]),
      [["3g.40gb", 2]],
    );
    const s = split.start;
    assert.deepEqual(
      r.commands.filter((c) => c.includes(`9:${s}`) || c.includes("-cci")),
      [
        ["nvidia-smi", "mig", "-cgi", `9:${s}`, "-i", "0"],
        ["nvidia-smi", "mig", "-cci", "0,0,0", "-gi", `<GI@${s}:4>`, "-i", "0"],
      ],
    );
    // `apply` fills in the GI ID that -cgi reported for the GI at that placement.
    const cci = r.steps.find((x) => x.kind === "create-ci")!;
    assert.deepEqual(
      stepArgv(cci, (gi) => (gi.start === s ? 7 : undefined)),
      ["nvidia-smi", "mig", "-cci", "0,0,0", "-gi", "7", "-i", "0"],
    );
    assert.equal(r.steps.filter((x) => x.kind === "create-ci").length, 1);
  });

  it("six 1c CIs on an A100-40GB need two 3g.20gb GPU instances", () => {
    const r = planRequest(
      builtinCatalog("A100-40GB", "580.173.02"),
      fromFixture("splits.yaml", "a100-six-1c"),
    );
    assert.equal(r.fits, true);
    assert.deepEqual(
      r.instances.map((i) => [i.profile, i.start, i.computeInstances.length]),
      [
        ["3g.20gb", 0, 3],
        ["3g.20gb", 4, 3],
      ],
    );
  });

  it("MIG off: nothing to place, nothing to run", () => {
    const r = planRequest(H100(), { migEnabled: false, devices: [], placements: {} });
    assert.deepEqual([r.fits, r.instances, r.commands], [true, [], []]);
  });

  it("renders a slice map", () => {
    const gi = (profile: string, start: number, size: number): PlannedGi => ({
      profile,
      profileId: 0,
      start,
      size,
      placedBy: "command",
      computeInstances: [{ profile, profileId: 0, start: 0, size }],
    });
    assert.deepEqual(sliceMap([gi("3g.40gb", 0, 4), gi("2g.20gb", 4, 2), gi("1g.10gb", 6, 1)], 8), [
      " 0 1 2 3 4 5 6 7",
      "[A A A A|B B|C|.]",
      "A  3g.40gb  slices 0-3   CI 3g.40gb",
      "B  2g.20gb  slices 4-5   CI 2g.20gb",
      "C  1g.10gb  slice 6      CI 1g.10gb",
    ]);
  });
});

describe("planner: layouts that do not fit, and why", () => {
  it("a profile the GPU lacks, and one its driver lacks", () => {
    const r = planRequest(H100(), req({ "5g.50gb": 1 }));
    assert.deepEqual(r.reasons, [
      "H100-80GB at driver 580.173.02 has no GPU-instance profile 5g.50gb; it offers 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb",
    ]);
    const old = planRequest(builtinCatalog("A100-40GB", "470.42.01"), req({ "1g.10gb": 4 }));
    assert.deepEqual(old.reasons, [
      "A100-40GB at driver 470.42.01 has no GPU-instance profile 1g.10gb: it comes with driver 525.125.06 or later",
    ]);
    const a30 = planRequest(builtinCatalog("A30", "460.73.01"), req({ "1g.6gb+me": 1 }));
    assert.match(
      a30.reasons[0]!,
      /no GPU-instance profile 1g\.6gb\+me: it comes with driver 470\.42\.01/,
    );
  });

  it("counts over the driver's maximum", () => {
    assert.deepEqual(planRequest(H100(), req({ "3g.40gb": 3 })).reasons, [
      "3 × 3g.40gb asked, but H100-80GB at driver 580.173.02 offers at most 2 3g.40gb instances",
      "the GPU instances need 12 memory slices (3 × 3g.40gb = 12), but H100-80GB has 8",
    ]);
    assert.deepEqual(planRequest(H100(), req({ "1g.10gb": 8 })).reasons, [
      "8 × 1g.10gb asked, but H100-80GB at driver 580.173.02 offers at most 7 1g.10gb instances",
    ]);
  });

  it("an impossible combination names the colliding profiles and slices", () => {
    const r = planRequest(H100(), fromFixture("unfit.yaml", "impossible"));
    assert.equal(r.fits, false);
    assert.deepEqual(r.reasons, [
      "2g.20gb does not fit: it can start only at slice 0, 2 or 4 (2 slices each); 4g.40gb on slices 0-3 takes the places at 0 and 2, 2g.20gb on slices 4-5 the place at 4. Slices 6-7 stay free, but 2g.20gb cannot start there",
    ]);
    const alts = r.alternatives;
    assert.ok(alts.length > 0 && alts.every((a) => a.distance === 1));
    const swap = alts.find((a) => a.change === "replace 4g.40gb with 3g.40gb");
    assert.deepEqual(swap?.migDevices, { "2g.20gb": 2, "3g.40gb": 1 });
  });

  it("alternatives are ranked by distance, then by how much memory they keep", () => {
    // 4g + 3g + 2 × 1g needs 10 slices. One change fits it into 8 by swapping the 3g for a
    // 1g.20gb (4g, 1g.20gb at 6-7, 1g at 4 and 5) or the 4g for a 2g (2g, 1g, 1g, 3g at 4);
    // dropping either large one also takes one change but keeps less memory.
    const r = planRequest(H100(), req({ "4g.40gb": 1, "3g.40gb": 1, "1g.10gb": 2 }));
    assert.equal(r.fits, false);
    const d = r.alternatives.map((a) => a.distance);
    assert.deepEqual(d, [1, 1, 1, 1, 1]);
    assert.deepEqual(
      r.alternatives
        .slice(0, 2)
        .map((a) => a.change)
        .sort(),
      ["replace 3g.40gb with 1g.20gb", "replace 4g.40gb with 2g.20gb"],
    );
    assert.deepEqual(
      r.alternatives.find((a) => a.change === "replace 4g.40gb with 2g.20gb")?.migDevices,
      { "1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1 },
    );
    const drops = r.alternatives.filter((a) => a.change.startsWith("drop"));
    assert.ok(drops.every((a) => r.alternatives.indexOf(a) >= 2));
  });

  it("4g + 3g together are refused before R510 and fine from it", () => {
    const layout = fromFixture("custom.yaml", "train-and-dev");
    const old = planRequest(builtinCatalog("A100-80GB", "470.42.01"), layout);
    assert.deepEqual(old.reasons, [
      "4g.40gb and 3g.40gb cannot be used together before driver R510 (this plan is for 470.42.01); drop one of them or plan for R510 or later",
    ]);
    const now = planRequest(builtinCatalog("A100-80GB", "515.86.01"), layout);
    assert.deepEqual(
      now.instances.map((i) => [i.profile, i.start]),
      [
        ["4g.40gb", 0],
        ["3g.40gb", 4],
      ],
    );
  });

  it("two instances with media extensions on an A30, which has one OFA", () => {
    const r = planRequest(
      builtinCatalog("A30", "535.183.01"),
      fromFixture("unfit.yaml", "two-media", 1),
    );
    assert.deepEqual(r.reasons, [
      "1g.6gb+me and 2g.12gb+me each take an optical-flow accelerator (the media extensions), but A30 has 1; keep one instance with media extensions",
    ]);
  });

  it("a start the profile does not allow, and a pinned instance in the way", () => {
    const bad = planRequest(H100(), fromFixture("unfit.yaml", "bad-placement"));
    assert.deepEqual(bad.reasons, [
      "3g.40gb cannot start at memory slice 2: H100-80GB places it only at 0, 4",
    ]);
    assert.deepEqual(bad.alternatives[0], {
      migDevices: { "3g.40gb": 1 },
      distance: 0,
      change: "the same profiles without placements",
    });
    const pinned = planRequest(H100(), req({ "4g.40gb": 1, "3g.40gb": 1 }, { "3g.40gb": [0] }));
    assert.deepEqual(pinned.reasons, [
      "4g.40gb does not fit: it can start only at slice 0 (4 slices); 3g.40gb on slices 0-3 (set by placements) takes the place at 0. Slices 4-7 stay free, but 4g.40gb cannot start there",
    ]);
  });

  it("placements on a driver without `-cgi ID:start`", () => {
    const r = planRequest(
      builtinCatalog("A100-40GB", "515.86.01"),
      fromFixture("placements.yaml", "a100-3g-low"),
    );
    assert.deepEqual(r.reasons, [
      "driver 515.86.01 cannot create a GPU instance at a chosen slice (`-cgi ID:start` needs R525 or later); drop `placements` or plan for a newer driver",
    ]);
    assert.equal(r.alternatives[0]?.distance, 0);
  });

  it("a compute-instance split the GI does not offer", () => {
    const r = planRequest(H100(), req({ "5c.7g.80gb": 1 }));
    assert.deepEqual(r.reasons, [
      "H100-80GB at driver 580.173.02 has no compute-instance profile 5c.7g.80gb: a 7g.80gb GPU instance holds 1c.7g.80gb (up to 7), 2c.7g.80gb (up to 3), 3c.7g.80gb (up to 2), 4c.7g.80gb (up to 1), 7g.80gb (up to 1)",
    ]);
  });
});

describe("planner: a catalogue read from a live node plans like the built-in one", () => {
  const capture = (f: string) => stripSourceLines(readFileSync(join(CAPTURES, f), "utf8"));
  function live(gpu: string, driver: string, lgip: string, lgipp: string): PlannerCatalog {
    return fromListings({
      gpu,
      driver,
      profiles: parseLgip(capture(lgip)).gpus[0]!.profiles,
      placements: parseLgipp(capture(lgipp)).gpus[0]!.placements,
    });
  }
  const pairs: [string, string, string, string][] = [
    [
      "H100-80GB",
      "580.173.02",
      "nvidia-smi_mig-lgip_H100-80GB-HBM3_580.173.02_mig-disabled.txt",
      "nvidia-smi_mig-lgipp_H100-80GB-HBM3_unknown.txt",
    ],
    [
      "H100-PCIE",
      "525.125.06",
      "nvidia-smi_mig-lgip_H100-PCIe-80GB_525.125.06.txt",
      "nvidia-smi_mig-lgipp_H100-PCIe-80GB_525.125.06.txt",
    ],
    [
      "A100-40GB",
      "515.86.01",
      "nvidia-smi_mig-lgip_A100-PCIe-40GB_pre-R525.txt",
      "nvidia-smi_mig-lgipp_A100-PCIe-40GB_pre-R525.txt",
    ],
  ];
  for (const [product, driver, lgip, lgipp] of pairs) {
    it(`${product} from ${lgip}: the same combinations and plans`, () => {
      const fromNode = live(product, driver, lgip, lgipp);
      const builtin = builtinCatalog(product as "H100-80GB", driver);
      const key = (c: Record<string, number>) => JSON.stringify(Object.entries(c).sort());
      assert.deepEqual(
        enumerateCombinations(fromNode).map(key).sort(),
        enumerateCombinations(builtin).map(key).sort(),
      );
      const cat = catalogFor(product as "H100-80GB", driver);
      const small = cat.giProfiles.filter((p) => p.memorySlices <= 2 && !p.name.includes("+"));
      const layout = req({ [small[0]!.name]: 2, [small[small.length - 1]!.name]: 1 });
      assert.deepEqual(
        planRequest(fromNode, layout).commands,
        planRequest(builtin, layout).commands,
      );
    });
  }

  it("refuses -lgip and -lgipp of different drivers", () => {
    try {
      live(
        "A30",
        "535.183.01",
        "nvidia-smi_mig-lgip_A30-24GB_535.183.01.txt",
        "nvidia-smi_mig-lgipp_A100-SXM4-40GB_guide.txt",
      );
      assert.fail("expected a refusal");
    } catch (err) {
      assert.ok(isSlicecheckError(err, "PARSE"));
      assert.match(err.message, /-lgipp lists no placements for profile 21 \(1g\.6gb\+me\)/);
    }
  });

  // Its speed is measured by `npm run bench` (BENCH=planner), not asserted here.
  it("enumerates every combination of a fresh 8-slice catalogue (127)", () => {
    assert.equal(enumerateCombinations(builtinCatalog("H200", "580.173.02")).length, 127);
  });
});
