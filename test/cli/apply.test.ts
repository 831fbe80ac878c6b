import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { updateState } from "../../sim/src/nvsmi/state.js";
import type { NodeReport } from "../../src/mig/apply/index.js";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";
import {
  freshNode,
  fullState,
  journalsExist,
  layoutOf,
  localJournal,
  smi,
} from "../mig/apply-helpers.js";

const LAYOUTS = join(import.meta.dirname, "../../fixtures/layouts");
const CUSTOM = join(LAYOUTS, "custom.yaml");
const DEFAULT = join(LAYOUTS, "default.yaml");

interface Out {
  nodes: NodeReport[];
}

const argvs = (r: NodeReport, gpu = 0) => r.gpus[gpu]!.commands.map((c) => c.argv.join(" "));

describe("slicecheck apply / assert / restore (real sshd; simulated A100, H100, H200)", function () {
  this.timeout(150_000);
  const c = useCluster([
    { gpu: "A100-40GB", driver: "535.183.01" },
    { gpu: "H100-80GB", driver: "580.65.06", gpus: 2 },
    { gpu: "H200", driver: "580.173.02" },
  ]);
  const on = (node: string, ...args: string[]) =>
    cli(...args, "-i", c.inventoryPath, "--nodes", node);
  const journal = () => ["--journal-dir", join(c.dir, "journal")];
  const json = (stdout: string) => JSON.parse(stdout) as Out;

  it("H100: applies, is idempotent, asserts, reports drift, and restores the original exactly", async () => {
    const dir = freshNode(c, "sim02");
    // Original: GPU 0 in MIG with two 3g.40gb, GPU 1 with MIG off.
    smi(dir, "-mig", "1", "-i", "0");
    smi(dir, "mig", "-cgi", "9:0,9:4", "-C", "-i", "0");
    const original = layoutOf(dir);

    const r = await on("sim02", "apply", CUSTOM, "-c", "inference", ...journal(), "--json");
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const node = json(r.stdout).nodes[0]!;
    assert.equal(node.status, "changed");
    // The 3g.40gb at slice 4 is where the plan wants it, so it stays; the one at 0 goes.
    assert.deepEqual(argvs(node, 0), [
      "nvidia-smi mig -dci -gi 1 -i 0",
      "nvidia-smi mig -dgi -gi 1 -i 0",
      "nvidia-smi mig -cgi 14:0,19:2,19:3 -C -i 0",
    ]);
    assert.equal(argvs(node, 1)[0], "nvidia-smi -mig 1 -i 1");
    const t0 = node.gpus[0]!.timings;
    const t1 = node.gpus[1]!.timings;
    assert.ok(t0.destroyMs! > 0 && t0.createMs! > 0 && t0.verifyMs! > 0 && t0.modeMs === undefined);
    assert.ok(t1.modeMs! > 0 && t1.createMs! > 0 && t1.destroyMs === undefined);
    const want = [
      [14, 0],
      [19, 2],
      [19, 3],
      [9, 4],
    ];
    for (const g of layoutOf(dir)) {
      assert.deepEqual(
        g.gis.map((x) => [x.profileId, x.start]),
        want,
      );
      assert.deepEqual(g.mig, { current: true, pending: true });
    }
    assert.deepEqual(journalsExist(c, "sim02"), [true, true]);
    const j = JSON.parse(readFileSync(localJournal(c, "sim02"), "utf8"));
    assert.equal(j.gpus[0].gis.length, 2);

    const a = await on("sim02", "assert", CUSTOM, "-c", "inference");
    assert.equal(a.code, 0, a.stdout);
    assert.equal(a.stdout.match(/matches config 'inference'/g)?.length, 2);

    const dry = await on("sim02", "apply", CUSTOM, "-c", "inference", "--dry-run", ...journal());
    assert.equal(dry.code, 0);
    assert.equal(
      dry.stdout.match(/already as the config 'inference' wants; no command/g)?.length,
      2,
    );
    assert.doesNotMatch(dry.stdout, /nvidia-smi/);

    const again = await on("sim02", "apply", CUSTOM, "-c", "inference", ...journal(), "--json");
    assert.equal(again.code, 0);
    const second = json(again.stdout).nodes[0]!;
    assert.equal(second.status, "unchanged");
    assert.deepEqual(
      second.gpus.map((g) => [g.status, g.commands.length, g.planned.length]),
      [
        ["unchanged", 0, 0],
        ["unchanged", 0, 0],
      ],
    );

    // Someone removes a 1g.10gb behind our back: assert names it and exits 1.
    smi(dir, "mig", "-dci", "-gi", "9", "-i", "1");
    smi(dir, "mig", "-dgi", "-gi", "9", "-i", "1");
    const drift = await on("sim02", "assert", CUSTOM, "-c", "inference");
    assert.equal(drift.code, 1);
    assert.match(
      drift.stdout,
      /sim02 GPU 1 \(NVIDIA H100 80GB HBM3\): DRIFT\n {2}- missing GPU instance 1g\.10gb/,
    );
    assert.match(drift.stdout, /assert: 1 of 2 GPU\(s\) drift/);

    const back = await on("sim02", "restore", ...journal());
    assert.equal(back.code, 0, back.stdout + back.stderr);
    assert.match(back.stdout, /sim02: restored and verified; journal removed/);
    assert.deepEqual(layoutOf(dir), original);
    assert.deepEqual(journalsExist(c, "sim02"), [false, false]);
  });

  it("H200: a second apply keeps the first journal, and restore goes back to that first state", async () => {
    const dir = freshNode(c, "sim03");
    smi(dir, "-mig", "1");
    smi(dir, "mig", "-cgi", "0", "-C");
    const original = layoutOf(dir);
    const r = await on("sim03", "apply", CUSTOM, "-c", "h200-halves", ...journal());
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /now: 4g\.71gb@0:4 \(GI \d+\), 3g\.71gb@4:4 \(GI \d+\)/);
    assert.match(r.stdout, /steps: destroy \d+ ms, create \d+ ms, verify \d+ ms/);
    const first = readFileSync(localJournal(c, "sim03"), "utf8");

    const off = await on("sim03", "apply", DEFAULT, "-c", "all-disabled", ...journal(), "--json");
    assert.equal(off.code, 0, off.stdout);
    assert.equal(json(off.stdout).nodes[0]!.journal?.reused, true);
    assert.equal(readFileSync(localJournal(c, "sim03"), "utf8"), first);
    assert.deepEqual(layoutOf(dir)[0]!.mig, { current: false, pending: false });

    const back = await on("sim03", "restore", ...journal());
    assert.equal(back.code, 0, back.stdout + back.stderr);
    assert.deepEqual(layoutOf(dir), original);
  });

  it("A100: a pending MIG change needs --allow-reset; with it the GPU is reset and restore undoes it", async () => {
    const dir = freshNode(c, "sim01");
    // Someone ran `-mig 1` while a client held the GPU: the enable waits for a reset.
    await updateState(dir, (s) => {
      s.gpus[0]!.mig = { current: false, pending: true };
      return { changed: true, result: null };
    });
    const before = fullState(dir);
    const refused = await on("sim01", "apply", CUSTOM, "-c", "mixed-node", ...journal());
    assert.equal(refused.code, 2, refused.stdout + refused.stderr);
    assert.match(
      refused.stdout,
      /REFUSED, nothing was changed:\n {2}- GPU 0: MIG mode Enabled is pending and takes effect only with a GPU reset \(nvidia-smi --gpu-reset -i 0\); rerun with --allow-reset/,
    );
    assert.deepEqual(fullState(dir), before);
    assert.deepEqual(journalsExist(c, "sim01"), [false, false]);

    const r = await on(
      "sim01",
      "apply",
      CUSTOM,
      "-c",
      "mixed-node",
      "--allow-reset",
      ...journal(),
      "--json",
    );
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const node = json(r.stdout).nodes[0]!;
    assert.deepEqual(argvs(node), [
      "nvidia-smi --gpu-reset -i 0",
      "nvidia-smi mig -cgi 9:0,9:4 -C -i 0",
    ]);
    assert.ok(node.gpus[0]!.timings.resetMs! > 0);
    assert.deepEqual(layoutOf(dir)[0]!.mig, { current: true, pending: true });
    assert.equal(layoutOf(dir)[0]!.gis.length, 2);

    const back = await on("sim01", "restore", ...journal());
    assert.equal(back.code, 0, back.stdout + back.stderr);
    // The effective mode comes back; a pending enable cannot be recreated without a blocker.
    assert.match(back.stdout, /note: the journal recorded MIG mode Enabled pending/);
    assert.deepEqual(layoutOf(dir), [{ gpu: 0, mig: { current: false, pending: false }, gis: [] }]);
  });

  it("A100: a client the interlocks cannot see leaves the enable pending: stop, keep the journal, restore", async () => {
    const dir = freshNode(c, "sim01");
    const original = layoutOf(dir);
    // Fabric Manager is not among the clients slicecheck looks for; it still blocks the reset.
    await updateState(dir, (s) => {
      s.gpus[0]!.holders = ["nv-fabricmanager"];
      return { changed: true, result: null };
    });
    const r = await on("sim01", "apply", CUSTOM, "-c", "mixed-node", ...journal());
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(
      r.stderr,
      /sim01 GPU 0 \(NVIDIA A100-SXM4-40GB\): MIG mode Enabled is pending and takes effect only after a GPU reset .*rerun with --allow-reset, or run `slicecheck restore`/,
    );
    assert.match(r.stdout, /nvidia-smi -mig 1 -i 0 {2}\(exit 0, \d+ ms\)/);
    assert.deepEqual(layoutOf(dir)[0]!.mig, { current: false, pending: true });
    assert.deepEqual(journalsExist(c, "sim01"), [true, true]);

    const back = await on("sim01", "restore", ...journal());
    assert.equal(back.code, 0, back.stdout + back.stderr);
    assert.match(back.stdout, /nvidia-smi -mig 0 -i 0/);
    assert.deepEqual(layoutOf(dir), original);
  });
});

