// The pure half of apply/assert/restore: reading the geometry from real captures, matching it
// against targets, the commands that converge a GPU, the Slurm rule and the offline refusal.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isSlicecheckError } from "../../src/errors.js";
import { batchArgv, createBatches } from "../../src/mig/apply/compare.js";
import {
  changePlan,
  driftOf,
  type GiState,
  type GpuSnapshot,
  type GpuTarget,
  journalTarget,
  matchGeometry,
  slurmRefusal,
  validateOffline,
} from "../../src/mig/apply/index.js";
import { geometry } from "../../src/mig/apply/read.js";
import { entryFor, layoutTarget } from "../../src/mig/apply/target.js";
import { loadLayout, parseLayout, selectConfig } from "../../src/mig/layout/index.js";
import { parseLci, parseLgi, stripSourceLines } from "../../src/nvsmi/index.js";

const LAYOUTS = join(import.meta.dirname, "../../fixtures/layouts");
const CAPTURES = join(import.meta.dirname, "../../fixtures/captures");
const capture = (f: string) => stripSourceLines(readFileSync(join(CAPTURES, f), "utf8"));

function h100(gis: GiState[], mig = true): GpuSnapshot {
  return {
    index: 0,
    uuid: "GPU-00000000-0000-0000-0000-000000000000",
    name: "NVIDIA H100 80GB HBM3",
    busId: "00000000:07:00.0",
    pciDeviceId: "0x233010DE",
    migCapable: true,
    migCurrent: mig,
    migPending: mig,
    virtualization: "None",
    gis,
    processes: [],
    listings: null,
  };
}

function target(config: string, file = "custom.yaml", gpu = h100([])): GpuTarget {
  const c = selectConfig(loadLayout(join(LAYOUTS, file)), config);
  return layoutTarget(c, entryFor(c, gpu)!, gpu, "580.173.02");
}

const OPTS = { modeNeedsReset: false, placementSyntax: true };

