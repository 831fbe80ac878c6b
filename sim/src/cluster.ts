// `slicecheck sim up|down|status`: a cluster of simulated GPU nodes, each a real sshd on its own
// 127.0.0.x address. The cluster's files live beside its inventory (`inventory/sim.yaml` →
// `inventory/.sim.d/`), so several clusters (the demo's, each test's) never collide.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import { stringify } from "yaml";
import { SlicecheckError } from "../../src/errors.js";
import { initState } from "./nvsmi/state.js";
import { startSlurm, stopSlurm } from "./slurmd/cluster.js";
import type { SimNodeSpec } from "./spec.js";
import {
  ensureKey,
  freePort,
  isAlive,
  isOurSshd,
  readPid,
  startSshd,
  stopSshd,
  writeSshdConfig,
} from "./sshd.js";
import { installSlurmTools, installTools } from "./tools.js";

export const DEFAULT_SIM_INVENTORY = "inventory/sim.yaml";

export interface SimNodeRecord extends SimNodeSpec {
  host: string;
  port: number;
  dir: string;
}

// What `sim status` prints is declared once, by the CLI's door to the simulator.
import type { SimNodeStatus } from "../../src/cli/sim-loader.js";

export type { SimNodeStatus };

interface ClusterFile {
  version: 1;
  nodes: SimNodeRecord[];
  /** A real Slurm runs for the nodes (`sim up --slurm`). */
  slurm?: boolean;
}

export function clusterDirFor(inventory: string): string {
  const abs = resolve(inventory);
  return join(dirname(abs), `.${basename(abs).replace(/\.ya?ml$/, "")}.d`);
}

function readCluster(dir: string): ClusterFile | null {
  const f = join(dir, "cluster.json");
  if (!existsSync(f)) return null;
  return JSON.parse(readFileSync(f, "utf8")) as ClusterFile;
}

export function nodeAddress(index: number): string {
  // 127.0.0.1 is left alone: it is where real services on this machine listen.
  return `127.0.0.${10 + index}`;
}

export async function simUp(
  inventory: string,
  spec: SimNodeSpec[],
  o: { slurm?: boolean } = {},
): Promise<SimNodeStatus[]> {
  if (spec.length > 200)
    throw new SlicecheckError("USAGE", "a simulated cluster has at most 200 nodes");
  const invPath = resolve(inventory);
  const dir = clusterDirFor(invPath);
  // Traversable, not listable: slurmctld, running as `slurm`, reaches its folder under it; the
  // keys and node folders below stay 0600/0700.
  mkdirSync(dir, { recursive: true, mode: 0o711 });
  mkdirSync(join(dir, "nodes"), { recursive: true, mode: 0o700 });
  const clientKey = join(dir, "id_ed25519");
  ensureKey(clientKey, "slicecheck-sim-client");
  const authorizedKeys = join(dir, "authorized_keys");
  writeFileSync(authorizedKeys, readFileSync(`${clientKey}.pub`), { mode: 0o600 });

  const old = readCluster(dir);
  const oldByName = new Map((old?.nodes ?? []).map((n) => [n.name, n]));
  const records: SimNodeRecord[] = [];
  for (const [i, n] of spec.entries()) {
    const nodeDir = join(dir, "nodes", n.name);
    const host = nodeAddress(i);
    const prev = oldByName.get(n.name);
    oldByName.delete(n.name);
    const config = join(nodeDir, "sshd_config");
    const pid = readPid(join(nodeDir, "sshd.pid"));
    const same =
      prev &&
      prev.host === host &&
      prev.gpu === n.gpu &&
      prev.gpus === n.gpus &&
      prev.driver === n.driver;
    if (same && pid && isAlive(pid) && isOurSshd(pid, config)) {
      installTools(join(nodeDir, "bin"));
      records.push(prev);
      continue;
    }
    if (pid) await stopSshd(pid, config);
    mkdirSync(nodeDir, { recursive: true, mode: 0o700 });
    ensureKey(join(nodeDir, "ssh_host_ed25519_key"), `slicecheck-sim-${n.name}`);
    const port =
      prev && prev.host === host && (await portFree(host, prev.port))
        ? prev.port
        : await freePort(host);
    const stateDir = join(nodeDir, "state");
    if (!same || !existsSync(stateDir)) {
      rmSync(stateDir, { recursive: true, force: true });
      initState(stateDir, { node: n.name, product: n.gpu, gpus: n.gpus, driver: n.driver });
    }
    installTools(join(nodeDir, "bin"));
    const binDir = join(nodeDir, "bin");
    const login = n.loginDelayS ? { loginDelayS: n.loginDelayS } : {};
    startSshd(
      nodeDir,
      writeSshdConfig({ dir: nodeDir, host, port, binDir, stateDir, authorizedKeys, ...login }),
    );
    records.push({ ...n, host, port, dir: nodeDir });
  }
  for (const gone of oldByName.values()) {
    const pid = readPid(join(gone.dir, "sshd.pid"));
    if (pid) await stopSshd(pid, join(gone.dir, "sshd_config"));
    rmSync(gone.dir, { recursive: true, force: true });
  }
  // Slurm stays up across a reconciling `sim up` without --slurm, as sshd does.
  const slurm = o.slurm ?? old?.slurm ?? false;
  if (slurm) {
    await startSlurm(
      dir,
      records.map((r) => ({ name: r.name, stateDir: join(r.dir, "state") })),
    );
    for (const r of records) installSlurmTools(join(r.dir, "bin"), dir);
  }
  const knownHosts = records
    .map((r) => {
      const pub = readFileSync(join(r.dir, "ssh_host_ed25519_key.pub"), "utf8").trim().split(/\s+/);
      return `[${r.host}]:${r.port} ${pub[0]} ${pub[1]}`;
    })
    .join("\n");
  writeFileSync(join(dir, "known_hosts"), `${knownHosts}\n`);
  writeFileSync(
    join(dir, "cluster.json"),
    `${JSON.stringify({ version: 1, nodes: records, slurm } satisfies ClusterFile, null, 2)}\n`,
  );
  writeInventory(invPath, dir, records, slurm);
  return simStatus(invPath);
}