describe("apply / assert refuse a bad layout before any SSH connection", () => {
  const dir = join(tmpdir(), `slicecheck-badlayout-${process.pid}`);
  // Nothing listens on port 1: any connection attempt ends in exit 2 [CONNECT], never exit 3.
  const inv = join(dir, "ghost.yaml");
  const badYaml = join(dir, "bad.yaml");
  const UNFIT = join(LAYOUTS, "unfit.yaml");
  before(() => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      inv,
      "defaults: {user: root, known_hosts: /dev/null, ssh_config: none}\nnodes:\n  ghost: {host: 127.0.0.1, port: 1}\n",
    );
    writeFileSync(badYaml, "version: v1\nmig-configs:\n  x:\n    - devices: [all\n");
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("a valid layout does try to connect (so exit 3 below means no connection was tried)", async () => {
    const r = await cli("apply", "-i", inv, CUSTOM, "-c", "inference", "--dry-run");
    assert.equal(r.code, 2);
    assert.match(r.stderr, /ghost: unreachable: .*ECONNREFUSED.*\[CONNECT\]/);
  });

  const cases: [string, string[], RegExp][] = [
    [
      "an unknown profile",
      [UNFIT, "-c", "unknown-profile"],
      /no GPU-instance profile 5g\.50gb.*\[LAYOUT\]/s,
    ],
    [
      "too many instances",
      [UNFIT, "-c", "too-many"],
      /3 × 3g\.40gb asked, but H100-80GB .* offers at most 2/,
    ],
    [
      "an impossible combination",
      [UNFIT, "-c", "impossible"],
      /2g\.20gb does not fit: it can start only at slice 0, 2 or 4/,
    ],
    ["bad YAML", [badYaml, "-c", "x"], /bad\.yaml:\d+: not valid YAML.*\[LAYOUT\]/],
    [
      "an unknown config name",
      [CUSTOM, "-c", "nope"],
      /has no config 'nope'; it has: inference, .*\[USAGE\]/,
    ],
  ];
  for (const [what, args, why] of cases) {
    it(`refuses ${what} with exit 3 (apply and assert)`, async () => {
      for (const cmd of ["apply", "assert"]) {
        const r = await cli(cmd, "-i", inv, ...args);
        assert.equal(r.code, 3, `${cmd}: ${r.stderr}`);
        assert.match(r.stderr, why);
        assert.doesNotMatch(r.stderr, /CONNECT|unreachable/);
      }
    });
  }
});
