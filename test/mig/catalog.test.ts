// The built-in profile catalogue against the tables of mig-reference.md §2/§3 (values copied
// here by hand from the reference, so that a slip in either shows up), its driver gates (§6) and
// product resolution.

import assert from "node:assert/strict";
import { isSlicecheckError } from "../../src/errors.js";
import {
  bar1MiB,
  type Catalog,
  catalogFor,
  compareDrivers,
  DRIVERS,
  defaultDriver,
  findCiProfile,
  findGiProfile,
  formatGiB,
  mibFromGiB,
  PRODUCTS,
  type ProductKey,
  productFacts,
  resolveBoard,
  resolveProduct,
} from "../../src/mig/catalog/index.js";

type Row = [
  id: number,
  name: string,
  gib: string,
  sm: number,
  dec: number,
  ce: number,
  jpeg: number,
  ofa: number,
  inst: number,
];

function rows(c: Catalog): Row[] {
  return c.giProfiles.map((p) => [
    p.id,
    p.name,
    p.memoryGiB,
    p.sm,
    p.dec,
    p.ce,
    p.jpeg,
    p.ofa,
    p.instances,
  ]);
}

function placements(c: Catalog): string[] {
  return c.giProfiles.map(
    (p) => `${p.id}:{${p.placements.map((x) => x.start).join(",")}}:${p.memorySlices}`,
  );
}

// §3: the same list on A100-40GB (R525+), H100 PCIe, H100 NVL and H100 80GB.
const EIGHT_SLICE = [
  "19:{0,1,2,3,4,5,6}:1",
  "20:{0,1,2,3,4,5,6}:1",
  "15:{0,2,4,6}:2",
  "14:{0,2,4}:2",
  "9:{0,4}:4",
  "5:{0}:4",
  "0:{0}:8",
];

