// Each node's intended layout (inventory mig_config + mig_layout, as the GPU Operator's
// nvidia.com/mig.config label names one config): assert and doctor read it, the layout suite
// holds a run without --layout to it, `apply --intended` converges to it, and `run --layout`
// ends in it. A node back from a simulated driver upgrade (MIG on, no instances) is the case.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { loadInventory } from "../../src/inventory/load.js";
import { intendedGroups } from "../../src/mig/apply/intended.js";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";
import { tempDir } from "../helpers/tmp.js";

const LAYOUTS = join(import.meta.dirname, "../../fixtures/layouts");

/** The simulated cluster's inventory with an intended layout: the file in defaults, the
 * config per node (what a site writes). */
function withIntended(simInventory: string, out: string, configs: Record<string, string>): string {
  const inv = parse(readFileSync(simInventory, "utf8")) as {
    defaults?: Record<string, unknown>;
    nodes: Record<string, Record<string, unknown>>;
  };
  inv.defaults = { ...inv.defaults, mig_layout: join(LAYOUTS, "default.yaml") };
  for (const [node, config] of Object.entries(configs)) inv.nodes[node]!.mig_config = config;
  writeFileSync(out, stringify(inv));
  return out;
}

describe("intended layout: inventory fields (unit)", () => {
  it("resolves mig_layout from the inventory's folder and keeps where mig_config was written", () => {
    const dir = tempDir("intended");
    writeFileSync(
      join(dir, "l.yaml"),
      "version: v1\nmig-configs:\n  a: [{devices: all, mig-enabled: false}]\n",
    );
    const f = join(dir, "inv.yaml");
    writeFileSync(
      f,
      "defaults:\n  mig_layout: l.yaml\nnodes:\n  n1: {host: 127.0.0.1, mig_config: a}\n  n2: {host: 127.0.0.2}\n",
    );
    const inv = loadInventory(f, { sshConfig: null });
    const n1 = inv.nodes.find((n) => n.name === "n1")!;
    assert.equal(n1.intended?.file, join(dir, "l.yaml"));
    assert.equal(n1.intended?.config, "a");
    assert.match(n1.intended?.origin ?? "", /inv\.yaml:4/);
    assert.equal(inv.nodes.find((n) => n.name === "n2")!.intended, null);
    assert.equal(intendedGroups(inv.nodes, false).length, 1);
    assert.throws(() => intendedGroups(inv.nodes, true), /n2: no intended layout/);
  });

  it("refuses mig_config without a layout file, and a config the file lacks, naming the line", () => {
    const dir = tempDir("intended");
    const f = join(dir, "inv.yaml");
    writeFileSync(f, "nodes:\n  n1: {host: 127.0.0.1, mig_config: all-balanced}\n");
    assert.throws(() => loadInventory(f, { sshConfig: null }), /inv\.yaml:2.*no mig_layout/s);
    writeFileSync(
      f,
      `defaults: {mig_layout: ${join(LAYOUTS, "default.yaml")}}\nnodes:\n  n1: {host: 127.0.0.1, mig_config: all-nonesuch}\n`,
    );
    const inv = loadInventory(f, { sshConfig: null });
    assert.throws(
      () => intendedGroups(inv.nodes, true),
      /inv\.yaml:3.*has no config 'all-nonesuch'/s,
    );
  });

  it("reads slicecheck_mig_config and slicecheck_mig_layout from an Ansible inventory's group vars", () => {
    const dir = tempDir("intended");
    const f = join(dir, "hosts.ini");
    writeFileSync(
      f,
      `[gpu]\nn1 ansible_host=127.0.0.1\n\n[gpu:vars]\nslicecheck_mig_config=all-balanced\nslicecheck_mig_layout=${join(LAYOUTS, "default.yaml")}\n`,
    );
    const n1 = loadInventory(f, { sshConfig: null }).nodes[0]!;
    assert.equal(n1.intended?.config, "all-balanced");
    assert.equal(intendedGroups([n1], true)[0]?.config.name, "all-balanced");
  });
});

describe("intended layout on a simulated A100 node back from a driver upgrade (real sshd)", function () {
  this.timeout(120_000);
  const c = useCluster([{ gpu: "A100-40GB", driver: "535.183.01" }]);
  let inv = "";
  before(() => {
    inv = withIntended(c.inventoryPath, join(c.dir, "intended.yaml"), { sim01: "all-balanced" });
  });
  const on = (...args: string[]) => cli(...args, "-i", inv, "--nodes", "sim01");

  it("converges with apply --intended, then asserts it with no layout argument", async () => {
    const a = await on("apply", "--intended");
    assert.equal(a.code, 0, a.stdout + a.stderr);
    assert.match(a.stdout, /verified in its intended layout.*journal removed/);
    const s = await on("assert");
    assert.equal(s.code, 0, s.stdout + s.stderr);
    assert.match(s.stdout, /GPU 0 .*: matches intended config 'all-balanced' of .*default\.yaml/);
  });

  it("after the upgrade (no instances left): assert, doctor and the layout suite say LAYOUT_NOT_INTENDED; apply --intended fixes it", async () => {
    const up = await cli(
      "sim",
      "upgrade-driver",
      "sim01",
      "--to",
      "550.127.06",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(up.code, 0, up.stderr);
    const s = await on("assert");
    assert.equal(s.code, 1, s.stdout + s.stderr);
    assert.match(s.stdout, /NOT INTENDED, differs from intended config 'all-balanced'/);
    assert.match(s.stdout, /fix: slicecheck apply --intended --nodes sim01/);
    const d = await on("doctor");
    assert.match(
      d.stdout,
      /sim01: warning: not in its intended layout, config 'all-balanced' .*\[LAYOUT_NOT_INTENDED\]/,
    );
    const out = join(c.dir, "run-not-intended");
    const r = await on("run", "--suites", "layout", "--out", out, "--db", join(c.dir, "h.db"));
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const checks = readFileSync(join(out, "checks.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const layout = checks.filter((x: { suite: string }) => x.suite === "layout");
    assert.ok(layout.length > 0, "the layout suite ran");
    assert.ok(
      layout.every(
        (x: { status: string; code: string }) =>
          x.status === "failed" && x.code === "LAYOUT_NOT_INTENDED",
      ),
      JSON.stringify(layout),
    );
    const fix = await on("apply", "--intended");
    assert.equal(fix.code, 0, fix.stdout + fix.stderr);
    assert.equal((await on("assert")).code, 0);
  });

  it("run --layout with another config, on a node found empty, ends in the intended layout and says so", async () => {
    // Found in the empty layout another upgrade leaves: putting back what was found would
    // leave it empty.
    const up = await cli(
      "sim",
      "upgrade-driver",
      "sim01",
      "--to",
      "580.65.06",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(up.code, 0, up.stderr);
    assert.equal((await on("assert")).code, 1);
    const out = join(c.dir, "run-other");
    const r = await on(
      "run",
      "--layout",
      join(LAYOUTS, "default.yaml"),
      "-c",
      "all-1g.5gb",
      "--suites",
      "layout",
      "--out",
      out,
      "--db",
      join(c.dir, "h.db"),
    );
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stderr, /sim01: left in its intended layout, config 'all-balanced'/);
    const s = await on("assert");
    assert.equal(s.code, 0, s.stdout + s.stderr);
  });

  it("refuses apply with neither a layout nor --intended, and with both (exit 3)", async () => {
    assert.equal((await on("apply")).code, 3);
    assert.equal((await on("apply", join(LAYOUTS, "default.yaml"), "--intended")).code, 3);
  });
});
