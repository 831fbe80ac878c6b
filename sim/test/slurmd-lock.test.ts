// The simulated Slurm's sync lock: one holder at a time, and a holder that is SIGKILLed lets go
// at once (the kernel's flock), so a killed Slurm command never wedges the cluster's next one.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { syncUnderWay, withLock } from "../src/slurmd/lock.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("sim: the simulated Slurm's sync lock", function () {
  this.timeout(20_000);
  let dir = "";
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "slicecheck-slurm-lock-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("says a sync is under way while a holder is inside, and after one that failed there", async () => {
    assert.equal(syncUnderWay(dir), false);
    await withLock(dir, async () => assert.equal(syncUnderWay(dir), true, "inside"));
    assert.equal(syncUnderWay(dir), false, "done");
    await assert.rejects(
      withLock(dir, async () => {
        throw new Error("a sync that failed half way");
      }),
    );
    assert.equal(syncUnderWay(dir), true, "the daemons may be half restarted");
    await withLock(dir, async () => {});
    assert.equal(syncUnderWay(dir), false, "until the next holder is done");
  });

  it("lets one holder in at a time, each in turn", async () => {
    let inside = 0;
    let peak = 0;
    const order: number[] = [];
    await Promise.all(
      [0, 1, 2, 3, 4].map((i) =>
        withLock(dir, async () => {
          inside++;
          peak = Math.max(peak, inside);
          await sleep(40);
          order.push(i);
          inside--;
        }),
      ),
    );
    assert.equal(peak, 1, "never two holders at once");
    assert.equal(order.length, 5, "every caller got its turn");
  });

  it("is free once withLock returns, even to a caller that then blocks its event loop", async () => {
    // The simulated Slurm commands' wrapper goes on to spawnSync the real command: a lock still
    // held then would make a Slurm command inside that command's job wait on it.
    await withLock(dir, async () => {});
    const r = spawnSync("flock", ["-n", join(dir, "sync.lock"), "true"]);
    assert.equal(r.status, 0, "flock -n found the lock free");
  });

  it("is free again as soon as a holder is SIGKILLed", async () => {
    const held = join(dir, "held");
    const script = `import { writeFileSync } from "node:fs";
      import { withLock } from ${JSON.stringify(join(process.cwd(), "sim/src/slurmd/lock.ts"))};
      await withLock(${JSON.stringify(dir)}, async () => { writeFileSync(${JSON.stringify(held)}, ""); await new Promise(() => {}); });`;
    const p = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      stdio: "ignore",
    });
    while (!existsSync(held)) await sleep(50);
    // Held by the other process: a second holder waits.
    let got = false;
    const waiting = withLock(dir, async () => {
      got = true;
    });
    await sleep(500);
    assert.equal(got, false, "the lock is held by the other process");
    p.kill("SIGKILL");
    await waiting; // within this test's timeout, not the lock's 120-s wait
    assert.equal(got, true);
  });
});
