// Concurrent simulated nvidia-smi processes on one node: the state lock must serialise them so
// that an 8-slice GPU hands out exactly seven 1g GIs, and gpus.json stays valid throughout.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cleanupNodes, REPO, SimNode } from "./helpers.js";

after(cleanupNodes);

const MAIN = join(REPO, "sim", "src", "nvsmi", "main.ts");

function nvidiaSmi(stateDir: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", MAIN, ...args], {
      cwd: REPO,
      env: { ...process.env, SLICECHECK_SIM_STATE: stateDir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (b: Buffer) => {
      out += b.toString();
    });
    child.stderr.on("data", (b: Buffer) => {
      out += b.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, out }));
  });
}

/** Whether the test runs as root does not matter: grant the mig/config capability. */
function anyUser(n: SimNode): void {
  n.edit((s) => {
    s.nonRootCaps = { migMonitor: true, migConfig: true };
  });
}

describe("simulated nvidia-smi under concurrency", function () {
  this.timeout(120_000);

  it("8 parallel `mig -cgi 19` on an 8-slice GPU: seven GIs, one Insufficient Resources", async () => {
    const n = new SimNode({ product: "A100-80GB", driver: "580.173.02", migEnabled: true });
    anyUser(n);
    const results = await Promise.all(
      Array.from({ length: 8 }, () => nvidiaSmi(n.dir, ["mig", "-cgi", "19"])),
    );
    const ok = results.filter((r) => r.code === 0);
    const refused = results.filter((r) => r.code !== 0);
    assert.equal(ok.length, 7, results.map((r) => r.out).join(""));
    for (const r of ok) {
      assert.match(
        r.out,
        /^Successfully created GPU instance ID +\d+ on GPU {2}0 using profile MIG 1g\.10gb \(ID 19\)\n$/,
      );
    }
    assert.equal(refused.length, 1);
    assert.equal(
      refused[0]?.out,
      "Unable to create a GPU instance on GPU  0 using profile 19: Insufficient Resources\nFailed to create GPU instances: Insufficient Resources\n",
    );
    assert.equal(refused[0]?.code, 255);

    const state = JSON.parse(readFileSync(join(n.dir, "gpus.json"), "utf8")) as {
      gpus: { gis: { id: number; start: number }[] }[];
    };
    const gis = state.gpus[0]?.gis ?? [];
    assert.deepEqual(
      gis.map((g) => g.start).sort((a, b) => a - b),
      [0, 1, 2, 3, 4, 5, 6],
    );
    assert.deepEqual(
      gis.map((g) => g.id).sort((a, b) => a - b),
      [7, 8, 9, 10, 11, 12, 13],
    );
    const reported = ok.map((r) => Number(/ID +(\d+) on/.exec(r.out)?.[1])).sort((a, b) => a - b);
    assert.deepEqual(reported, [7, 8, 9, 10, 11, 12, 13]);
  });

  it("breaks a lock left behind by a process that died", async () => {
    const n = new SimNode({ product: "H100-80GB", driver: "580.173.02", migEnabled: true });
    anyUser(n);
    mkdirSync(join(n.dir, "lock"));
    // A pid far above pid_max is never alive.
    writeFileSync(
      join(n.dir, "lock", "owner"),
      JSON.stringify({ pid: 2 ** 30, at: Date.now() - 60_000 }),
    );
    const r = await nvidiaSmi(n.dir, ["mig", "-cgi", "9"]);
    assert.equal(r.code, 0, r.out);
    assert.equal(n.state().gpus[0]?.gis.length, 1);
  });

  it("answers like a node without a driver when there is no state", async () => {
    const r = await nvidiaSmi(join(REPO, "does-not-exist-slicecheck"), ["-L"]);
    assert.equal(
      r.out,
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n",
    );
    assert.equal(r.code, 9);
  });
});
