// Journal durability against a real sshd and the simulated node: both copies are published
// only whole (no temporary file left on either side), a journal folder that cannot be written
// (a path under a regular file; a full disk when this machine lets root mount a tmpfs) is a
// WRITE error naming the path with nothing changed and no copy left behind, and a journal that
// does not parse is never taken for the original state.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { applyLayout } from "../../src/mig/apply/index.js";
import { loadLayout, selectConfig } from "../../src/mig/layout/index.js";
import { newRunId } from "../../src/transport/open.js";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";
import {
  freshNode,
  journalsExist,
  layoutOf,
  localJournal,
  nodeJournal,
  stateDir,
} from "./apply-helpers.js";

const CUSTOM = join(import.meta.dirname, "../../fixtures/layouts/custom.yaml");
const DEFAULT = join(import.meta.dirname, "../../fixtures/layouts/default.yaml");

/** A tiny tmpfs, if this machine lets us mount one (root, not in a locked-down container). */
function tinyTmpfs(at: string): boolean {
  mkdirSync(at, { recursive: true });
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", at], { stdio: "pipe" });
    return true;
  } catch {
    return false;
  }
}

function fill(dir: string): void {
  // Fill the file system to the last byte: the journal write must hit ENOSPC.
  try {
    writeFileSync(join(dir, "filler"), Buffer.alloc(1024 * 1024));
  } catch {
    /* ENOSPC, as intended: what fitted stays */
  }
}

