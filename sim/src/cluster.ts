// `slicecheck sim up|down|status`: a cluster of simulated GPU nodes, each a real sshd on its own
// 127.0.0.x address. The cluster's files live beside its inventory (`inventory/sim.yaml` →
// `inventory/.sim.d/`), so several clusters (the demo's, each test's) never collide.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { basename, dirname, join, relative, resolve } from "node:path";
import { stringify } from "yaml";
import { isSlicecheckError, SlicecheckError } from "../../src/errors.js";
import { initState } from "./nvsmi/state.js";
import { inPool } from "./pool.js";
import { ensureResident, stopResident } from "./resident/lifecycle.js";
import { startSlurm, stopSlurm } from "./slurmd/cluster.js";
import { MAX_SIM_NODES, type SimNodeSpec } from "./spec.js";
import {
  ensureKey,
  freePort,
  isAlive,
  isOurSshd,
  listenable,
  readPid,
  startSshd,
  stopSshd,
  stopSshds,
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
  // 127.0.0.1 is left alone: it is where real services on this machine listen. Past 240 nodes
  // the next /24 of the loopback (all of 127/8 is local on Linux), skipping 127.0.1.x, which
  // Debian gives the machine's own hostname in /etc/hosts.
  const block = Math.floor(index / 240);
  return `127.0.${block === 0 ? 0 : block + 1}.${10 + (index % 240)}`;
}

/** Nodes started at once by `sim up`: enough to overlap the waits on ssh-keygen and sshd's
 * start-up, few enough not to fork hundreds of processes at one instant on a small machine. */
const START_POOL = 16;

/** What every node of one cluster shares while `sim up` starts it. */
interface UpContext {
  dir: string;
  authorizedKeys: string;
  oldByName: Map<string, SimNodeRecord>;
}

export async function simUp(
  inventory: string,
  spec: SimNodeSpec[],
  o: { slurm?: boolean } = {},
): Promise<SimNodeStatus[]> {
  if (spec.length > MAX_SIM_NODES)
    throw new SlicecheckError("USAGE", `a simulated cluster has at most ${MAX_SIM_NODES} nodes`);
  const invPath = resolve(inventory);
  const dir = clusterDirFor(invPath);
  const authorizedKeys = await prepareClusterDir(dir);
  const old = readCluster(dir);
  const oldByName = new Map((old?.nodes ?? []).map((n) => [n.name, n]));
  const ctx: UpContext = { dir, authorizedKeys, oldByName };
  // Nodes start in parallel (a bounded pool); each has its own address, so their ports and
  // folders never collide.
  const records = await inPool(spec, START_POOL, (n, i) => upNode(ctx, n, i));
  const gone = [...oldByName.values()].filter((g) => !spec.some((n) => n.name === g.name));
  await stopSshds(gone.flatMap((g) => sshdOf(g.dir) ?? []));
  for (const g of gone) rmSync(g.dir, { recursive: true, force: true });
  // Slurm stays up across a reconciling `sim up` without --slurm, as sshd does.
  const slurm = o.slurm ?? old?.slurm ?? false;
  if (slurm) {
    try {
      await startSlurm(
        dir,
        records.map((r) => ({ name: r.name, stateDir: join(r.dir, "state") })),
      );
    } catch (e) {
      // What did start (sshds, munged, slurmctld, some slurmd) stays findable: `sim down`
      // stops it, as it does a cluster that came up.
      writeClusterFiles(invPath, dir, records, slurm);
      throw e;
    }
    for (const r of records) installSlurmTools(join(r.dir, "bin"), dir);
  }
  writeClusterFiles(invPath, dir, records, slurm);
  await ensureResident(dir);
  return simStatus(invPath);
}

/** The cluster's folder, its client key and the authorized_keys every node shares. */
async function prepareClusterDir(dir: string): Promise<string> {
  // Traversable, not listable: slurmctld, running as `slurm`, reaches its folder under it; the
  // keys and node folders below stay 0600/0700.
  mkdirSync(dir, { recursive: true, mode: 0o711 });
  mkdirSync(join(dir, "nodes"), { recursive: true, mode: 0o700 });
  const clientKey = join(dir, "id_ed25519");
  await ensureKey(clientKey, "slicecheck-sim-client");
  const authorizedKeys = join(dir, "authorized_keys");
  writeFileSync(authorizedKeys, readFileSync(`${clientKey}.pub`), { mode: 0o600 });
  return authorizedKeys;
}

