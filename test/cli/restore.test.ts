import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { readState } from "../../sim/src/nvsmi/state.js";
import { PACKAGE_ROOT } from "../../sim/src/tools.js";
import { cli } from "../helpers/cli.js";
import { useCluster, waitFor } from "../helpers/cluster.js";
import {
  freshNode,
  journalsExist,
  layoutOf,
  localJournal,
  nodeJournal,
  smi,
} from "../mig/apply-helpers.js";

const DEFAULT = join(import.meta.dirname, "../../fixtures/layouts/default.yaml");

describe("slicecheck restore (real sshd, simulated H100 x4)", function () {
  this.timeout(60_000);
  const c = useCluster([{ gpu: "H100-80GB", driver: "580.65.06", gpus: 4 }]);
  const journal = () => ["--journal-dir", join(c.dir, "journal")];

  it("after a controller SIGKILLed in the middle of an apply, puts the original layout back exactly from the node's journal", async () => {
    const dir = freshNode(c, "sim01");
    // Original: GPU 0 two 3g.40gb; GPU 1 a 2g.20gb split in two 1c CIs and a 1g.10gb at 6; 2, 3 off.
    smi(dir, "-mig", "1", "-i", "0,1");
    smi(dir, "mig", "-cgi", "9:0,9:4", "-C", "-i", "0");
    smi(dir, "mig", "-cgi", "14:2", "-i", "1");
    const gi = readState(dir).gpus[1]!.gis[0]!.id;
    smi(dir, "mig", "-cci", "0,0", "-gi", String(gi), "-i", "1");
    smi(dir, "mig", "-cgi", "19:6", "-C", "-i", "1");
    const original = layoutOf(dir);

    const child = spawn(
      process.execPath,
      [
        join(PACKAGE_ROOT, "bin/slicecheck.js"),
        "apply",
        "-i",
        c.inventoryPath,
        DEFAULT,
        "-c",
        "all-1g.10gb",
        "--keep",
        ...journal(),
      ],
      { stdio: "ignore" },
    );
    const exited = new Promise((r) => child.once("exit", r));
    // Killed once the journal is written and the first GPU has been changed.
    const midway = await waitFor(
      () =>
        existsSync(localJournal(c, "sim01")) &&
        (readState(dir).gpus[0]?.gis.some((g) => g.profileId === 19) ?? false),
      30_000,
      10,
    );
    child.kill("SIGKILL");
    await exited;
    assert.ok(midway, "the apply never got to its first change");
    const left = layoutOf(dir);
    assert.notDeepEqual(left, original);
    assert.ok(
      left.some((g) => g.gis.length !== 7),
      "the apply finished before it was killed; the test proves nothing",
    );
    assert.deepEqual(journalsExist(c, "sim01"), [true, true]);
    const onNode = JSON.parse(readFileSync(nodeJournal(c, "sim01"), "utf8"));
    assert.equal(onNode.keep, true);
    assert.equal(onNode.gpus[1].gis.length, 2);
    // The controller's disk is gone too: restore falls back to the node's copy.
    rmSync(localJournal(c, "sim01"));

    const r = await cli("restore", "-i", c.inventoryPath, ...journal());
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /sim01: restored and verified; journal removed/);
    assert.deepEqual(layoutOf(dir), original);
    assert.deepEqual(journalsExist(c, "sim01"), [false, false]);

    // Nothing left to restore: says so, changes nothing, exit 0.
    const again = await cli("restore", "-i", c.inventoryPath, ...journal());
    assert.equal(again.code, 0);
    assert.match(again.stdout, /sim01: no journal: nothing to restore/);
    assert.deepEqual(layoutOf(dir), original);
  });
});
