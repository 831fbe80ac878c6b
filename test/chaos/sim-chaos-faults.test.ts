// The planted isolation faults of the simulator (sim fault isolation-broken|xid-misattributed|
// hang|drop-connection): each sets its flag, records itself, and `--clear` puts the node back.

import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { clearFaults, plantFault } from "../../sim/src/faults.js";
import { initState } from "../../sim/src/nvsmi/state.js";
import { neighbourFault, readChaos, recordChaosEvent } from "../../sim/src/workloads/chaos.js";
import { tempDir } from "../helpers/tmp.js";

describe("simulator chaos faults (isolation-broken, xid-misattributed, hang, drop-connection)", () => {
  let dir: string;
  beforeEach(() => {
    dir = tempDir("chaos");
    initState(dir, { node: "sim01", product: "H100-80GB", gpus: 1, driver: "580.65.06" });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("plants each flag and --clear removes them all with the fault events", async () => {
    await plantFault(dir, "isolation-broken");
    await plantFault(dir, "xid-misattributed");
    await plantFault(dir, "hang");
    const drop = await plantFault(dir, "drop-connection", { name: "slicecheck-crasher" });
    assert.match(drop.detail, /slicecheck-crasher drops its SSH connection/);
    const c = readChaos(dir);
    assert.equal(c.isolationBroken, true);
    assert.equal(c.xidMisattributed, true);
    assert.equal(c.hang, true);
    assert.deepEqual(c.dropConnection, { program: "slicecheck-crasher" });
    const undone = await clearFaults(dir);
    assert.equal(undone.length, 4);
    assert.deepEqual(readChaos(dir), {});
  });

  it("a neighbour's fault reaches only other units of the same GPU, and only with the flag", async () => {
    const since = Date.now() - 1000;
    const victim = { gpu: 0, gi: 2, ci: 0 };
    await recordChaosEvent(dir, { gpu: 0, gi: 1, ci: 0, kind: "crash" });
    assert.equal(readChaos(dir).events, undefined, "a healthy node keeps no fault events");
    await plantFault(dir, "isolation-broken");
    await recordChaosEvent(dir, { gpu: 0, gi: 1, ci: 0, kind: "crash" });
    assert.equal(neighbourFault(dir, victim, since, ["crash"], "isolationBroken"), true);
    assert.equal(
      neighbourFault(dir, { gpu: 0, gi: 1, ci: 0 }, since, ["crash"], "isolationBroken"),
      false,
    );
    assert.equal(
      neighbourFault(dir, { gpu: 1, gi: 2, ci: 0 }, since, ["crash"], "isolationBroken"),
      false,
    );
    assert.equal(neighbourFault(dir, victim, since, ["oom"], "isolationBroken"), false);
    assert.equal(neighbourFault(dir, victim, since, ["crash"], "hang"), false, "hang not planted");
  });

  it("refuses an unknown kind with the list of kinds, the new ones included", () => {
    assert.throws(() => plantFault(dir, "meteor"), /isolation-broken.*\n.*xid-misattributed/s);
  });
});
