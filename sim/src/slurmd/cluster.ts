// `sim up --slurm`: munge, slurmctld and one slurmd per simulated node, all on this machine,
// configured in <cluster>/.sim.d/slurm/. syncSlurm() regenerates slurm.conf and gres.conf from
// the nodes' MIG state and restarts what changed; the nodes' Slurm commands call it first (see
// wrapper.ts), the way a site's config management regenerates gres.conf after a MIG change.
// A node marked stale keeps the gres it had: the planted fault the slurm suite must catch.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { SlicecheckError } from "../../../src/errors.js";
import { quote } from "../../../src/util/shell.js";
import { readState } from "../nvsmi/state.js";
import { freeServicePort, simNodeEnv } from "../sshd.js";
import { builtEntry, FENCE_SCRIPT } from "../tools.js";
import {
  cgroupConf,
  deviceFile,
  devicesOf,
  gresConf,
  gresSummary,
  type SlurmNodeConf,
  slurmConf,
} from "./conf.js";
import { EPILOG_HANG_S, writeEpilog } from "./epilog.js";
import { syncUnderWay, withLock } from "./lock.js";
import { confPath, slurmDirOf } from "./paths.js";
import {
  controllerUser,
  mknodNull,
  requireSlurm,
  running,
  SLURM_BIN,
  startDaemon,
  stopDaemon,
  until,
} from "./procs.js";

export interface SlurmClusterFile {
  controllerPort: number;
  nodes: { name: string; port: number; stateDir: string }[];
  /** Nodes whose gres is no longer regenerated (`sim fault NODE slurm-stale-gres`). */
  stale: string[];
  /** Nodes also listed in the whole-card partition (`sim fault NODE slurm-mixed-partition`). */
  mixed?: string[];
  /** Nodes whose MIG instances are gres `mig:<profile>` (`sim fault NODE slurm-mig-naming`). */
  migNamed?: string[];
  /** Nodes that planted `slurm-unconstrained`: cgroup.conf says ConstrainDevices=no while any
   * does (one cgroup.conf for the cluster, as slurm.conf). */
  unconstrained?: string[];
  /** Nodes whose Epilog hangs (`sim fault NODE slurm-epilog-hang`, epilog.ts). */
  epilogHang?: string[];
  /** What slurm.conf and gres.conf were last written from. */
  applied: SlurmNodeConf[];
}

export { confPath, slurmDirOf } from "./paths.js";

const file = (dir: string) => join(dir, "slurm-cluster.json");
// munged insists that every folder above its socket is reachable by all users, and the
// cluster folder is private (it holds the SSH keys): the socket lives in a /tmp folder of its
// own, named after the cluster.
const mungeSocket = (dir: string) =>
  join(
    tmpdir(),
    `slicecheck-munge-${createHash("sha256").update(dir).digest("hex").slice(0, 12)}`,
    "munge.socket",
  );
const env = (dir: string) => ({ SLURM_CONF: confPath(dir) });

export function readSlurmCluster(dir: string): SlurmClusterFile | null {
  return existsSync(file(dir))
    ? (JSON.parse(readFileSync(file(dir), "utf8")) as SlurmClusterFile)
    : null;
}

function save(dir: string, c: SlurmClusterFile): void {
  // Whole or not at all: inSync reads it without the lock.
  writeFileSync(`${file(dir)}.tmp`, `${JSON.stringify(c, null, 2)}\n`);
  renameSync(`${file(dir)}.tmp`, file(dir));
}

const names = (c: SlurmClusterFile) => c.nodes.map((n) => n.name);
const same = (a: SlurmNodeConf[], b: SlurmNodeConf[]) => JSON.stringify(a) === JSON.stringify(b);

/** Whether the config follows the nodes' MIG state; a file caught mid-write reads as not. */
function inSync(dir: string): boolean {
  try {
    const c = readSlurmCluster(dir);
    return c !== null && same(desired(c), c.applied);
  } catch {
    return false;
  }
}

function desired(c: SlurmClusterFile): SlurmNodeConf[] {
  return c.nodes.map((n) => {
    const before = c.applied.find((a) => a.name === n.name);
    if (before && c.stale.includes(n.name)) return before;
    const devices = devicesOf(readState(n.stateDir));
    return c.migNamed?.includes(n.name)
      ? { name: n.name, port: n.port, devices, migName: "mig" as const }
      : { name: n.name, port: n.port, devices };
  });
}

