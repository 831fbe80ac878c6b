// The planner against a brute force written here, independently of the planner's code: every
// vector of instance counts up to each profile's maximum, checked by trying every assignment
// of starts. The oracle reads the built-in catalogue directly (`catalogFor`), not the planner's
// view of it, so a mistake in either conversion or search shows up as a difference.

import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import {
  type Catalog,
  catalogFor,
  DRIVERS,
  defaultDriver,
  PRODUCTS,
  type ProductKey,
  productFacts,
} from "../../src/mig/catalog/index.js";
import { entriesFor, type LayoutEntry, loadLayout } from "../../src/mig/layout/index.js";
import {
  builtinCatalog,
  enumerateCombinations,
  type PlannerCatalog,
  planRequest,
} from "../../src/mig/planner/index.js";

// ---- the oracle --------------------------------------------------------------------------

interface OProfile {
  name: string;
  id: number;
  size: number;
  starts: number[];
  max: number;
  ofa: number;
}

function oProfiles(cat: Catalog): OProfile[] {
  return cat.giProfiles.map((g) => ({
    name: g.name,
    id: g.id,
    size: g.memorySlices,
    starts: g.placements.map((p) => p.start),
    max: g.instances,
    ofa: g.ofa,
  }));
}

/** Rules other than placement: maxima, the pre-R510 4g+3g pair, one OFA for +me instances. */
function oRulesOk(cat: Catalog, counts: Map<string, number>): boolean {
  const ps = oProfiles(cat);
  for (const [name, n] of counts) {
    const p = ps.find((x) => x.name === name);
    if (!p || n > p.max) return false;
  }
  for (const [a, b] of cat.rules.forbiddenPairs) {
    const na = ps.find((p) => p.id === a)?.name;
    const nb = ps.find((p) => p.id === b)?.name;
    if (na && nb && (counts.get(na) ?? 0) > 0 && (counts.get(nb) ?? 0) > 0) return false;
  }
  const whole = ps.filter((p) => p.size === cat.facts.memorySlices);
  const ofaTotal = Math.max(0, ...whole.map((p) => p.ofa));
  let ofa = 0;
  for (const [name, n] of counts) ofa += n * (ps.find((p) => p.name === name)?.ofa ?? 0);
  return ofa <= ofaTotal;
}

/** Tries every start for every instance in turn; `fixed` pins the first instances of a name. */
function oPlaceable(
  cat: Catalog,
  counts: Map<string, number>,
  fixed: Record<string, number[]> = {},
): boolean {
  const ps = oProfiles(cat);
  const items: { p: OProfile; starts: number[] }[] = [];
  for (const [name, n] of counts) {
    const p = ps.find((x) => x.name === name);
    if (!p) return false;
    const pins = fixed[name] ?? [];
    if (pins.length > n) return false;
    for (let i = 0; i < n; i++) {
      const pin = pins[i];
      if (pin !== undefined && !p.starts.includes(pin)) return false;
      items.push({ p, starts: pin === undefined ? p.starts : [pin] });
    }
  }
  // Cheap necessary condition first: the instances must not need more slices than exist.
  if (items.reduce((a, x) => a + x.p.size, 0) > cat.facts.memorySlices) return false;
  const taken: boolean[] = new Array(cat.facts.memorySlices).fill(false);
  const at: number[] = [];
  const tryFrom = (k: number): boolean => {
    if (k === items.length) return true;
    const { p, starts } = items[k]!;
    // Unpinned instances of one profile are interchangeable: only try rising starts.
    const prev = items[k - 1];
    const same =
      prev !== undefined && prev.p === p && prev.starts === p.starts && starts === p.starts;
    for (const s of starts) {
      if (same && s <= at[k - 1]!) continue;
      at[k] = s;
      const cells = Array.from({ length: p.size }, (_, j) => s + j);
      if (cells.some((c) => c >= taken.length || taken[c])) continue;
      for (const c of cells) taken[c] = true;
      const ok = tryFrom(k + 1);
      for (const c of cells) taken[c] = false;
      if (ok) return true;
    }
    return false;
  };
  return tryFrom(0);
}

function key(counts: Map<string, number> | Record<string, number>): string {
  const entries = counts instanceof Map ? [...counts] : Object.entries(counts);
  return entries
    .filter(([, n]) => n > 0)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([n, c]) => `${n}×${c}`)
    .join(" ");
}

