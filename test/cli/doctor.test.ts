import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";

describe("slicecheck doctor (real sshd, simulated GPUs)", function () {
  this.timeout(90_000);
  const c = useCluster([
    { gpu: "A100-80GB", driver: "535.183.01", gpus: 2 },
    { gpu: "H200", driver: "580.173.02" },
  ]);

  it("reports login, driver and every GPU's MIG mode per node", async () => {
    const r = await cli("doctor", "-i", c.inventoryPath, "--json");
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const nodes = JSON.parse(r.stdout).nodes as {
      name: string;
      reachable: boolean;
      hostKey: string;
      driver: string;
      gpus: { index: number; name: string; migCurrent: string; migCapable: boolean }[];
      problems: string[];
    }[];
    assert.deepEqual(
      nodes.map((n) => [n.name, n.reachable, n.hostKey, n.driver, n.gpus.length, n.problems]),
      [
        ["sim01", true, "ok", "535.183.01", 2, []],
        ["sim02", true, "ok", "580.173.02", 1, []],
      ],
    );
    assert.equal(nodes[0]!.gpus[1]!.name, "NVIDIA A100-SXM4-80GB");
    assert.equal(nodes[1]!.gpus[0]!.name, "NVIDIA H200");
    assert.ok(nodes.every((n) => n.gpus.every((g) => g.migCapable && g.migCurrent === "Disabled")));
  });

  it("flags a node whose host key changed, with exit 2, and still checks the others", async () => {
    const kh = readFileSync(c.inventory.nodes[0]!.knownHosts, "utf8").split("\n");
    const swapped = join(c.dir, "swapped_known_hosts");
    // Give sim01's address sim02's key: exactly what a man-in-the-middle would look like.
    const [a, b] = [kh[0]!.split(" "), kh[1]!.split(" ")];
    writeFileSync(swapped, `${a[0]} ${b[1]} ${b[2]}\n${kh[1]}\n`);
    const inv = join(c.dir, "swapped.yaml");
    writeFileSync(
      inv,
      readFileSync(c.inventoryPath, "utf8").replace(/known_hosts: .*/, `known_hosts: ${swapped}`),
    );
    const r = await cli("doctor", "-i", inv);
    assert.equal(r.code, 2);
    assert.match(r.stdout, /^sim01 +FAIL +- +changed/m);
    // SSH with its connect time, the login shell's time, the host key, user, sudo, driver…
    assert.match(r.stdout, /^sim02 +ok \d+ ms +\d+ ms +ok +\S+ .* 580\.173\.02/m);
    assert.match(r.stdout, /sim01: problem: .*HOST KEY CHANGED/);
  });
});
