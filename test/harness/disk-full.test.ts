// A full disk under --out (a 64 KiB tmpfs, mounted by the test as root) mid-run: the run
// finishes, names the path, is not called passed, and the teardowns still restore the layout.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { simNodeRecord } from "../../sim/src/cluster.js";
import { readState } from "../../sim/src/nvsmi/state.js";
import { cli, runArgs } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";

describe("a full disk under --out (real sshd, tmpfs)", function () {
  this.timeout(120_000);
  const c = useCluster([{ gpu: "H100-80GB", driver: "580.65.06" }]);
  let full = "";
  let mounted = false;

  before(() => {
    full = join(c.dir, "full");
    mkdirSync(full);
    // The test suite runs as root (sshd, apt-get): root can mount a small tmpfs.
    const r = spawnSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", full]);
    mounted = r.status === 0;
    if (!mounted)
      throw new Error(`this test mounts a tmpfs and needs root: ${r.stderr.toString().trim()}`);
    execFileSync("dd", ["if=/dev/zero", `of=${join(full, "filler")}`, "bs=1k", "count=56"], {
      stdio: "ignore",
    });
  });
  // Unmounted inside the test: the cluster's own after-hook removes its folder, the mount
  // point with it, and runs first.
  const unmount = () => {
    if (mounted) spawnSync("umount", [full]);
    mounted = false;
  };
  after(unmount);

  it("finishes, names the path, exits 2 and restores the layout", async () => {
    const r = await cli(
      ...runArgs(c, "full", {
        layout: ["test/fixtures/isolation-layout.yaml", "two-3g"],
        out: join(full, "out"),
        journal: join(c.dir, "journal"),
      }),
    );
    // What the reports line names, looked at before the tmpfs goes.
    const reportsLine = /^reports: (.*)$/m.exec(r.stdout)?.[1] ?? "";
    const listed = [...reportsLine.matchAll(/(\/\S+?\.(?:xml|jsonl))\b/g)].map((m) => ({
      path: m[1]!,
      size: existsSync(m[1]!) ? statSync(m[1]!).size : 0,
    }));
    unmount();
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stdout, /BROKEN \[WRITE\] run .*the Allure results are written/);
    assert.doesNotMatch(r.stdout + r.stderr, /\n\s+at .*\.(js|ts):\d+/, "no stack trace");
    assert.match(
      r.stderr + r.stdout,
      new RegExp(
        `${join(full, "out").replace(/[/.]/g, "\\$&")}.*(ENOSPC|EACCES|EROFS|no space|cannot)`,
        "i",
      ),
    );
    // The reports line names only files that were written: none of them is missing or empty.
    assert.ok(reportsLine, r.stdout);
    assert.deepEqual(
      listed.filter((f) => f.size === 0),
      [],
      `the reports line names missing or empty files: ${reportsLine}`,
    );
    const st = readState(join(simNodeRecord(c.inventoryPath, "sim01").dir, "state")).gpus[0]!;
    assert.equal(st.gis.length, 0, "the run's layout was taken down");
    assert.equal(st.mig.current, false, "MIG is off again, as found");
  });
});
