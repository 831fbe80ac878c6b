import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isSlicecheckError } from "../../src/errors.js";
import { loadInventory } from "../../src/inventory/load.js";
import { tempDir } from "../../test/helpers/tmp.js";
import { clusterDirFor, nodeAddress, simDown, simStatus, simUp } from "../src/cluster.js";
import { PID_FILE } from "../src/resident/files.js";
import { buildSimSpec, MAX_SIM_NODES } from "../src/spec.js";
import { isAlive, readPid } from "../src/sshd.js";

describe("simulated cluster lifecycle", function () {
  this.timeout(60_000);
  const dir = tempDir("simlc");
  const inv = join(dir, "sim.yaml");
  after(async () => {
    await simDown(inv);
  });

  it("starts nodes on their own 127.0.0.x addresses and writes a usable inventory", async () => {
    const st = await simUp(
      inv,
      buildSimSpec({ nodes: 3, gpu: "A100-80GB", gpusPerNode: 2, driver: "535.183.01" }),
    );
    assert.equal(st.length, 3);
    assert.ok(st.every((s) => s.running && s.pid !== null));
    assert.deepEqual(new Set(st.map((s) => s.host)).size, 3);
    const i = loadInventory(inv, { sshConfig: null });
    assert.deepEqual(
      i.nodes.map((n) => n.name),
      ["sim01", "sim02", "sim03"],
    );
    assert.deepEqual(i.nodes[0]!.tags, ["sim", "a100-80gb"]);
    const kh = readFileSync(i.nodes[0]!.knownHosts, "utf8").trim().split("\n");
    assert.equal(kh.length, 3);
    assert.ok(kh.every((l, k) => l.startsWith(`[${st[k]!.host}]:${st[k]!.port} ssh-ed25519 `)));
  });

  it("is idempotent: a second `up` keeps the same processes and ports", async () => {
    const before = simStatus(inv);
    const again = await simUp(
      inv,
      buildSimSpec({ nodes: 3, gpu: "A100-80GB", gpusPerNode: 2, driver: "535.183.01" }),
    );
    assert.deepEqual(again, before);
  });

  it("reconciles: a changed spec restarts what changed and removes what is gone", async () => {
    const before = simStatus(inv);
    const after = await simUp(
      inv,
      buildSimSpec({ nodes: 2, gpu: "A100-80GB", gpusPerNode: 2, driver: "535.183.01" }),
    );
    assert.deepEqual(after, before.slice(0, 2));
    assert.equal(isAlive(before[2]!.pid!), false, "the dropped node's sshd was stopped");
  });

  it("`down` stops only its own sshd processes, by pid", async () => {
    const bystander = spawn("sleep", ["60"], { stdio: "ignore" });
    const pids = simStatus(inv).map((s) => s.pid!);
    // With the cluster's resident simulator (sim/src/resident), which `up` started.
    const resident = readPid(join(clusterDirFor(inv), PID_FILE));
    assert.ok(resident && isAlive(resident), "`up` started the resident simulator");
    assert.equal(await simDown(inv), 2);
    for (const p of [...pids, resident]) assert.equal(isAlive(p), false);
    assert.equal(isAlive(bystander.pid!), true, "an unrelated process is untouched");
    bystander.kill();
    assert.ok(simStatus(inv).every((s) => !s.running));
    assert.equal(await simDown(inv), 0, "a second down finds nothing to stop");
  });

  it("gives every node of the largest cluster its own loopback address, never .1 nor 127.0.1.x", () => {
    const all = Array.from({ length: MAX_SIM_NODES }, (_, i) => nodeAddress(i));
    assert.equal(new Set(all).size, MAX_SIM_NODES);
    assert.equal(all[0], "127.0.0.10", "the first 240 keep the addresses tests and docs name");
    assert.equal(all[239], "127.0.0.249");
    assert.equal(all[240], "127.0.2.10");
    for (const a of all) {
      const [x, y, z, w] = a.split(".").map(Number);
      assert.ok(x === 127 && y === 0 && z !== 1 && w! >= 10 && w! < 250, a);
    }
  });

  it("reads a spec file for mixed clusters and refuses unknown products", () => {
    const spec = join(dir, "spec.yaml");
    writeFileSync(
      spec,
      "nodes:\n  - {gpu: A100-80GB, driver: 535.183.01, gpus: 2}\n  - {gpu: NVIDIA H100 80GB HBM3, count: 2}\n",
    );
    const s = buildSimSpec({ spec });
    assert.deepEqual(
      s.map((n) => [n.name, n.gpu, n.gpus]),
      [
        ["sim01", "A100-80GB", 2],
        ["sim02", "H100-80GB", 1],
        ["sim03", "H100-80GB", 1],
      ],
    );
    writeFileSync(spec, "nodes:\n  - {gpu: RTX-4090}\n");
    assert.throws(
      () => buildSimSpec({ spec }),
      (e: unknown) =>
        isSlicecheckError(e) && /nodes\.0\.gpu: unknown GPU product 'RTX-4090'/.test(e.message),
    );
  });
});