describe("MIG catalogue: profile tables (mig-reference.md §2)", () => {
  it("A30 on 535.183.01", () => {
    const c = catalogFor("A30", "535.183.01");
    // biome-ignore format: table
    assert.deepEqual(rows(c), [
      [14, "1g.6gb", "5.81", 14, 1, 1, 0, 0, 4],
      [21, "1g.6gb+me", "5.81", 14, 1, 1, 1, 1, 1],
      [5, "2g.12gb", "11.69", 28, 2, 2, 0, 0, 2],
      [6, "2g.12gb+me", "11.69", 28, 2, 2, 1, 1, 1],
      [0, "4g.24gb", "23.44", 56, 4, 4, 1, 1, 1],
    ]);
    assert.deepEqual(placements(c), [
      "14:{0,1,2,3}:1",
      "21:{0,1,2,3}:1",
      "5:{0,2}:2",
      "6:{0,2}:2",
      "0:{0}:4",
    ]);
    assert.equal(catalogFor("A30", "515.86.01").giProfiles.at(-1)?.memoryGiB, "23.50");
  });

  it("A100-40GB before and from R525", () => {
    const now = catalogFor("A100-40GB", "525.125.06");
    // biome-ignore format: table
    assert.deepEqual(rows(now), [
      [19, "1g.5gb", "4.75", 14, 0, 1, 0, 0, 7],
      [20, "1g.5gb+me", "4.75", 14, 1, 1, 1, 1, 1],
      [15, "1g.10gb", "9.62", 14, 1, 1, 0, 0, 4],
      [14, "2g.10gb", "9.62", 28, 1, 2, 0, 0, 3],
      [9, "3g.20gb", "19.50", 42, 2, 3, 0, 0, 2],
      [5, "4g.20gb", "19.50", 56, 2, 4, 0, 0, 1],
      [0, "7g.40gb", "39.25", 98, 5, 7, 1, 1, 1],
    ]);
    assert.deepEqual(placements(now), EIGHT_SLICE);
    const pre = catalogFor("A100-40GB", "515.86.01");
    assert.deepEqual(
      pre.giProfiles.map((p) => `${p.name} ${p.memoryGiB}`),
      [
        "1g.5gb 4.75",
        "1g.5gb+me 4.75",
        "2g.10gb 9.75",
        "3g.20gb 19.62",
        "4g.20gb 19.62",
        "7g.40gb 39.50",
      ],
    );
    assert.deepEqual(
      placements(pre),
      EIGHT_SLICE.filter((p) => !p.startsWith("15:")),
    );
  });

  it("A100-80GB on 515.86.01, and 1g.20gb from R525", () => {
    // biome-ignore format: table
    assert.deepEqual(rows(catalogFor("A100-80GB", "515.86.01")), [
      [19, "1g.10gb", "9.50", 14, 0, 1, 0, 0, 7],
      [20, "1g.10gb+me", "9.50", 14, 1, 1, 1, 1, 1],
      [14, "2g.20gb", "19.50", 28, 1, 2, 0, 0, 3],
      [9, "3g.40gb", "39.25", 42, 2, 3, 0, 0, 2],
      [5, "4g.40gb", "39.25", 56, 2, 4, 0, 0, 1],
      [0, "7g.80gb", "79.00", 98, 5, 7, 1, 1, 1],
    ]);
    const r525 = catalogFor("A100-80GB", "525.125.06");
    assert.deepEqual(rows(r525)[2], [15, "1g.20gb", "19.50", 14, 1, 1, 0, 0, 4]);
  });

  it("H100 SXM, H100 PCIe, H100 NVL, GH200 and H200", () => {
    // biome-ignore format: table
    assert.deepEqual(rows(catalogFor("H100-80GB", "580.173.02")), [
      [19, "1g.10gb", "9.75", 16, 1, 1, 1, 0, 7],
      [20, "1g.10gb+me", "9.75", 16, 1, 1, 1, 1, 1],
      [15, "1g.20gb", "19.62", 26, 1, 1, 1, 0, 4],
      [14, "2g.20gb", "19.62", 32, 2, 2, 2, 0, 3],
      [9, "3g.40gb", "39.50", 60, 3, 3, 3, 0, 2],
      [5, "4g.40gb", "39.50", 64, 4, 4, 4, 0, 1],
      [0, "7g.80gb", "79.25", 132, 7, 8, 7, 1, 1],
    ]);
    const col = (p: ProductKey, d: string, f: (r: Row) => unknown) => rows(catalogFor(p, d)).map(f);
    assert.deepEqual(
      col("H100-PCIE", "525.125.06", (r) => r[2]),
      ["9.62", "9.62", "19.50", "19.50", "39.25", "39.25", "79.00"],
    );
    assert.deepEqual(
      col("H100-PCIE", "525.125.06", (r) => r[3]),
      [14, 14, 14, 30, 46, 62, 114],
    );
    assert.deepEqual(
      col("H100-NVL", "560.35.03", (r) => r[2]),
      ["10.75", "10.75", "21.62", "21.62", "46.38", "46.38", "93.12"],
    );
    assert.deepEqual(
      col("H100-NVL", "550.127.06", (r) => r[2]),
      ["10.62", "10.62", "21.50", "21.50", "46.12", "46.12", "92.62"],
    );
    assert.deepEqual(
      col("H100-NVL", "560.35.03", (r) => r[1]),
      ["1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"],
    );
    assert.deepEqual(
      col("GH200-96GB", "550.54.15", (r) => `${r[1]} ${r[2]}`),
      [
        "1g.12gb 11.00",
        "1g.12gb+me 11.00",
        "1g.24gb 23.00",
        "2g.24gb 23.00",
        "3g.48gb 46.50",
        "4g.48gb 46.50",
        "7g.96gb 93.00",
      ],
    );
    assert.deepEqual(
      col("H200", "580.173.02", (r) => r[2]),
      ["16.00", "16.00", "32.50", "32.50", "69.75", "69.75", "140.00"],
    );
    assert.deepEqual(
      col("H200", "550.90.07", (r) => r[2]),
      ["16.00", "16.00", "32.25", "32.25", "69.50", "69.50", "139.75"],
    );
    for (const p of ["H100-80GB", "H100-PCIE", "H100-NVL", "GH200-96GB", "H200", "B200"] as const) {
      assert.deepEqual(placements(catalogFor(p)), EIGHT_SLICE, p);
    }
  });

  it("B200: the captured rows, and the derived ones flagged as partial", () => {
    const c = catalogFor("B200", "570.133.20");
    assert.deepEqual(rows(c).slice(0, 4), [
      [19, "1g.23gb", "20.50", 18, 1, 2, 1, 0, 7],
      [20, "1g.23gb+me", "20.50", 18, 1, 2, 1, 1, 1],
      [15, "1g.45gb", "44.25", 30, 1, 2, 1, 0, 4],
      [14, "2g.45gb", "44.25", 36, 2, 4, 2, 0, 3],
    ]);
    assert.deepEqual(
      c.giProfiles.slice(4).map((p) => p.name),
      ["3g.90gb", "4g.90gb", "7g.180gb"],
    );
    assert.match(productFacts("B200").partial ?? "", /derived/);
    assert.match(productFacts("GH200-96GB").partial ?? "", /unverified/);
    assert.throws(
      () => catalogFor("B200", "550.127.06"),
      (e) => isSlicecheckError(e, "USAGE"),
    );
  });
});