describe("apply planning (pure)", () => {
  it("reads GIs with their CIs from real -lgi/-lci captures", () => {
    const geo = geometry(
      parseLgi(capture("nvidia-smi_mig-lgi_H100-80GB-HBM3_580.173.02_mixed.txt")),
      parseLci(capture("nvidia-smi_mig-lci_H100-80GB-HBM3_580.173.02_mixed.txt")),
    );
    const gis = geo.get(0)!;
    assert.deepEqual(
      gis.map((g) => [g.id, g.profile, g.start, g.size, g.cis.map((c) => c.profile)]),
      [
        [1, "3g.40gb", 0, 4, ["1c.3g.40gb"]],
        [11, "1g.10gb+me", 4, 1, ["1g.10gb"]],
        [13, "1g.10gb", 6, 1, ["1g.10gb"]],
      ],
    );
    // The captured 3g holds one 1c CI, so it matches neither a whole 3g nor three 1c.
    const t = target("inference");
    const m = matchGeometry(gis, t.gis);
    assert.deepEqual(
      m.extra.map((g) => g.id),
      [1, 11],
    );
    assert.equal(m.matched.length, 1);
  });

  it("an unpinned target matches wherever the driver put the instance; a pinned one only there", () => {
    const one = (id: number, start: number): GiState => ({
      id,
      profileId: 19,
      profile: "1g.10gb",
      start,
      size: 1,
      cis: [{ id: 0, profileId: 0, profile: "1g.10gb", start: 0, size: 1 }],
    });
    const free = {
      profileId: 19,
      profile: "1g.10gb",
      start: 0,
      size: 1,
      pinned: false,
      cis: [{ profileId: 0, profile: "1g.10gb" }],
    };
    assert.equal(matchGeometry([one(13, 6)], [free]).missing.length, 0);
    const pinned = { ...free, pinned: true };
    const m = matchGeometry([one(13, 6)], [pinned]);
    assert.equal(m.missing.length, 1);
    assert.deepEqual(
      m.extra.map((g) => g.start),
      [6],
    );
  });

  it("plans nothing for a GPU already in the target, and keeps GIs that sit where the plan wants them", () => {
    const t = target("inference");
    assert.deepEqual(
      t.gis.map((g) => `${g.profile}@${g.start}`),
      ["2g.20gb@0", "1g.10gb@2", "1g.10gb@3", "3g.40gb@4"],
    );
    const asPlanned: GiState[] = t.gis.map((g, i) => ({
      id: i + 1,
      profileId: g.profileId,
      profile: g.profile,
      start: g.start,
      size: g.size,
      cis: g.cis.map((c, k) => ({ id: k, ...c, start: 0, size: null })),
    }));
    const none = changePlan(h100(asPlanned), t, OPTS);
    assert.deepEqual([none.drift, none.commands], [[], []]);

    // 3g@4 stays; 3g@0 goes with its CI; the other three are created.
    const [g3] = asPlanned.slice(3);
    const other: GiState = { ...g3!, id: 7, start: 0 };
    const p = changePlan(h100([other, g3!]), t, OPTS);
    assert.deepEqual(
      p.commands.map((c) => c.join(" ")),
      [
        "nvidia-smi mig -dci -gi 7 -i 0",
        "nvidia-smi mig -dgi -gi 7 -i 0",
        "nvidia-smi mig -cgi 14:0,19:2,19:3 -C -i 0",
      ],
    );
    assert.ok(
      p.drift.some((d) => /missing 2 GPU instances 1g\.10gb/.test(d)),
      p.drift.join("\n"),
    );
  });

  it("orders a disable as destroy CIs, destroy GIs, then -mig 0; an Ampere pending change as a reset", () => {
    const t = target("all-disabled", "default.yaml");
    const gi: GiState = {
      id: 1,
      profileId: 0,
      profile: "7g.80gb",
      start: 0,
      size: 8,
      cis: [{ id: 0, profileId: 4, profile: "7g.80gb", start: 0, size: 7 }],
    };
    const p = changePlan(h100([gi]), t, OPTS);
    assert.deepEqual(
      p.commands.map((c) => c.join(" ")),
      [
        "nvidia-smi mig -dci -gi 1 -i 0",
        "nvidia-smi mig -dgi -gi 1 -i 0",
        "nvidia-smi -mig 0 -i 0",
      ],
    );
    const on = target("all-7g.80gb", "default.yaml");
    const pending = { ...h100([], false), migPending: true };
    const r = changePlan(pending, on, { ...OPTS, modeNeedsReset: true });
    assert.equal(r.resetPending, true);
    assert.deepEqual(
      r.commands.map((c) => c.join(" ")),
      ["nvidia-smi --gpu-reset -i 0", "nvidia-smi mig -cgi 0:0 -C -i 0"],
    );
    assert.ok(driftOf(pending, on).some((d) => /pending/.test(d)));
  });

  it("restores a journal's GIs at their placements, whole CIs with -C, splits with -cci", () => {
    const gis: GiState[] = [
      {
        id: 2,
        profileId: 9,
        profile: "3g.40gb",
        start: 4,
        size: 4,
        cis: [{ id: 0, profileId: 2, profile: "3g.40gb", start: 0, size: 3 }],
      },
      {
        id: 3,
        profileId: 14,
        profile: "2g.20gb",
        start: 0,
        size: 2,
        cis: [
          { id: 0, profileId: 0, profile: "1c.2g.20gb", start: 0, size: 1 },
          { id: 1, profileId: 0, profile: "1c.2g.20gb", start: 1, size: 1 },
        ],
      },
    ];
    const t = journalTarget(0, { migCurrent: true, gis }, "580.173.02");
    const p = changePlan(h100([], false), t, OPTS);
    assert.deepEqual(
      p.commands.map((c) => c.join(" ")),
      [
        "nvidia-smi -mig 1 -i 0",
        "nvidia-smi mig -cgi 9:4 -C -i 0",
        "nvidia-smi mig -cgi 14:0 -i 0",
        "nvidia-smi mig -cci 0,0 -gi <GI@0:2> -i 0",
      ],
    );
    assert.ok(t.gis.every((g) => g.pinned));
  });

  it("joins creations into as few -cgi calls as keep their meaning", () => {
    const whole = (
      profileId: number,
      profile: string,
      start: number,
      size: number,
      ci: number,
    ): GiState => ({
      id: 0,
      profileId,
      profile,
      start,
      size,
      cis: [{ id: 0, profileId: ci, profile, start: 0, size: Number(profile[0]) }],
    });
    const split: GiState = {
      ...whole(14, "2g.20gb", 0, 2, 0),
      cis: [
        { id: 0, profileId: 0, profile: "1c.2g.20gb", start: 0, size: 1 },
        { id: 1, profileId: 0, profile: "1c.2g.20gb", start: 1, size: 1 },
      ],
    };
    const gis = [whole(9, "3g.40gb", 4, 4, 2), split, whole(19, "1g.10gb", 2, 1, 0)];
    const run = (driver: string, syntax: boolean) =>
      createBatches(journalTarget(0, { migCurrent: true, gis }, driver).steps, syntax).map((b) =>
        batchArgv(b).join(" "),
      );
    // With explicit starts: all whole GIs at once, then the bare ones, then the CIs.
    assert.deepEqual(run("580.173.02", true), [
      "nvidia-smi mig -cgi 9:4,19:2 -C -i 0",
      "nvidia-smi mig -cgi 14:0 -i 0",
      "nvidia-smi mig -cci 0,0 -gi <GI@0:2> -i 0",
    ]);
    // The driver places them (before R525): the planned order, largest first, stays.
    assert.deepEqual(run("470.42.01", false), [
      "nvidia-smi mig -cgi 9 -C -i 0",
      "nvidia-smi mig -cgi 14 -i 0",
      "nvidia-smi mig -cci 0,0 -gi <GI@0:2> -i 0",
      "nvidia-smi mig -cgi 19 -C -i 0",
    ]);
  });

  it("lets only a drained (or down) Slurm node be touched", () => {
    const ok = ["IDLE+DRAIN", "DOWN", "DOWN+DRAIN+NOT_RESPONDING", "DRAINED"];
    for (const state of ok)
      assert.equal(slurmRefusal({ node: "g1", state, problem: null }), null, state);
    assert.match(
      slurmRefusal({ node: "g1", state: "IDLE", problem: null })!,
      /not drained: drain it first/,
    );
    assert.match(
      slurmRefusal({ node: "g1", state: "MIXED+DRAIN", problem: null })!,
      /jobs still run/,
    );
    assert.match(
      slurmRefusal({ node: "g1", state: null, problem: "scontrol is not installed on the node" })!,
      /cannot tell whether Slurm node g1 is drained: scontrol is not installed/,
    );
  });

  it("refuses offline a layout that fits none of the GPUs it is for", () => {
    const cases: [string, RegExp][] = [
      ["too-many", /offers at most 2 3g\.40gb/],
      ["impossible", /2g\.20gb does not fit/],
      ["unknown-profile", /no GPU-instance profile 5g\.50gb/],
      ["bad-placement", /cannot start at memory slice 2/],
    ];
    const file = join(LAYOUTS, "unfit.yaml");
    for (const [name, why] of cases) {
      assert.throws(
        () => validateOffline(selectConfig(loadLayout(file), name), file),
        (e: unknown) => isSlicecheckError(e, "LAYOUT") && why.test(e.message),
        name,
      );
    }
    // Counts beyond what any catalogued GPU holds are refused while the file is read.
    assert.throws(
      () =>
        parseLayout(
          'version: v1\nmig-configs:\n  eight:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {"1g.10gb": 8}\n',
          "eight.yaml",
        ),
      /eight\.yaml:6: config 'eight', entry 1, mig-devices\.1g\.10gb: 8 instances asked, but no catalogued GPU holds more than 7 MIG devices/,
    );
    const unfiltered = parseLayout(
      'version: v1\nmig-configs:\n  eight:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {"7g.80gb": 1, "1g.10gb": 1}\n',
      "eight.yaml",
    );
    assert.throws(
      () => validateOffline(unfiltered.configs[0]!, "eight.yaml"),
      /eight\.yaml:4: config 'eight', entry 1 fits none of the GPUs it is for/,
    );
    // A config that fits its GPU passes.
    validateOffline(selectConfig(loadLayout(join(LAYOUTS, "custom.yaml")), "h200-halves"), "x");
  });
});