/** Every non-empty multiset that fits, by odometer over count vectors. */
function bruteForce(cat: Catalog): Set<string> {
  const ps = oProfiles(cat);
  const out = new Set<string>();
  const counts = ps.map(() => 0);
  for (;;) {
    let i = 0;
    while (i < ps.length && counts[i] === ps[i]!.max) counts[i++] = 0;
    if (i === ps.length) break;
    counts[i]! += 1;
    const m = new Map(ps.map((p, j) => [p.name, counts[j]!] as const).filter(([, n]) => n > 0));
    if (oRulesOk(cat, m) && oPlaceable(cat, m)) out.add(key(m));
  }
  return out;
}

function diff(planner: Set<string>, oracle: Set<string>) {
  return {
    extra: [...planner].filter((k) => !oracle.has(k)),
    missing: [...oracle].filter((k) => !planner.has(k)),
  };
}

function plannerSet(c: PlannerCatalog): Set<string> {
  return new Set(enumerateCombinations(c).map(key));
}

// ---- valid combinations per GPU and driver -------------------------------------------------

describe("planner: valid combinations against a brute force", () => {
  for (const product of PRODUCTS) {
    for (const driver of DRIVERS[product]) {
      it(`${product} at ${driver}: the same combinations as the brute force`, () => {
        const oracle = bruteForce(catalogFor(product, driver));
        const got = enumerateCombinations(builtinCatalog(product, driver));
        assert.equal(got.length, new Set(got.map(key)).size, "a combination is listed twice");
        assert.deepEqual(diff(plannerSet(builtinCatalog(product, driver)), oracle), {
          extra: [],
          missing: [],
        });
        assert.ok(oracle.size > 0);
      });
    }
  }

  it("A30 before R470 has exactly 9 combinations (counted by hand)", () => {
    // 1g × 1..4, 2g × 1..2, 2g + 1g × 1..2, 4g × 1
    assert.equal(bruteForce(catalogFor("A30", "460.73.01")).size, 9);
    assert.equal(enumerateCombinations(builtinCatalog("A30", "460.73.01")).length, 9);
  });
});

// ---- planted faults: the comparison must fail on a planner that breaks a rule ----------------

function mutate(c: PlannerCatalog, name: string, patch: object): PlannerCatalog {
  return {
    ...c,
    profiles: c.profiles.map((p) => (p.name === name ? { ...p, ...patch } : p)),
  };
}

describe("planner: planted faults are caught by the brute force", () => {
  it("a planner that lets 2g.20gb start at slice 6 lists 4g.40gb + 2 × 2g.20gb", () => {
    const real = catalogFor("H100-80GB", "580.173.02");
    const faulty = mutate(builtinCatalog("H100-80GB", "580.173.02"), "2g.20gb", {
      starts: [0, 2, 4, 6],
    });
    const d = diff(plannerSet(faulty), bruteForce(real));
    assert.ok(d.extra.includes("2g.20gb×2 4g.40gb×1"), `extra: ${d.extra.join("; ")}`);
    assert.deepEqual(d.missing, []);
  });

  it("a planner that ignores the +me maximum lists two 1g.10gb+me", () => {
    const real = catalogFor("H100-80GB", "580.173.02");
    const faulty = mutate(builtinCatalog("H100-80GB", "580.173.02"), "1g.10gb+me", {
      maxInstances: 7,
      ofa: 0,
    });
    const d = diff(plannerSet(faulty), bruteForce(real));
    assert.ok(d.extra.includes("1g.10gb+me×2"), `extra: ${d.extra.slice(0, 5).join("; ")}`);
  });

  it("a planner that ignores the pre-R510 4g + 3g rule lists 3g.20gb + 4g.20gb", () => {
    const real = catalogFor("A100-40GB", "470.42.01");
    const faulty = { ...builtinCatalog("A100-40GB", "470.42.01"), forbiddenPairs: [] };
    const d = diff(plannerSet(faulty), bruteForce(real));
    assert.deepEqual(d.extra, ["3g.20gb×1 4g.20gb×1"]);
  });
});

// ---- every fixture layout on every catalogued GPU where it applies -------------------------

const LAYOUTS = join(import.meta.dirname, "../../fixtures/layouts");
const FILES = readdirSync(LAYOUTS).filter((f) => f.endsWith(".yaml") && f !== "invalid.yaml");

interface Case {
  product: ProductKey;
  driver: string;
  pciId: string;
}

function cases(): Case[] {
  const out: Case[] = [];
  for (const product of PRODUCTS) {
    const boards = productFacts(product).boards;
    for (const driver of DRIVERS[product]) out.push({ product, driver, pciId: boards[0]!.pciId });
    for (const b of boards.slice(1)) {
      out.push({ product, driver: defaultDriver(product), pciId: b.pciId });
    }
  }
  return out;
}