function writeConf(dir: string, c: SlurmClusterFile, nodes: SlurmNodeConf[]): void {
  const p = {
    dir,
    controllerPort: c.controllerPort,
    mungeSocket: mungeSocket(dir),
    slurmUser: controllerUser(dir),
  };
  for (const n of nodes) {
    const devDir = join(dir, "dev", n.name);
    rmSync(devDir, { recursive: true, force: true });
    mkdirSync(devDir, { recursive: true });
    // Every File the gres names exists (slurmd refuses a gres.conf whose File is no device),
    // the stale ones too: a site's stale gres.conf names devices that are still there.
    for (const d of n.devices) {
      const f = deviceFile(dir, d);
      mkdirSync(dirname(f), { recursive: true });
      mknodNull(f);
    }
  }
  // Slurm's TaskProlog prints `export NAME=value` lines into each task's environment: a
  // simulated node's tasks get what a session there has (its nvidia-smi first on PATH), as a
  // real node's tasks find its driver's tools. Keyed by $SLURMD_NODENAME, one script for all.
  const envDir = join(dir, "node-env");
  mkdirSync(envDir, { recursive: true });
  for (const n of c.nodes) {
    const nodeDir = dirname(n.stateDir);
    const e = simNodeEnv({ dir: nodeDir, binDir: join(nodeDir, "bin"), stateDir: n.stateDir });
    writeFileSync(
      join(envDir, n.name),
      Object.entries(e)
        .map(([k, v]) => `export ${k}=${v}\n`)
        .join(""),
    );
  }
  // Then the device fence a job's cgroup would give it under ConstrainDevices (cgroup.ts).
  const fence = builtEntry(FENCE_SCRIPT);
  writeFileSync(
    join(dir, "task-prolog.sh"),
    `#!/bin/sh\n# Written by \`slicecheck sim up --slurm\`: the simulated node's environment for its tasks.\nf="${envDir}/$SLURMD_NODENAME"\n[ -r "$f" ] && cat "$f"\n${quote(process.execPath)} ${quote(fence)} ${quote(dir)}\nexit 0\n`,
    { mode: 0o755 },
  );
  writeFileSync(join(dir, "cgroup.conf"), cgroupConf(c.unconstrained ?? []));
  writeEpilog(dir, c.epilogHang ?? []);
  writeFileSync(confPath(dir), slurmConf(p, nodes, c.mixed ?? []));
  writeFileSync(join(dir, "gres.conf"), gresConf(p, nodes));
}

const slurmdMark = (dir: string, node: string) => `${confPath(dir)}\0-N\0${node}`;

function startSlurmd(dir: string, node: string): void {
  mkdirSync(join(dir, "spool", node), { recursive: true });
  startDaemon(`slurmd ${node}`, SLURM_BIN.slurmd, ["-f", confPath(dir), "-N", node], env(dir));
}