describe("journal durability (real sshd, simulated H100)", function () {
  this.timeout(90_000);
  const c = useCluster([{ gpu: "H100-80GB", driver: "580.65.06", gpus: 1 }]);
  const node = () => c.inventory.nodes.filter((n) => n.name === "sim01");
  const config = () => selectConfig(loadLayout(CUSTOM), "inference");
  const apply = (journalDir: string) =>
    applyLayout(node(), config(), {
      runId: newRunId(),
      journalDir,
      allowReset: false,
      dryRun: false,
      keep: false,
      layout: { file: CUSTOM, config: "inference" },
    });
  const journal = () => ["--journal-dir", join(c.dir, "journal")];

  it("publishes both copies whole, and leaves no temporary file on either side", async () => {
    const dir = freshNode(c, "sim01");
    const r = await cli("apply", "-i", c.inventoryPath, CUSTOM, "-c", "inference", ...journal());
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.deepEqual(journalsExist(c, "sim01"), [true, true]);
    assert.equal(
      readFileSync(localJournal(c, "sim01"), "utf8"),
      readFileSync(nodeJournal(c, "sim01"), "utf8"),
    );
    const leftovers = [
      ...readdirSync(join(c.dir, "journal")),
      ...readdirSync(stateDir(c, "sim01")),
    ].filter((f) => f.endsWith(".tmp"));
    assert.deepEqual(leftovers, []);
    const back = await cli("restore", "-i", c.inventoryPath, ...journal());
    assert.equal(back.code, 0, back.stdout + back.stderr);
    assert.equal(layoutOf(dir)[0]!.mig.current, false);
  });

  it("an unwritable journal folder is a WRITE error naming it: nothing changed, no copy left", async () => {
    const dir = freshNode(c, "sim01");
    const before = layoutOf(dir);
    writeFileSync(join(c.dir, "plain-file"), "x\n");
    const bad = join(c.dir, "plain-file", "journal");
    const [r] = await apply(bad);
    assert.equal(r!.status, "failed");
    assert.equal(r!.error?.code, "WRITE", r!.error?.message);
    assert.match(
      r!.error!.message,
      new RegExp(`cannot write the journal ${bad}/sim01\\.json: ENOTDIR`),
    );
    assert.match(r!.error!.message, /nothing was changed on the node/);
    assert.deepEqual(layoutOf(dir), before, "no GPU was touched");
    assert.equal(existsSync(nodeJournal(c, "sim01")), false, "the node's copy was taken back");

    // The same through the CLI is refused before any connection, naming the path.
    const cliRun = await cli(
      "apply",
      "-i",
      c.inventoryPath,
      CUSTOM,
      "-c",
      "inference",
      "--journal-dir",
      bad,
    );
    assert.equal(cliRun.code, 3);
    assert.match(
      cliRun.stderr,
      /--journal-dir .*plain-file\/journal: .*plain-file is a file, so nothing can be created under it; give --journal-dir a folder slicecheck can write to \[OUTPUT_PATH\]/,
    );
  });

  it("a full journal disk: ENOSPC named, no stale or half journal (tmpfs when root may mount)", async () => {
    const mnt = join(c.dir, "full");
    if (!tinyTmpfs(mnt)) {
      // Not skipped: the unwritable-folder test above covers the path; say what was not tried.
      console.log("      (cannot mount a tmpfs here: the full-disk variant was not tried)");
      return;
    }
    try {
      const dir = freshNode(c, "sim01");
      const before = layoutOf(dir);
      fill(mnt);
      const r = await cli(
        "apply",
        "-i",
        c.inventoryPath,
        CUSTOM,
        "-c",
        "inference",
        "--journal-dir",
        mnt,
      );
      assert.equal(r.code, 2, r.stdout + r.stderr);
      assert.match(
        r.stderr,
        new RegExp(
          `cannot write the journal ${mnt}/sim01\\.json: ENOSPC \\(no space left on the device\\)`,
        ),
      );
      assert.doesNotMatch(r.stderr, /^\s+at /m);
      assert.deepEqual(readdirSync(mnt), ["filler"], "neither a journal nor a temporary file");
      assert.deepEqual(layoutOf(dir), before);
      assert.equal(existsSync(nodeJournal(c, "sim01")), false, "the node's copy was taken back");
    } finally {
      execFileSync("umount", [mnt]);
    }
  });

  it("a journal cut short is never taken for the original state; restore says which copy is good", async () => {
    const dir = freshNode(c, "sim01");
    const ok = await cli("apply", "-i", c.inventoryPath, CUSTOM, "-c", "inference", ...journal());
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    const applied = layoutOf(dir);
    const local = localJournal(c, "sim01");
    const whole = readFileSync(local, "utf8");
    writeFileSync(local, whole.slice(0, Math.floor(whole.length / 2)));

    const r = await cli("restore", "-i", c.inventoryPath, ...journal());
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.ok(
      r.stderr.includes(`the journal ${local} is not a complete slicecheck journal`),
      r.stderr,
    );
    assert.match(
      r.stderr,
      /The node's copy sim01:.*journal-sim01\.json is valid: move .*sim01\.json away and rerun restore/,
    );
    assert.match(r.stderr, /\[JOURNAL_INVALID\]/);
    assert.deepEqual(layoutOf(dir), applied, "nothing was restored from half a journal");

    // A second apply refuses too, rather than keeping the broken copy as the original state.
    const again = await cli(
      "apply",
      "-i",
      c.inventoryPath,
      DEFAULT,
      "-c",
      "all-disabled",
      ...journal(),
    );
    assert.equal(again.code, 2);
    assert.match(again.stdout + again.stderr, /JOURNAL_INVALID/);
    assert.deepEqual(layoutOf(dir), applied, "no change without a valid journal");

    // Only the node's copy, and it is cut short: named as node:path, never used.
    writeFileSync(local.replace(/\.json$/, ".json.bad"), whole);
    execFileSync("rm", [local]);
    const remote = nodeJournal(c, "sim01");
    const remoteText = readFileSync(remote, "utf8");
    writeFileSync(remote, remoteText.slice(0, 40));
    const fromNode = await cli("restore", "-i", c.inventoryPath, ...journal());
    assert.equal(fromNode.code, 2);
    assert.ok(
      fromNode.stderr.includes(`the journal sim01:${remote} is not a complete slicecheck journal`),
      fromNode.stderr,
    );
    assert.deepEqual(layoutOf(dir), applied);

    // Put the good copy back: restore works again.
    writeFileSync(remote, remoteText);
    const fixed = await cli("restore", "-i", c.inventoryPath, ...journal());
    assert.equal(fixed.code, 0, fixed.stdout + fixed.stderr);
    assert.equal(layoutOf(dir)[0]!.mig.current, false);
  });
});