describe("MIG catalogue: driver gates (mig-reference.md §6)", () => {
  const ids = (p: ProductKey, d: string) => catalogFor(p, d).giProfiles.map((x) => x.id);

  it("+me profiles from R470", () => {
    assert.ok(!ids("A100-40GB", "450.80.02").includes(20));
    assert.ok(!ids("A100-40GB", "460.73.01").includes(20));
    assert.ok(ids("A100-40GB", "470.42.01").includes(20));
    assert.ok(!ids("A30", "460.73.01").includes(21));
    assert.ok(ids("A30", "470.42.01").includes(21));
  });

  it("ID 15 on A100 and 2g.12gb+me on A30 from R525", () => {
    for (const p of ["A100-40GB", "A100-80GB"] as const) {
      assert.ok(!ids(p, "515.86.01").includes(15), p);
      assert.ok(ids(p, "525.125.06").includes(15), p);
    }
    assert.ok(!ids("A30", "515.86.01").includes(6));
    assert.ok(ids("A30", "525.125.06").includes(6));
  });

  it("4g + 3g together only from R510", () => {
    assert.deepEqual(catalogFor("A100-40GB", "470.42.01").rules.forbiddenPairs, [[5, 9]]);
    assert.deepEqual(catalogFor("A100-40GB", "515.86.01").rules.forbiddenPairs, []);
    assert.deepEqual(catalogFor("H100-80GB", "525.125.06").rules.forbiddenPairs, []);
  });

  it("no MIG before a product's minimum driver; catalogued drivers ascend to the default", () => {
    assert.throws(
      () => catalogFor("H100-80GB", "515.86.01"),
      (e) => isSlicecheckError(e, "USAGE"),
    );
    assert.throws(() => catalogFor("A30", "450.80.02"), /460\.73\.01/);
    assert.throws(
      () => catalogFor("A30", "five-fifty"),
      (e) => isSlicecheckError(e, "USAGE"),
    );
    for (const p of PRODUCTS) {
      const list = DRIVERS[p];
      assert.ok(list.length > 0, p);
      const sorted = [...list].sort(compareDrivers);
      assert.deepEqual(list, sorted, p);
      assert.equal(defaultDriver(p), list.at(-1));
      assert.equal(catalogFor(p).driver, defaultDriver(p));
      // Every catalogued driver offers at least the plain 1-slice, 2-slice and whole-GPU profiles.
      for (const d of list) assert.ok(catalogFor(p, d).giProfiles.length >= 3, `${p} ${d}`);
    }
  });
});

describe("MIG catalogue: compute-instance profiles", () => {
  it("matches -lcip on a 3g (A100 80GB 515) and a 2g (A30 535) GI", () => {
    const g3 = findGiProfile(catalogFor("A100-80GB", "515.86.01"), "3g.40gb");
    assert.deepEqual(
      g3?.ciProfiles.map((c) => [c.id, c.name, c.instances, c.sm, c.isDefault]),
      [
        [0, "1c.3g.40gb", 3, 14, false],
        [1, "2c.3g.40gb", 1, 28, false],
        [2, "3g.40gb", 1, 42, true],
      ],
    );
    const g2 = findGiProfile(catalogFor("A30", "535.183.01"), "MIG 2g.12gb");
    assert.deepEqual(
      g2?.ciProfiles.map((c) => [c.id, c.name, c.instances, c.sm]),
      [
        [0, "1c.2g.12gb", 2, 14],
        [1, "2g.12gb", 1, 28],
      ],
    );
  });

  it("gives a 1-slice double-memory GI CI profile 7 and drops +me from CI names", () => {
    const c = catalogFor("H100-80GB", "580.173.02");
    const rev2 = findGiProfile(c, "15");
    assert.deepEqual(
      rev2?.ciProfiles.map((x) => [x.id, x.name]),
      [[7, "1g.20gb"]],
    );
    const me = findGiProfile(c, "1g.10gb+me");
    assert.equal(me?.ciProfiles[0]?.name, "1g.10gb");
    const g3 = findGiProfile(c, "9");
    assert.ok(g3);
    assert.equal(findCiProfile(g3, "1c.3g.40gb")?.sm, 16);
    assert.equal(findCiProfile(g3, "2")?.isDefault, true);
    assert.equal(findCiProfile(g3, "4"), undefined);
  });
});