/** What the oracle expects of one entry without CI splits: fits or not. */
function expectFit(cat: Catalog, e: LayoutEntry): boolean {
  if (!e.migEnabled) return true;
  const counts = new Map<string, number>();
  for (const d of e.migDevices) counts.set(d.gi, (counts.get(d.gi) ?? 0) + d.count);
  const pinned = Object.values(e.placements).some((s) => s.length > 0);
  if (pinned && !(Number(cat.driver.split(".")[0]) >= 525)) return false;
  return oRulesOk(cat, counts) && oPlaceable(cat, counts, e.placements);
}

describe("planner: every fixture layout on every GPU it applies to", () => {
  for (const file of FILES) {
    it(`${file}: plans as the brute force says, with valid placements and commands`, () => {
      const layout = loadLayout(join(LAYOUTS, file));
      let planned = 0;
      for (const c of cases()) {
        const cat = catalogFor(c.product, c.driver);
        const pcat = builtinCatalog(c.product, c.driver);
        for (const config of layout.configs) {
          for (const e of entriesFor(config, c.pciId)) {
            const where = `${file} ${config.name} entry ${e.index + 1} on ${c.product}@${c.driver}`;
            const req = {
              migEnabled: e.migEnabled,
              devices: e.migDevices,
              placements: e.placements,
            };
            const r = planRequest(pcat, req, 3);
            planned++;
            const split = e.migDevices.some((d) => d.ciSlices !== null && d.count > 0);
            if (!split)
              assert.equal(r.fits, expectFit(cat, e), `${where}: ${r.reasons.join("; ")}`);
            if (r.fits) checkPlaced(cat, e, r, where);
            else {
              assert.ok(r.reasons.length > 0, `${where}: no reason`);
              for (const a of r.alternatives) {
                const m = new Map(Object.entries(a.migDevices));
                assert.ok(oRulesOk(cat, m) && oPlaceable(cat, m), `${where}: alt ${key(m)}`);
              }
            }
          }
        }
      }
      assert.ok(planned > 0, `${file} applied to no GPU`);
    });
  }

  it("default.yaml: all-balanced fits every catalogued GPU at every catalogued driver", () => {
    const config = loadLayout(join(LAYOUTS, "default.yaml")).configs.find(
      (c) => c.name === "all-balanced",
    )!;
    for (const product of PRODUCTS) {
      for (const driver of DRIVERS[product]) {
        const [e, ...rest] = entriesFor(config, productFacts(product).boards[0]!.pciId);
        assert.ok(e && rest.length === 0, `${product}: one entry applies`);
        const r = planRequest(builtinCatalog(product, driver), {
          migEnabled: e.migEnabled,
          devices: e.migDevices,
          placements: e.placements,
        });
        assert.equal(r.fits, true, `${product}@${driver}: ${r.reasons.join("; ")}`);
      }
    }
  });
});

function checkPlaced(
  cat: Catalog,
  e: LayoutEntry,
  r: ReturnType<typeof planRequest>,
  where: string,
): void {
  const taken = new Set<number>();
  const perGi = new Map<string, number>();
  for (const gi of r.instances) {
    const p = cat.giProfiles.find((g) => g.name === gi.profile);
    assert.ok(p, `${where}: unknown ${gi.profile}`);
    assert.ok(
      p.placements.some((x) => x.start === gi.start && x.size === gi.size),
      where,
    );
    for (let s = gi.start; s < gi.start + gi.size; s++) {
      assert.ok(!taken.has(s), `${where}: slice ${s} used twice`);
      taken.add(s);
    }
    perGi.set(gi.profile, (perGi.get(gi.profile) ?? 0) + 1);
    const cells = new Set<number>();
    for (const ci of gi.computeInstances) {
      for (let s = ci.start; s < ci.start + ci.size; s++) {
        assert.ok(!cells.has(s) && s < p.computeSlices, `${where}: CI overlap in ${gi.profile}`);
        cells.add(s);
      }
    }
  }
  for (const d of e.migDevices) {
    if (d.ciSlices !== null || !e.migEnabled) continue;
    assert.ok((perGi.get(d.gi) ?? 0) >= d.count, `${where}: ${d.gi} count`);
  }
  for (const [gi, starts] of Object.entries(e.placements)) {
    const at = r.instances.filter((i) => i.profile === gi).map((i) => i.start);
    for (const s of starts) assert.ok(at.includes(s), `${where}: ${gi} not at ${s}`);
  }
  const cgi = r.commands.filter((a) => a.includes("-cgi"));
  assert.equal(cgi.length, r.instances.length, where);
  const pinned = Number(cat.driver.split(".")[0]) >= 525;
  for (const a of cgi) {
    assert.match(a[a.indexOf("-cgi") + 1]!, pinned ? /^\d+:\d+$/ : /^\d+$/, where);
    assert.equal(a[a.indexOf("-i") + 1], "3", where);
  }
}