function scontrol(dir: string, args: string[]): { status: number | null; out: string } {
  const r = spawnSync(SLURM_BIN.scontrol, args, {
    env: { ...process.env, ...env(dir) },
    encoding: "utf8",
    timeout: 15_000,
  });
  return { status: r.status, out: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}

/** Nodes that slurmd answers for (not NOT_RESPONDING, not UNKNOWN). */
function responding(dir: string, names: readonly string[]): boolean {
  const r = scontrol(dir, ["show", "node", "-o", names.join(",")]);
  if (r.status !== 0) return false;
  const lines = r.out.split("\n").filter((l) => l.startsWith("NodeName="));
  return (
    lines.length === names.length &&
    lines.every((l) => !/State=\S*(NOT_RESPONDING|UNKNOWN)/.test(l.replace(/^.*?State=/, "State=")))
  );
}

async function startAll(dir: string, nodes: readonly string[]): Promise<void> {
  if (!running(join(dir, "slurmctld.pid"), confPath(dir))) {
    startDaemon("slurmctld", SLURM_BIN.slurmctld, ["-f", confPath(dir)], env(dir));
    await until(
      "slurmctld did not answer scontrol ping",
      () => /UP/.test(scontrol(dir, ["ping"]).out),
      30_000,
      () => scontrol(dir, ["ping"]).out.trim(),
    );
  }
  for (const n of nodes)
    if (!running(join(dir, `slurmd-${n}.pid`), slurmdMark(dir, n))) startSlurmd(dir, n);
  await until(
    `slurmd did not register for ${nodes.join(",")}`,
    () => responding(dir, nodes),
    90_000, // 30 s ran out once on 2 loaded cores (CI of 5 December); a pass is no slower
    () =>
      scontrol(dir, ["show", "node", "-o", nodes.join(",")])
        .out.trim()
        .slice(0, 600),
  );
}

/** Starts (or reconciles) the cluster's Slurm; idempotent, like `sim up`. */
export async function startSlurm(
  clusterDir: string,
  nodes: { name: string; stateDir: string }[],
): Promise<SlurmClusterFile> {
  requireSlurm();
  const dir = slurmDirOf(clusterDir);
  for (const d of ["state", "spool", "dev", "munge"]) mkdirSync(join(dir, d), { recursive: true });
  const old = readSlurmCluster(dir);
  const c: SlurmClusterFile = {
    controllerPort: old?.controllerPort ?? (await freeServicePort()),
    nodes: [],
    stale: old?.stale ?? [],
    applied: old?.applied ?? [],
    ...(old?.unconstrained ? { unconstrained: old.unconstrained } : {}),
  };
  for (const n of nodes) {
    const port = old?.nodes.find((o) => o.name === n.name)?.port ?? (await freeServicePort());
    c.nodes.push({ name: n.name, port, stateDir: n.stateDir });
  }
  await startMunge(dir);
  await withLock(dir, async () => {
    // Nodes the spec no longer has: their slurmd goes with them.
    const gone = (old?.nodes ?? []).filter((o) => !c.nodes.some((n) => n.name === o.name));
    await Promise.all(
      gone.map((g) => stopDaemon(join(dir, `slurmd-${g.name}.pid`), slurmdMark(dir, g.name))),
    );
    c.applied = c.applied.filter((a) => c.nodes.some((n) => n.name === a.name));
    const want = desired(c);
    const changed = JSON.stringify(want) !== JSON.stringify(old?.applied ?? []);
    if (changed) await stopDaemons(dir, names(c));
    writeConf(dir, c, want);
    c.applied = want;
    save(dir, c);
    await startAll(dir, names(c));
  });
  return c;
}

async function startMunge(dir: string): Promise<void> {
  const m = join(dir, "munge");
  if (running(join(m, "munged.pid"), mungeSocket(dir))) return;
  const key = join(m, "munge.key");
  if (!existsSync(key)) spawnSync(SLURM_BIN.mungekey, ["--create", `--keyfile=${key}`]);
  mkdirSync(dirname(mungeSocket(dir)), { recursive: true, mode: 0o755 });
  startDaemon("munged", SLURM_BIN.munged, [
    `--key-file=${key}`,
    `--socket=${mungeSocket(dir)}`,
    `--pid-file=${join(m, "munged.pid")}`,
    `--log-file=${join(m, "munged.log")}`,
    `--seed-file=${join(m, "munged.seed")}`,
  ]);
  await until("munged did not create its socket", () => existsSync(mungeSocket(dir)), 10_000);
}

async function stopDaemons(dir: string, nodes: readonly string[]): Promise<void> {
  await Promise.all(nodes.map((n) => stopDaemon(join(dir, `slurmd-${n}.pid`), slurmdMark(dir, n))));
  await stopDaemon(join(dir, "slurmctld.pid"), confPath(dir));
}

/**
 * Brings slurm.conf and gres.conf to the nodes' MIG state; restarts slurmctld and the slurmd
 * of each node whose gres changed (Slurm 22.05 reads a node's gres count only at start; a
 * reconfigure alone leaves the controller's view stale and drains the node). True if it did.
 */
export async function syncSlurm(clusterDir: string): Promise<boolean> {
  const dir = slurmDirOf(clusterDir);
  if (!existsSync(file(dir))) return false;
  // Nothing to do and nobody at it: no queue for the lock (a flock, a shell and a cat a call).
  if (!syncUnderWay(dir) && inSync(dir)) return false;
  return withLock(dir, async () => {
    const c = readSlurmCluster(dir);
    if (!c) return false;
    const want = desired(c);
    if (same(want, c.applied)) return false;
    const changed = want
      .filter((w) => JSON.stringify(w) !== JSON.stringify(c.applied.find((a) => a.name === w.name)))
      .map((w) => w.name);
    await stopDaemons(dir, changed);
    writeConf(dir, c, want);
    c.applied = want;
    save(dir, c);
    await startAll(dir, changed);
    // The slurmd that were not restarted re-read the new slurm.conf (its hash must match).
    scontrol(dir, ["reconfigure"]);
    await startAll(dir, names(c));
    return true;
  });
}

export const GRES_FAULTS = {
  "slurm-stale-gres":
    "slurm-stale-gres: the node's gres no longer follows its MIG layout (gres.conf not regenerated after a change)",
  "slurm-swap-gres":
    "slurm-swap-gres: two of the node's gres lines of different profiles swap their Type (the counts stay right)",
  "slurm-mixed-partition":
    "slurm-mixed-partition: the node is also put into the whole-card partition `gpu`",
  "slurm-unconstrained":
    "slurm-unconstrained: cgroup.conf says ConstrainDevices=no (the cluster's one file): a job sees, opens and computes on every instance of its node, its neighbours' included",
  "slurm-epilog-hang":
    "slurm-epilog-hang: the node's Epilog hangs up to 120 s after every job (a site epilog stuck on a file system): each job stays COMPLETING meanwhile",
  "slurm-mig-naming":
    "slurm-mig-naming: the node's MIG instances become gres `mig:<profile>` (the source document's naming, GresTypes=gpu,mig), not typed gpu gres (a site convention, not a fault: the suite must follow it)",
} as const;

/** Plants one of GRES_FAULTS on a node of a cluster with Slurm; says what it did. */
export async function plantGresFault(
  clusterDir: string,
  node: string,
  kind: keyof typeof GRES_FAULTS,
): Promise<string> {
  const dir = slurmDirOf(clusterDir);
  if (!readSlurmCluster(dir))
    throw new SlicecheckError(
      "USAGE",
      `${kind} needs Slurm in the simulated cluster; start it with \`slicecheck sim up --slurm\``,
    );
  return withLock(dir, async () => {
    const c = readSlurmCluster(dir) as SlurmClusterFile;
    if (kind === "slurm-epilog-hang") {
      if (!c.nodes.some((n) => n.name === node))
        throw new SlicecheckError("USAGE", `Slurm has no simulated node ${node}`);
      c.epilogHang = [...new Set([...(c.epilogHang ?? []), node])];
      writeEpilog(dir, c.epilogHang); // read by the Epilog at each job's end: no restart
      save(dir, c);
      return `${node}'s Epilog now hangs up to ${EPILOG_HANG_S} s after every job, which stays COMPLETING meanwhile`;
    }
    if (kind === "slurm-unconstrained") {
      if (!c.nodes.some((n) => n.name === node))
        throw new SlicecheckError("USAGE", `Slurm has no simulated node ${node}`);
      c.unconstrained = [...new Set([...(c.unconstrained ?? []), node])];
      // Read by each job's TaskProlog; the real slurmd here has no cgroups to restart for.
      writeFileSync(join(dir, "cgroup.conf"), cgroupConf(c.unconstrained));
      save(dir, c);
      return "cgroup.conf now says ConstrainDevices=no: jobs are no longer fenced to their gres";
    }
    if (kind === "slurm-mixed-partition" || kind === "slurm-mig-naming") {
      if (!c.nodes.some((n) => n.name === node))
        throw new SlicecheckError("USAGE", `Slurm has no simulated node ${node}`);
      if (kind === "slurm-mig-naming") c.migNamed = [...new Set([...(c.migNamed ?? []), node])];
      else c.mixed = [...new Set([...(c.mixed ?? []), node])];
      const want = desired(c);
      await stopDaemons(dir, names(c));
      writeConf(dir, c, want);
      c.applied = want;
      save(dir, c);
      await startAll(dir, names(c));
      return kind === "slurm-mig-naming"
        ? `${node}'s MIG instances are now gres ${gresSummaryOf(want, node)}`
        : `${node} is now in partition gpu as well`;
    }
    const conf = c.applied.find((a) => a.name === node);
    if (!conf) throw new SlicecheckError("USAGE", `Slurm has no simulated node ${node}`);
    if (!c.stale.includes(node)) c.stale.push(node);
    if (kind === "slurm-stale-gres") {
      save(dir, c);
      return `${node}'s gres stays ${conf.devices.map((d) => d.type).join(",") || "(none)"} whatever its layout becomes`;
    }
    const a = conf.devices.find((d) => d.mig);
    const b = conf.devices.find((d) => d.mig && d.type !== a?.type);
    if (!a || !b)
      throw new SlicecheckError(
        "USAGE",
        `${kind} needs two MIG instances of different profiles on ${node}; apply such a layout first`,
      );
    [a.type, b.type] = [b.type, a.type];
    await stopDaemons(dir, [node]);
    writeConf(dir, c, c.applied);
    save(dir, c);
    await startAll(dir, [node]);
    scontrol(dir, ["reconfigure"]);
    return `gres.conf now calls ${a.uuid} a ${a.type} and ${b.uuid} a ${b.type}`;
  });
}

function gresSummaryOf(nodes: readonly SlurmNodeConf[], node: string): string {
  const n = nodes.find((x) => x.name === node);
  return n ? gresSummary(n.devices, n) || "(none)" : "(none)";
}

/** `sim fault NODE --clear`: the node's gres follows its layout again (at the next sync). */
export function clearGresFaults(clusterDir: string, node: string): boolean {
  const dir = slurmDirOf(clusterDir);
  const c = readSlurmCluster(dir);
  if (
    !c ||
    ![c.stale, c.mixed ?? [], c.migNamed ?? [], c.unconstrained ?? [], c.epilogHang ?? []].some(
      (l) => l.includes(node),
    )
  )
    return false;
  c.epilogHang = (c.epilogHang ?? []).filter((n) => n !== node);
  writeEpilog(dir, c.epilogHang); // a hang under way ends within a second
  c.unconstrained = (c.unconstrained ?? []).filter((n) => n !== node);
  writeFileSync(join(dir, "cgroup.conf"), cgroupConf(c.unconstrained));
  c.stale = c.stale.filter((n) => n !== node);
  c.mixed = (c.mixed ?? []).filter((n) => n !== node);
  c.migNamed = (c.migNamed ?? []).filter((n) => n !== node);
  c.applied = c.applied.filter((a) => a.name !== node);
  save(dir, c);
  return true;
}

/** `sim down`: every daemon of the cluster's Slurm, by pid. The number stopped. */
export async function stopSlurm(clusterDir: string): Promise<number> {
  const dir = slurmDirOf(clusterDir);
  const c = readSlurmCluster(dir);
  if (!c) return 0;
  let n = 0;
  for (const node of c.nodes)
    if (await stopDaemon(join(dir, `slurmd-${node.name}.pid`), slurmdMark(dir, node.name))) n++;
  if (await stopDaemon(join(dir, "slurmctld.pid"), confPath(dir))) n++;
  if (await stopDaemon(join(dir, "munge", "munged.pid"), mungeSocket(dir))) n++;
  rmSync(dirname(mungeSocket(dir)), { recursive: true, force: true });
  return n;
}

/**
 * `sim fault NODE slurm --state S` where the cluster runs a real Slurm: the state is set in
 * slurmctld itself (the simulated scontrol's file is not what the nodes' scontrol reads then).
 */
export function setSlurmState(clusterDir: string, node: string, state: string): string | null {
  const dir = slurmDirOf(clusterDir);
  if (!readSlurmCluster(dir)) return null;
  const words: Record<string, string[]> = {
    idle: ["state=resume"],
    drained: ["state=drain", "reason=sim fault"],
    down: ["state=down", "reason=sim fault"],
  };
  const w = words[state];
  if (!w)
    throw new SlicecheckError(
      "USAGE",
      `under a real Slurm, slurm --state takes ${Object.keys(words).join("|")} (draining: submit a job with sbatch, then drain)`,
    );
  const r = scontrol(dir, ["update", `nodename=${node}`, ...w]);
  if (r.status !== 0 && !/Invalid node state transition/.test(r.out))
    throw new SlicecheckError(
      "SLURM",
      `scontrol update nodename=${node} ${w.join(" ")}: ${r.out.trim()}`,
    );
  return `Slurm node ${node}: ${w.join(" ")}`;
}
