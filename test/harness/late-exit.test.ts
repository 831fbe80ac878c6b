// Late is not failed (real sshd, simulated H100s): a node's sshd sessions stopped for 15 s
// across the end of a 20 s stress hold its exit back past the controller's 30 s deadline,
// although the workload ended on its own, in time, with exit 0. The node's own record of its
// end decides: the stress passes (saying its exit was late), never "killed at its deadline".
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { simNodeRecord } from "../../sim/src/cluster.js";
import { readPid } from "../../sim/src/sshd.js";
import type { CheckRecord } from "../../src/verdicts/checks.js";
import { cli } from "../helpers/cli.js";
import { useCluster, waitFor } from "../helpers/cluster.js";
import { childrenOf } from "../helpers/procs.js";
import { isSimWorkload } from "../helpers/sim-procs.js";

/** The simulated stress process a run started on this cluster's `node` (tagged with the run,
 * and in that node's simulated environment: other clusters have a sim01 too). */
function stressOn(nodeDir: string): number | undefined {
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const env = readFileSync(`/proc/${d}/environ`, "latin1").split("\0");
      if (!env.includes(`SLICECHECK_SIM_NODE_DIR=${nodeDir}`)) continue;
      if (!env.some((e) => e.startsWith("SLICECHECK_RUN="))) continue;
      if (isSimWorkload(d, "stress")) return Number(d);
    } catch {
      /* gone or not ours */
    }
  }
  return undefined;
}

describe("a late exit is judged by the node's record (real sshd)", function () {
  this.timeout(180_000);
  const c = useCluster(2);

  it("sessions stopped 15 s across a 20 s stress's end: no FAILED; the stress passes on its node record", async () => {
    const rec = simNodeRecord(c.inventoryPath, "sim01");
    const listener = readPid(join(rec.dir, "sshd.pid"))!;
    const running = cli(
      "run",
      "-i",
      c.inventoryPath,
      "--duration",
      "20",
      "--out",
      join(c.dir, "late"),
      "--db",
      join(c.dir, "late.db"),
      "--json",
    );
    // The deadline is 20 s + max(10 s, 20 %) = 30 s from the stress's start on the node. Its
    // interval line at t=16 s (lines every 4 s) says where its own clock is: 2 s later the stall
    // starts and lasts 15 s, so the exit (at 20 s) reaches the controller after the deadline.
    const clock = () => {
      try {
        const dir = join(c.dir, "late", "sim01");
        const logs = readdirSync(dir).filter((f) => f.endsWith(".stress.1.log"));
        const ts = logs.flatMap((f) =>
          [...readFileSync(join(dir, f), "utf8").matchAll(/stress t=([\d.]+)/g)].map((m) =>
            Number(m[1]),
          ),
        );
        return Math.max(0, ...ts);
      } catch {
        return 0;
      }
    };
    assert.ok(await waitFor(() => clock() >= 16, 90_000, 50), "the stress reached 16 s");
    await new Promise((r) => setTimeout(r, 2_000));
    const frozen = childrenOf(listener);
    assert.ok(frozen.length > 0, "sim01 has a session to stop");
    for (const p of frozen) process.kill(p, "SIGSTOP");
    await new Promise((r) => setTimeout(r, 15_000));
    // The stress ended on its own during the stall (the node was not stopped, its sshd was).
    const endedInStall = stressOn(rec.dir) === undefined;
    for (const p of frozen) process.kill(p, "SIGCONT");
    assert.ok(endedInStall, "the stress ended during the stall");
    const r = await running;
    const s = JSON.parse(r.stdout) as { checks: CheckRecord[] };
    const stress = s.checks.filter((x) => x.suite === "stress");
    assert.ok(stress.length >= 2, r.stdout);
    assert.deepEqual(
      stress.filter((x) => x.status === "failed").map((x) => x.message),
      [],
      "nothing failed because the controller heard the exit late",
    );
    const mine = stress.filter((x) => x.node === "sim01");
    for (const x of mine) assert.equal(x.status, "passed", JSON.stringify(x));
    // The deadline really fired before the exit arrived: the pass comes from the record.
    assert.ok(
      mine.some((x) =>
        /after its 30\.0 s deadline, but the node recorded its end \(exit 0\)/.test(
          String(x.figures.lateExit),
        ),
      ),
      JSON.stringify(mine),
    );
    assert.equal(r.code, 0, r.stderr);
  });
});
