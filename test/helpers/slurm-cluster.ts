// A simulated cluster with a real Slurm (`sim up --slurm`) for one describe block.
import { chmodSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { clusterDirFor, simDown, simUp } from "../../sim/src/cluster.js";
import { slurmDirOf } from "../../sim/src/slurmd/cluster.js";
import { parseNodes, type SlurmNodeInfo } from "../../src/verdicts/slurm.js";
import { cli, inFlightReport } from "./cli.js";
import { removeWhenQuiet } from "./cluster.js";

/** The tail of the cluster's slurmctld log and whether slurmctld still runs: what a failed
 * test leaves to tell a Slurm that stopped answering from a run that stopped waiting. */
function slurmReport(inventoryPath: string): string {
  const dir = slurmDirOf(clusterDirFor(inventoryPath));
  const read = (f: string) => (existsSync(join(dir, f)) ? readFileSync(join(dir, f), "utf8") : "");
  const pid = Number(read("slurmctld.pid").trim());
  let alive = false;
  try {
    alive = pid > 0 && process.kill(pid, 0);
  } catch {}
  const tail = read("slurmctld.log").trimEnd().split("\n").slice(-25).join("\n      ");
  return `    slurmctld (pid ${pid || "?"}) ${alive ? "runs" : "is gone"}; its log ends:\n      ${tail}`;
}

export interface SlurmTestCluster {
  dir: string;
  inventoryPath: string;
  /** A shell command on one node (its real Slurm commands included). */
  sh(node: string, cmd: string): Promise<string>;
}

export function useSlurmCluster(nodes: number): SlurmTestCluster {
  const handle = {} as SlurmTestCluster;
  before(async function () {
    this.timeout(120_000);
    const dir = mkdtempSync(join(tmpdir(), "slicecheck-slurm-"));
    // As a real controller's folders are: reachable by the `slurm` user slurmctld runs as.
    chmodSync(dir, 0o711);
    const inventoryPath = join(dir, "sim.yaml");
    const spec = Array.from({ length: nodes }, (_, i) => ({
      name: `sim${String(i + 1).padStart(2, "0")}`,
      gpu: "H100-80GB",
      gpus: 1,
      driver: "580.65.06",
    }));
    await simUp(inventoryPath, spec, { slurm: true });
    Object.assign(handle, {
      dir,
      inventoryPath,
      async sh(node: string, cmd: string) {
        const r = await cli("exec", "-i", inventoryPath, "--nodes", node, "--", cmd);
        if (r.code !== 0)
          throw new Error(`${node}: ${cmd}: exit ${r.code}: ${r.stdout}${r.stderr}`);
        return r.stdout.replace(new RegExp(`^${node}: `, "gm"), "");
      },
    });
  });
  after(async function () {
    this.timeout(60_000);
    if (!handle.inventoryPath) return;
    await simDown(handle.inventoryPath);
    await removeWhenQuiet(handle.dir);
  });
  afterEach(function () {
    if (this.currentTest?.state !== "failed" || !handle.inventoryPath) return;
    console.log(`${inFlightReport()}\n${slurmReport(handle.inventoryPath)}`);
  });
  return handle;
}

/** Slurm's view of one node. A resumed node shows NOT_RESPONDING until slurmctld's next ping
 * (Slurm sets the flag on resume to make the node register again): read once that has passed. */
export async function slurmNodeOf(c: SlurmTestCluster, name: string): Promise<SlurmNodeInfo> {
  for (let i = 0; ; i++) {
    const n = parseNodes(await c.sh("sim01", `scontrol show node -o ${name}`))[0];
    if (!n) throw new Error(`Slurm does not know ${name}`);
    if (!n.state.includes("NOT_RESPONDING") || i > 50) return n;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** drain → apply the layout → resume, as an admin does it under Slurm. */
export async function applyUnderSlurm(
  c: SlurmTestCluster,
  node: string,
  config: string,
): Promise<void> {
  await c.sh(node, `scontrol update nodename=${node} state=drain reason=layout`);
  const r = await cli(
    "apply",
    "-i",
    c.inventoryPath,
    "--nodes",
    node,
    "fixtures/layouts/default.yaml",
    "-c",
    config,
    "--journal-dir",
    join(c.dir, "journal"),
  );
  if (r.code !== 0) throw new Error(`apply ${config} on ${node}: exit ${r.code}: ${r.stderr}`);
  await c.sh(node, `scontrol update nodename=${node} state=resume`);
}
