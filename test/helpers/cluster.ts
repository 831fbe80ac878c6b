// A real simulated cluster (real sshd per node) in a temporary folder, for end-to-end tests.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { simDown, simUp } from "../../sim/src/cluster.js";
import type { SimNodeSpec } from "../../sim/src/spec.js";
import { loadInventory } from "../../src/inventory/load.js";
import type { Inventory } from "../../src/inventory/types.js";

export { taggedPids, waitFor } from "./procs.js";

export interface TestCluster {
  dir: string;
  inventoryPath: string;
  inventory: Inventory;
  stop(): Promise<void>;
}

/** Removes a stopped cluster's folder. Retried for up to 15 s: the workloads of a run whose
 * controller was killed are stopped by their watchdog as sshd goes, and each still leaves the
 * process list under the state lock (a Node process each: on 2 loaded cores, seconds for 7);
 * 5 tries in 1 s once met a folder still being written (ENOTEMPTY, CI of 5 December 2026). */
export async function removeWhenQuiet(dir: string): Promise<void> {
  for (let tries = 0; ; tries++) {
    try {
      rmSync(dir, { recursive: true, force: true });
      return;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? "";
      if (tries >= 60 || !["ENOTEMPTY", "EBUSY"].includes(code)) throw e;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

export async function startCluster(
  nodes: Partial<SimNodeSpec>[] | number = 1,
): Promise<TestCluster> {
  const dir = mkdtempSync(join(tmpdir(), "slicecheck-test-"));
  const inventoryPath = join(dir, "sim.yaml");
  const list: Partial<SimNodeSpec>[] =
    typeof nodes === "number" ? Array.from({ length: nodes }, () => ({})) : nodes;
  const spec: SimNodeSpec[] = list.map((n, i) => ({
    name: n.name ?? `sim${String(i + 1).padStart(2, "0")}`,
    gpu: n.gpu ?? "H100-80GB",
    gpus: n.gpus ?? 1,
    driver: n.driver ?? "580.65.06",
    ...(n.loginDelayS ? { loginDelayS: n.loginDelayS } : {}),
  }));
  await simUp(inventoryPath, spec);
  return {
    dir,
    inventoryPath,
    inventory: loadInventory(inventoryPath, { sshConfig: null }),
    async stop() {
      await simDown(inventoryPath);
      await removeWhenQuiet(dir);
    },
  };
}

/** TCP connections the cluster's sshd processes have accepted so far (their VERBOSE logs). */
export function sshdConnections(c: TestCluster): number {
  return sshdLogLines(c, /Connection from \S+ port \d+ on /);
}

/** Logins sshd accepted on the cluster's nodes (`Accepted publickey`): a handshake the
 * transport retried after a timeout (a loaded machine) is a connection but never a login. */
export function sshdLogins(c: TestCluster): number {
  return sshdLogLines(c, /Accepted publickey for /);
}

/** Channels sshd opened on the cluster's nodes for commands (`Starting session: command`):
 * every remote command, the lock's and a supervisor's included. */
export function sshdSessions(c: TestCluster): number {
  return sshdLogLines(c, /Starting session: command /);
}

function sshdLogLines(c: TestCluster, re: RegExp): number {
  let n = 0;
  for (const node of readdirSync(join(c.dir, ".sim.d", "nodes"))) {
    let log = "";
    try {
      log = readFileSync(join(c.dir, ".sim.d", "nodes", node, "sshd.log"), "utf8");
    } catch {
      /* no connection yet: sshd has written nothing */
    }
    n += log.split("\n").filter((l) => re.test(l)).length;
  }
  return n;
}

/** A cluster for one describe block: started in `before`, stopped in `after`. The returned
 * object is filled in when `before` runs, so tests use it like the cluster itself. */
export function useCluster(nodes: Partial<SimNodeSpec>[] | number = 1): TestCluster {
  const handle = {} as TestCluster;
  before(async () => {
    Object.assign(handle, await startCluster(nodes));
  });
  after(async () => {
    await handle.stop?.();
  });
  return handle;
}