describe("MIG catalogue: products", () => {
  it("resolves keys, aliases, nvidia-smi names (with or without NVIDIA) and PCI ids", () => {
    const cases: [string, ProductKey][] = [
      ["NVIDIA H100 80GB HBM3", "H100-80GB"],
      ["0x233010DE", "H100-80GB"],
      ["2330", "H100-80GB"],
      ["0x233110de", "H100-PCIE"],
      ["NVIDIA H100 NVL", "H100-NVL"],
      ["A100-SXM4-40GB", "A100-40GB"],
      ["NVIDIA A100-PCIE-40GB", "A100-40GB"],
      ["NVIDIA A100 80GB PCIe", "A100-80GB"],
      ["NVIDIA A30", "A30"],
      ["NVIDIA GH200 480GB", "GH200-96GB"],
      ["h200", "H200"],
      ["0x233B10DE", "H200"],
      ["NVIDIA B200", "B200"],
      ["A100-80GB", "A100-80GB"],
    ];
    for (const [name, want] of cases) assert.equal(resolveProduct(name), want, name);
    assert.equal(resolveBoard("NVIDIA A100 80GB PCIe")?.board.powerCapW, 300);
    assert.equal(resolveProduct("NVIDIA L40S"), undefined);
    assert.equal(resolveProduct("0x26B910DE"), undefined);
  });

  it("states architecture, slices, SMs and the reset rule per product", () => {
    for (const p of PRODUCTS) {
      const f = productFacts(p);
      assert.equal(f.key, p);
      assert.equal(f.modeChangeNeedsReset, f.architecture === "ampere", p);
      // RTX PRO 6000: 4 compute slices on a 12-unit placement grid (its -lgipp).
      const rtx = p === "RTX-PRO-6000";
      assert.equal(f.memorySlices, p === "A30" ? 4 : rtx ? 12 : 8, p);
      assert.equal(f.computeSlices, p === "A30" || rtx ? 4 : 7, p);
      for (const b of f.boards) assert.equal(resolveBoard(b.pciId)?.product, p, b.pciId);
      const full = catalogFor(p).giProfiles.find((g) => g.computeSlices === f.computeSlices);
      assert.ok(full && full.sm <= f.smCount, p);
    }
    assert.equal(productFacts("H100-80GB").smCount, 132);
    assert.equal(productFacts("H100-PCIE").smCount, 114);
  });

  it("prints GiB from MiB as nvidia-smi does, ties to even (§1)", () => {
    const pairs: [number, string][] = [
      [5952, "5.81"],
      [11968, "11.69"],
      [9856, "9.62"],
      [9984, "9.75"],
      [40448, "39.50"],
      [10880, "10.62"],
      [11008, "10.75"],
      [22144, "21.62"],
      [47488, "46.38"],
      [16384, "16.00"],
      [9728, "9.50"],
    ];
    for (const [mib, gib] of pairs) {
      assert.equal(formatGiB(mib), gib, String(mib));
      assert.equal(mibFromGiB(gib), mib, gib);
    }
  });

  it("gives the BAR1 totals the MIG devices table shows", () => {
    assert.equal(bar1MiB(productFacts("H100-80GB"), 1, "580.173.02"), 6185);
    assert.equal(bar1MiB(productFacts("H100-80GB"), 4, "580.173.02"), 24740);
    assert.equal(bar1MiB(productFacts("H100-80GB"), 1, "535.183.01"), 16383);
    assert.equal(bar1MiB(productFacts("H200"), 1, "580.173.02"), 14809);
    assert.equal(bar1MiB(productFacts("A30"), 1, "535.183.01"), 8191);
    assert.equal(bar1MiB(productFacts("A30"), 2, "535.183.01"), 16383);
    assert.equal(bar1MiB(productFacts("A100-80GB"), 4, "515.86.01"), 65535);
  });
});
