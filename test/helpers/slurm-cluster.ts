// A simulated cluster with a real Slurm (`sim up --slurm`) for one describe block.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { loadavg, tmpdir, userInfo } from "node:os";
import { dirname, join } from "node:path";
import { clusterDirFor, simDown, simUp } from "../../sim/src/cluster.js";
import { confPath, slurmDirOf } from "../../sim/src/slurmd/cluster.js";
import { isAlive, readPid } from "../../sim/src/sshd.js";
import { parseNodes, type SlurmNodeInfo } from "../../src/verdicts/slurm.js";
import { cli, inFlightReport, quietCli } from "./cli.js";
import { removeWhenQuiet } from "./cluster.js";
import { leaveEvidence } from "./evidence.js";

const tailOf = (file: string, n: number) =>
  existsSync(file)
    ? readFileSync(file, "utf8").trimEnd().split("\n").slice(-n).join("\n      ")
    : "(no file)";

/** The tails of the newest via-slurm task logs (<out>/<node>/job.log): what each task of the
 * run in flight was doing when the test gave up on it. */
function taskLogs(dir: string, newest = 4): string[] {
  const logs = readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) => {
      try {
        return readdirSync(join(dir, d.name)).map((n) => join(dir, d.name, n, "job.log"));
      } catch {
        return []; // a folder this user may not list
      }
    })
    .filter((f) => existsSync(f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)
    .slice(0, newest);
  return logs.map((f) => `    ${f} ends:\n      ${tailOf(f, 8)}`);
}

/** Whether slurmctld still runs, the tails of its log, of each slurmd's and of munged's, and the
 * machine's load: what a failed test leaves to tell a Slurm that stopped answering from a run
 * that stopped waiting. */
function slurmReport(inventoryPath: string): string {
  const dir = slurmDirOf(clusterDirFor(inventoryPath));
  const pid = readPid(join(dir, "slurmctld.pid"));
  const alive = pid !== null && isAlive(pid);
  const slurmd = readdirSync(dir)
    .filter((f) => /^slurmd-.*\.log$/.test(f))
    .map((f) => `    ${f} ends:\n      ${tailOf(join(dir, f), 4)}`);
  return [
    ...taskLogs(dirname(inventoryPath)),
    `    load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
    `    slurmctld (pid ${pid || "?"}) ${alive ? "runs" : "is gone"}; its log ends:`,
    `      ${tailOf(join(dir, "slurmctld.log"), 25)}`,
    ...slurmd,
    `    munged.log ends:\n      ${tailOf(join(dir, "munge", "munged.log"), 4)}`,
  ].join("\n");
}

/** After a failed test: its CLI calls still running (a timeout does not stop them) are given a
 * minute to end, and the cluster's jobs are cancelled, so that the next test starts on a quiet
 * cluster rather than failing on what this one left. */
async function quieten(inventoryPath: string): Promise<void> {
  const conf = confPath(slurmDirOf(clusterDirFor(inventoryPath)));
  const scancel = () =>
    spawnSync("/usr/bin/scancel", ["--user", userInfo().username], {
      env: { ...process.env, SLURM_CONF: conf },
      timeout: 20_000,
    });
  scancel();
  if (!(await quietCli(60_000)))
    console.log(`    still running after a minute:\n${inFlightReport(30, { again: true })}`);
  scancel();
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
    // Known before simUp: a cluster that failed to come up is still taken down after.
    Object.assign(handle, { dir, inventoryPath });
    await simUp(inventoryPath, spec, { slurm: true });
    Object.assign(handle, {
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
  afterEach(async function () {
    const t = this.currentTest;
    if (t?.state !== "failed" || !handle.inventoryPath) return;
    this.timeout(120_000);
    leaveEvidence(t.fullTitle(), `${inFlightReport()}\n${slurmReport(handle.inventoryPath)}`);
    await quieten(handle.inventoryPath);
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