/** A node's running sshd as stopSshds takes it, when its pid file names one. */
function sshdOf(nodeDir: string): { pid: number; config: string } | null {
  const pid = readPid(join(nodeDir, "sshd.pid"));
  return pid ? { pid, config: join(nodeDir, "sshd_config") } : null;
}

/** One node up: kept as it is when it already runs as the spec says, else (re)started. */
async function upNode(ctx: UpContext, n: SimNodeSpec, i: number): Promise<SimNodeRecord> {
  const nodeDir = join(ctx.dir, "nodes", n.name);
  const host = nodeAddress(i);
  const prev = ctx.oldByName.get(n.name);
  const config = join(nodeDir, "sshd_config");
  const pid = readPid(join(nodeDir, "sshd.pid"));
  const same =
    prev &&
    prev.host === host &&
    prev.gpu === n.gpu &&
    prev.gpus === n.gpus &&
    prev.driver === n.driver &&
    (prev.loginDelayS ?? 0) === (n.loginDelayS ?? 0);
  if (same && pid && isAlive(pid) && isOurSshd(pid, config)) {
    installTools(join(nodeDir, "bin"), ctx.dir);
    return prev;
  }
  if (pid) await stopSshd(pid, config);
  mkdirSync(nodeDir, { recursive: true, mode: 0o700 });
  await ensureKey(join(nodeDir, "ssh_host_ed25519_key"), `slicecheck-sim-${n.name}`);
  const stateDir = join(nodeDir, "state");
  if (!same || !existsSync(stateDir)) {
    rmSync(stateDir, { recursive: true, force: true });
    initState(stateDir, { node: n.name, product: n.gpu, gpus: n.gpus, driver: n.driver });
  }
  installTools(join(nodeDir, "bin"), ctx.dir);
  const keep = prev && prev.host === host && (await listenable(host, prev.port)) ? prev.port : null;
  const port = await startOnFreePort(ctx, { nodeDir, host, stateDir, keep }, n.loginDelayS);
  return { ...n, host, port, dir: nodeDir };
}

/**
 * Starts the node's sshd on a port free on its address (its last one when still free). A port
 * found free can be taken by another process before sshd binds it (other clusters, outgoing
 * connections): then a fresh one is picked, a few times over.
 */
async function startOnFreePort(
  ctx: UpContext,
  at: { nodeDir: string; host: string; stateDir: string; keep: number | null },
  loginDelayS: number | undefined,
): Promise<number> {
  const { nodeDir, host, stateDir, keep } = at;
  for (let attempt = 0; ; attempt++) {
    const port = attempt === 0 && keep !== null ? keep : await freePort(host);
    const cfg = writeSshdConfig({
      dir: nodeDir,
      host,
      port,
      binDir: join(nodeDir, "bin"),
      stateDir,
      authorizedKeys: ctx.authorizedKeys,
      ...(loginDelayS ? { loginDelayS } : {}),
    });
    try {
      await startSshd(nodeDir, cfg);
      return port;
    } catch (e) {
      const taken = isSlicecheckError(e) && e.context.portTaken === true;
      if (!taken || attempt >= 3) throw e;
    }
  }
}

/** known_hosts, cluster.json and the inventory, once every node is up. */
function writeClusterFiles(
  invPath: string,
  dir: string,
  records: SimNodeRecord[],
  slurm: boolean,
): void {
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
  // All at once: one /proc scan and one wait, however many nodes.
  const stopped = await stopSshds((c?.nodes ?? []).flatMap((n) => sshdOf(n.dir) ?? []));
  for (const n of c?.nodes ?? []) rmSync(join(n.dir, "sshd.pid"), { force: true });
  if (c?.slurm) await stopSlurm(dir);
  await stopResident(dir);
  return stopped;
}
