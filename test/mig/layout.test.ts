import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { isSlicecheckError, type SlicecheckError } from "../../src/errors.js";
import { catalogFor, PRODUCTS, productFacts } from "../../src/mig/catalog/index.js";
import {
  entriesFor,
  entryMatchesDevice,
  loadLayout,
  noEntryReason,
  normaliseDeviceId,
  parseLayout,
  parseProfileKey,
  selectConfig,
} from "../../src/mig/layout/index.js";

const LAYOUTS = join(import.meta.dirname, "../../fixtures/layouts");
const at = (f: string) => join(LAYOUTS, f);

function refused(fn: () => unknown, code: string): SlicecheckError {
  try {
    fn();
  } catch (err) {
    assert.ok(isSlicecheckError(err), String(err));
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail("expected a refusal");
}

const HEAD = "version: v1\nmig-configs:\n";

describe("layout files: mig-parted configs", () => {
  it("every fixture except invalid.yaml loads, each config with at least one entry", () => {
    const files = readdirSync(LAYOUTS).filter((f) => f.endsWith(".yaml") && f !== "invalid.yaml");
    assert.ok(files.length >= 5);
    for (const f of files) {
      const layout = loadLayout(at(f));
      assert.ok(layout.configs.length > 0, f);
      for (const c of layout.configs) assert.ok(c.entries.length > 0, `${f} ${c.name}`);
    }
  });

  it("default.yaml has mig-parted's named configs for every catalogued GPU and profile", () => {
    const layout = loadLayout(at("default.yaml"));
    const names = layout.configs.map((c) => c.name);
    for (const n of ["all-disabled", "all-enabled", "all-balanced"]) assert.ok(names.includes(n));
    for (const product of PRODUCTS) {
      const pci = productFacts(product).boards[0]!.pciId;
      for (const p of catalogFor(product).giProfiles) {
        // mig-parted names `1g.10gb+me` configs `all-1g.10gb.me`
        const config = selectConfig(layout, `all-${p.name.replace("+", ".")}`);
        const [entry, ...rest] = entriesFor(config, pci);
        assert.ok(entry && rest.length === 0, `${config.name} on ${product}`);
        assert.deepEqual(
          entry.migDevices.map((d) => [d.gi, d.count]),
          [[p.name, p.instances]],
          `${config.name} on ${product}`,
        );
      }
    }
  });

  it("reads entries as mig-parted does: filters as a string or a list, devices all or indices", () => {
    const layout = loadLayout(at("custom.yaml"));
    const media = selectConfig(layout, "media").entries[0]!;
    assert.deepEqual(media.deviceFilter, ["0x233010DE"]);
    assert.equal(media.devices, "all");
    const perIndex = selectConfig(layout, "per-index");
    assert.deepEqual(
      perIndex.entries.map((e) => [e.devices, e.migEnabled, e.line]),
      [
        [[0, 1], true, 45],
        [[2, 3], true, 50],
        [[4, 5, 6, 7], false, 55],
      ],
    );
    assert.deepEqual(perIndex.entries[0]!.migDevices, [
      { key: "1g.10gb", gi: "1g.10gb", ciSlices: null, count: 7, line: 49 },
    ]);
    assert.equal(perIndex.line, 44);
  });

  it("reads compute-instance splits and placements", () => {
    const layout = loadLayout(at("splits.yaml"));
    const e = selectConfig(layout, "h100-2c-1c").entries[0]!;
    assert.deepEqual(
      e.migDevices.map((d) => [d.key, d.gi, d.ciSlices, d.count]),
      [
        ["2c.3g.40gb", "3g.40gb", 2, 1],
        ["1c.3g.40gb", "3g.40gb", 1, 1],
        ["2g.20gb", "2g.20gb", null, 2],
      ],
    );
    assert.deepEqual(e.placements, { "3g.40gb": [4] });
  });

  it("parses MIG profile keys with mig-parted's grammar", () => {
    assert.deepEqual(parseProfileKey("3g.40gb"), { gi: "3g.40gb", ciSlices: null });
    assert.deepEqual(parseProfileKey("1c.3g.40gb"), { gi: "3g.40gb", ciSlices: 1 });
    assert.deepEqual(parseProfileKey("3c.3g.40gb"), { gi: "3g.40gb", ciSlices: null });
    assert.deepEqual(parseProfileKey("1g.10gb+me"), { gi: "1g.10gb+me", ciSlices: null });
    assert.deepEqual(parseProfileKey("1g.24gb+me.all"), { gi: "1g.24gb+me.all", ciSlices: null });
    for (const bad of ["3g-40gb", "3g.40", "4c.3g.40gb", "g.40gb", "MIG 3g.40gb", "3g.40gb "]) {
      assert.equal(parseProfileKey(bad), null, bad);
    }
  });

  it("normalises PCI device ids as mig-parted parses them", () => {
    assert.equal(normaliseDeviceId("0x233010de"), "0x233010DE");
    assert.equal(normaliseDeviceId("590352606"), "0x233010DE");
    assert.equal(normaliseDeviceId("0x20B710DE:0x154510DE"), "0x20B710DE:0x154510DE");
    for (const bad of ["H100", "0x1234567890", "0x2330:10DE:1", ""]) {
      assert.equal(normaliseDeviceId(bad), null, bad);
    }
  });

  it("applies an entry to the GPUs its device-filter names, or to all without one", () => {
    const layout = loadLayout(at("custom.yaml"));
    const mixed = selectConfig(layout, "mixed-node");
    assert.deepEqual(
      entriesFor(mixed, "0x20B010DE").map((e) => e.index),
      [0],
    );
    assert.deepEqual(
      entriesFor(mixed, "0x232110DE").map((e) => e.index),
      [1],
    );
    assert.deepEqual(entriesFor(mixed, "0x233010DE"), []);
    assert.equal(
      noEntryReason(mixed, "H100-80GB", "0x233010DE"),
      "config 'mixed-node' has no entry for H100-80GB (PCI device id 0x233010DE): its entries apply only to 0x20B010DE, 0x20F110DE, 0x232110DE",
    );
    const all = selectConfig(loadLayout(at("default.yaml")), "all-disabled").entries[0]!;
    assert.equal(entryMatchesDevice(all, "0x290110DE"), true);
  });
});

describe("layout files: refused with file:line, config, entry and what is expected", () => {
  it("invalid.yaml: every broken entry, in file order", () => {
    const err = refused(() => loadLayout(at("invalid.yaml")), "LAYOUT");
    const f = at("invalid.yaml");
    assert.deepEqual(err.message.split("\n"), [
      `${f}:5: config 'broken', entry 1, devices: expected "all" or a list of GPU indices such as [0, 1], got "some"`,
      `${f}:10: config 'broken', entry 2, mig-enabled: expected true or false, got "yes"`,
      `${f}:12: config 'broken', entry 3, mig-devices: missing; mig-devices is required when mig-enabled is true (use {} for no instances)`,
      `${f}:14: config 'broken', entry 3, mig-device: unknown field 'mig-device'; expected one of device-filter, devices, mig-enabled, mig-devices, placements`,
      `${f}:19: config 'broken', entry 4, mig-devices.3g-40gb: '3g-40gb' is not a MIG profile; expected <G>g.<GB>gb such as 3g.40gb, 1g.10gb+me, or a compute-instance split such as 1c.3g.40gb`,
      `${f}:20: config 'broken', entry 4, mig-devices.1g.10gb: expected a whole number of instances (0 or more), got -2`,
      `${f}:21: config 'broken', entry 5, device-filter: 'H100' is not a PCI device id; expected the form 0x<device><vendor>, such as "0x233010DE"`,
      `${f}:25: config 'broken', entry 5, mig-devices: MIG devices are listed while mig-enabled is false; remove them or set mig-enabled: true`,
    ]);
    assert.equal(err.context.file, f);
  });

  it("bad YAML names the line", () => {
    const text = `${HEAD}  a:\n    - devices: all\n     mig-enabled: true\n`;
    const err = refused(() => parseLayout(text, "bad.yaml"), "LAYOUT");
    assert.match(
      err.message,
      /^bad\.yaml:5: not valid YAML: .+; fix the YAML syntax at that line$/,
    );
  });

  it("a version other than v1 and an unknown top-level field", () => {
    const err = refused(() => parseLayout("version: v2\nmig-config: {}\n", "v.yaml"), "LAYOUT");
    assert.deepEqual(err.message.split("\n"), [
      'v.yaml:1: version: expected `version: v1`, the only mig-parted config version, got "v2"',
      "v.yaml:1: mig-configs: missing; expected a mapping of config names to lists of entries",
      "v.yaml:2: mig-config: unknown field 'mig-config'; expected one of version, mig-configs",
    ]);
  });

  it("a config with no entries", () => {
    const err = refused(() => parseLayout(`${HEAD}  empty: []\n`, "e.yaml"), "LAYOUT");
    assert.equal(err.message, "e.yaml:3: config 'empty': expected at least one entry, got []");
  });

  it("placements that name a profile mig-devices lacks, repeat a start, or outnumber it", () => {
    const text = `${HEAD}  p:
    - devices: all
      mig-enabled: true
      mig-devices: {"3g.40gb": 1}
      placements: {"4g.40gb": [0], "3g.40gb": [4, 4]}
  q:
    - devices: all
      mig-enabled: true
      mig-devices: {"3g.40gb": 1}
      placements: {"3g.40gb": [0, 4]}
`;
    const err = refused(() => parseLayout(text, "p.yaml"), "LAYOUT");
    assert.deepEqual(err.message.split("\n"), [
      "p.yaml:7: config 'p', entry 1, placements.4g.40gb: placements names 4g.40gb, which mig-devices does not ask for; placements are keyed by a GPU-instance profile of mig-devices",
      "p.yaml:7: config 'p', entry 1, placements.3g.40gb: placements for 3g.40gb repeats a start; two GPU instances cannot share one",
      "p.yaml:7: config 'p', entry 1, placements.3g.40gb: placements gives 2 starts for 3g.40gb, but mig-devices asks for 1",
      "p.yaml:12: config 'q', entry 1, placements.3g.40gb: placements gives 2 starts for 3g.40gb, but mig-devices asks for 1",
    ]);
  });

  it("an unknown config name, and a missing -c where the file has several", () => {
    const layout = loadLayout(at("placements.yaml"));
    const unknown = refused(() => selectConfig(layout, "nope"), "USAGE");
    assert.equal(
      unknown.message,
      `${at("placements.yaml")} has no config 'nope'; it has: upper-3g, spread-1g, a100-3g-low`,
    );
    const missing = refused(() => selectConfig(layout, undefined), "USAGE");
    assert.match(missing.message, /has 3 configs; choose one with -c NAME: upper-3g, spread-1g/);
    const one = parseLayout(`${HEAD}  only:\n    - devices: all\n      mig-enabled: false\n`, "o");
    assert.equal(selectConfig(one, undefined).name, "only");
  });

  it("a file that cannot be read", () => {
    const err = refused(() => loadLayout(at("missing.yaml")), "LAYOUT");
    assert.match(err.message, /missing\.yaml: cannot read the layout file \(ENOENT\)/);
  });
});
