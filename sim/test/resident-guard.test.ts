// The resident simulator's watch of its clients' process-list entries (sim/src/resident/guard.ts),
// in this process: a registration that lands after its client ended is undone, a running client's
// entries stay, and its end removes what it left. resident-workloads.test.ts has the resident's
// own death and the one guardian it starts.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { tempDir } from "../../test/helpers/tmp.js";
import { initState, readState } from "../src/nvsmi/state.js";
import { clientEnded, clientStarted, watch } from "../src/resident/guard.js";
import { hasMarker, register, startGuardian, watchDeathsWith } from "../src/workloads/registry.js";

describe("the resident's watch of its clients' entries", function () {
  this.timeout(20_000);
  const dir = join(tempDir("guard"), "state");
  let clients: ChildProcess[] = [];

  const entries = () => readState(dir).gpus.flatMap((g) => g.processes.map((p) => p.pid));
  const client = () => {
    const c = spawn("sleep", ["30"], { stdio: "ignore" });
    clients.push(c);
    return c.pid!;
  };
  const registered = (pid: number) =>
    register(dir, "gpu_burn", pid, () => ({
      entries: [{ gpu: 0, gi: null, ci: null, usedMiB: 1024 }],
      result: 0,
    }));

  before(() => {
    initState(dir, { node: "sim01", product: "H100-80GB", gpus: 1, driver: "550.127.05" });
    watchDeathsWith(watch);
  });
  afterEach(() => {
    for (const c of clients) c.kill("SIGKILL");
    clients = [];
  });
  after(() => watchDeathsWith(startGuardian));

  it("a registration that lands after its client ended is undone at once", async () => {
    const pid = client();
    await registered(pid);
    for (let i = 0; i < 40 && entries().length > 0; i++) await sleep(50);
    assert.deepEqual(entries(), []);
    assert.equal(hasMarker(dir, pid), false);
  });

  it("a running client's entries stay; its end removes what it left, and its marker", async () => {
    const pid = client();
    clientStarted(pid);
    await registered(pid);
    await sleep(300);
    assert.deepEqual(entries(), [pid]);
    assert.equal(hasMarker(dir, pid), true);
    await clientEnded(pid, dir);
    assert.deepEqual(entries(), []);
    assert.equal(hasMarker(dir, pid), false);
  });
});