async function portFree(host: string, port: number): Promise<boolean> {
  const { createServer } = await import("node:net");
  return new Promise((r) => {
    const s = createServer();
    s.once("error", () => r(false));
    s.listen(port, host, () => s.close(() => r(true)));
  });
}

function writeInventory(
  invPath: string,
  dir: string,
  records: SimNodeRecord[],
  slurm: boolean,
): void {
  const rel = relative(dirname(invPath), dir) || ".";
  const byProduct: Record<string, string[]> = {};
  for (const r of records) {
    const key = r.gpu.toLowerCase();
    byProduct[key] = [...(byProduct[key] ?? []), r.name];
  }
  const doc = {
    defaults: {
      user: currentUser(),
      identity_file: `${rel}/id_ed25519`,
      known_hosts: `${rel}/known_hosts`,
      host_key_policy: "strict",
      ssh_config: "none",
    },
    nodes: Object.fromEntries(
      records.map((r) => [
        r.name,
        {
          host: r.host,
          port: r.port,
          tags: ["sim", r.gpu.toLowerCase()],
          // Under Slurm, the maintenance interlocks (drained?) apply to the node.
          ...(slurm ? { slurm_node: r.name } : {}),
        },
      ]),
    ),
    groups: { sim: records.map((r) => r.name), ...byProduct },
  };
  mkdirSync(dirname(invPath), { recursive: true });
  writeFileSync(
    invPath,
    `# Written by \`slicecheck sim up\`: a simulated cluster on this machine (${records.length} nodes).\n# Stop it with \`slicecheck sim down --inventory ${relative(process.cwd(), invPath)}\`.\n${stringify(doc)}`,
  );
}

function currentUser(): string {
  try {
    return userInfo().username;
  } catch {
    return "root";
  }
}

export function simStatus(inventory: string): SimNodeStatus[] {
  const dir = clusterDirFor(inventory);
  const c = readCluster(dir);
  if (!c) return [];
  return c.nodes.map((n) => {
    const pid = readPid(join(n.dir, "sshd.pid"));
    const running = pid !== null && isAlive(pid) && isOurSshd(pid, join(n.dir, "sshd_config"));
    return {
      name: n.name,
      host: n.host,
      port: n.port,
      gpu: n.gpu,
      gpus: n.gpus,
      driver: n.driver,
      pid: running ? pid : null,
      running,
    };
  });
}

export function simNodeRecord(inventory: string, node: string): SimNodeRecord {
  const c = readCluster(clusterDirFor(inventory));
  const r = c?.nodes.find((n) => n.name === node);
  if (!r)
    throw new SlicecheckError(
      "USAGE",
      `no simulated node '${node}' in ${inventory}; run \`slicecheck sim status\``,
    );
  return r;
}

/**
 * Records a node's new driver after `sim upgrade-driver`, so that `sim status` tells the truth
 * and a later `sim up` with the old spec re-creates the node as the spec says.
 */
export function recordNodeDriver(inventory: string, node: string, driver: string): void {
  const dir = clusterDirFor(inventory);
  const c = readCluster(dir);
  if (!c) return;
  for (const n of c.nodes) if (n.name === node) n.driver = driver;
  writeFileSync(join(dir, "cluster.json"), `${JSON.stringify(c, null, 2)}\n`);
}

export async function simDown(inventory: string): Promise<number> {
  const dir = clusterDirFor(inventory);
  const c = readCluster(dir);
  let stopped = 0;
  for (const n of c?.nodes ?? []) {
    const pidFile = join(n.dir, "sshd.pid");
    const pid = readPid(pidFile);
    if (pid && (await stopSshd(pid, join(n.dir, "sshd_config")))) stopped++;
    rmSync(pidFile, { force: true });
  }
  if (c?.slurm) await stopSlurm(dir);
  return stopped;
}
