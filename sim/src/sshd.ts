// One simulated node = one real OpenSSH sshd on its own loopback address, with its own host
// key, authorized key, PATH of simulated tools and state directory.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { SlicecheckError } from "../../src/errors.js";
import { CONTAINERS_CONF_FILE } from "./containers/images.js";
import { writeProcRoot } from "./nvsmi/caps.js";
import { cdiDirOf } from "./toolkit/spec.js";

export const SSHD_CANDIDATES = ["/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd"];

export function findSshd(): string {
  const found = SSHD_CANDIDATES.find((p) => existsSync(p));
  if (!found) {
    throw new SlicecheckError(
      "TOOL_MISSING",
      "OpenSSH's sshd is not installed; the simulated cluster needs it. Install it with `apt-get install -y openssh-server` (npm test and npm run demo do this themselves).",
    );
  }
  return found;
}

export function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, host, () => {
      const addr = srv.address();
      srv.close(() =>
        typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port")),
      );
    });
  });
}

/** The lowest source port the kernel gives outgoing connections (Linux's default when the
 * file cannot be read). */
function ephemeralFloor(): number {
  try {
    const lo = Number(
      readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0],
    );
    if (lo) return lo;
  } catch {
    // Not Linux, or no /proc: the default below.
  }
  return 32768;
}

/**
 * A port for a daemon that listens on every address (slurmd, slurmctld: 0.0.0.0), free there,
 * and outside the range of outgoing connections' source ports. A port from freePort is one of
 * those: while a daemon restarts (Slurm's, on every layout change), any outgoing connection of
 * the machine may take it, and a port free on 127.0.0.1 may be a node's sshd's on 127.0.0.13
 * (slurmd: "Unable to bind listen port (41119): Address already in use", 5 December 2026).
 */
export async function freeServicePort(): Promise<number> {
  const lo = ephemeralFloor();
  const floor = 10_000;
  if (lo - floor >= 1000)
    for (let i = 0; i < 50; i++) {
      const port = floor + Math.floor(Math.random() * (lo - floor));
      if (await listenable("0.0.0.0", port)) return port;
    }
  return freePort("0.0.0.0");
}

/** Whether a listener may bind host:port now. */
export function listenable(host: string, port: number): Promise<boolean> {
  return new Promise((r) => {
    const s = createServer();
    s.once("error", () => r(false));
    s.listen(port, host, () => s.close(() => r(true)));
  });
}

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Asynchronous, so that `sim up` starts many nodes at once (sim/src/pool.ts).
export async function ensureKey(path: string, comment: string): Promise<void> {
  if (existsSync(path)) return;
  await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path]);
}

export interface SshdConfig {
  dir: string;
  host: string;
  port: number;
  binDir: string;
  stateDir: string;
  authorizedKeys: string;
  /** Seconds each login shell sleeps first (SimNodeSpec.loginDelayS). */
  loginDelayS?: number;
}

/**
 * What a session on a simulated node has: its tools first on PATH, its state, and
 * SLICECHECK_PROC, where its /proc/driver files are (a simulated node has no driver; the slurm
 * suite's probe reads mig-minors there). Also what its Slurm tasks get (the sim's TaskProlog).
 */
export function simNodeEnv(
  c: Pick<SshdConfig, "dir" | "binDir" | "stateDir">,
): Record<string, string> {
  return {
    SLICECHECK_SIM_STATE: c.stateDir,
    // The product's own setting: where the node keeps its lock, lease and journal copy.
    SLICECHECK_STATE_DIR: c.stateDir,
    SLICECHECK_SIM_NODE_DIR: c.dir,
    SLICECHECK_PROC: writeProcRoot(c.dir),
    // Where the product reads the CDI specs (/etc/cdi, /var/run/cdi on a real node) and the
    // simulated nvidia-ctk writes them: the node's own folder (sim/src/toolkit/spec.ts).
    SLICECHECK_CDI_DIRS: cdiDirOf(c.stateDir),
    // Where the product reads podman's containers.conf (/etc/containers/… on a real node):
    // absent unless `sim fault runtime-unconfigured` writes one.
    SLICECHECK_CONTAINERS_CONF: join(c.stateDir, CONTAINERS_CONF_FILE),
    PATH: `${c.binDir}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin`,
    // A simulated node has no start-up files of its own: without this, bash (built with
    // SSH_SOURCE_BASHRC on Debian) sources the controller user's ~/.bashrc for every command
    // sshd runs, since both share one $HOME. On CI that is `pyenv init`: about 120 ms of CPU per
    // command and `pyenv rehash` races between nodes on stderr. bash skips it at SHLVL >= 2, and
    // it counts itself one level up. A real node's start-up cost is its own (issue 25's bench).
    SHLVL: "1",
  };
}

/** A slow login, as a real node's start-up files make it: bash (sshd runs each command through
 * the user's shell) sources BASH_ENV before the command; the dash the node's scripts use does
 * not. The file then unsets BASH_ENV, so that it runs once per login, as start-up files do, and
 * not again in every bash script the command starts (the simulated tools' wrappers are bash: each
 * nvidia-smi cost another delay, and the bench's slow-login row measured that). It leaves
 * SLICECHECK_SIM_LOGIN=slow behind, so that a test can tell it ran. */
export const LOGIN_MARK = "SLICECHECK_SIM_LOGIN";

function slowLogin(c: SshdConfig): Record<string, string> {
  if (!c.loginDelayS) return {};
  const file = join(c.dir, "login-delay.sh");
  writeFileSync(file, `sleep ${c.loginDelayS}\nunset BASH_ENV\nexport ${LOGIN_MARK}=slow\n`);
  return { BASH_ENV: file };
}

export function writeSshdConfig(c: SshdConfig): string {
  const path = join(c.dir, "sshd_config");
  const lines = [
    "# Written by `slicecheck sim up` for one simulated node.",
    `ListenAddress ${c.host}:${c.port}`,
    `HostKey ${join(c.dir, "ssh_host_ed25519_key")}`,
    `PidFile ${join(c.dir, "sshd.pid")}`,
    `AuthorizedKeysFile ${c.authorizedKeys}`,
    "PubkeyAuthentication yes",
    "PasswordAuthentication no",
    "KbdInteractiveAuthentication no",
    "PermitRootLogin prohibit-password",
    // The cluster lives in a work tree whose parents may be group-writable.
    "StrictModes no",
    "UsePAM no",
    "AllowTcpForwarding yes",
    "MaxSessions 10",
    "MaxStartups 100:30:200",
    // VERBOSE logs one "Connection from …" line per TCP connection: tests count them to prove
    // that bad input is refused before any node is connected to.
    "LogLevel VERBOSE",
    // The session finds the simulated tools first; SetEnv is applied after sshd's default PATH.
    `SetEnv ${Object.entries({ ...simNodeEnv(c), ...slowLogin(c) })
      .map(([k, v]) => `${k}=${v}`)
      .join(" ")}`,
  ];
  writeFileSync(path, `${lines.join("\n")}\n`);
  return path;
}

/** Starts a node's sshd and waits until it listens; its pid. */
export async function startSshd(dir: string, config: string): Promise<number> {
  const pidFile = join(dir, "sshd.pid");
  rmSync(pidFile, { force: true });
  if (process.getuid?.() === 0) mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
  try {
    await run(findSshd(), ["-f", config, "-E", join(dir, "sshd.log")]);
  } catch (e) {
    const log = existsSync(join(dir, "sshd.log"))
      ? readFileSync(join(dir, "sshd.log"), "utf8").trim().split("\n").slice(-3).join("; ")
      : "";
    throw new SlicecheckError(
      "SIM",
      `sshd did not start for ${dir}: ${(e as Error).message.split("\n")[0]} ${log}`,
      { dir, portTaken: /Address already in use/.test(log) },
    );
  }
  // sshd writes its pid file after it has bound the port and daemonised.
  for (let i = 0; i < 400; i++) {
    const pid = readPid(pidFile);
    if (pid) return pid;
    await sleep(10);
  }
  throw new SlicecheckError("SIM", `sshd started for ${dir} but wrote no pid file`, { dir });
}

export function readPid(file: string): number | null {
  try {
    const n = Number(readFileSync(file, "utf8").trim());
    return Number.isInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}

/** True when `pid` is an sshd started with our config, so we never signal a recycled pid. */
export function isOurSshd(pid: number, config: string): boolean {
  try {
    // sshd rewrites its argv into one title string ("sshd: /usr/sbin/sshd -f CONFIG … [listener]").
    const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
    return cmd.includes("sshd") && cmd.includes(` ${config} `);
  } catch {
    return false;
  }
}

/** Children of a process (its established sessions, for sshd). */
export function childrenOf(pid: number): number[] {
  return childrenOfAll(new Set([pid]));
}

/** Children of any of the processes, from one pass over /proc. */
function childrenOfAll(parents: ReadonlySet<number>): number[] {
  const out: number[] = [];
  for (const entry of safeReaddir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (parents.has(ppid)) out.push(Number(entry));
    } catch {
      /* gone */
    }
  }
  return out;
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

export async function stopSshd(pid: number, config: string): Promise<boolean> {
  return (await stopSshds([{ pid, config }])) === 1;
}

/**
 * Stops many sshd processes at once, each only when it is ours, with its sessions: one /proc
 * scan for their children and one wait for them all (`sim down` of 256 nodes took 4.3 s one by
 * one, a /proc scan and a 20 ms poll each). How many were ours.
 */
export async function stopSshds(list: { pid: number; config: string }[]): Promise<number> {
  const ours = list.filter((s) => isOurSshd(s.pid, s.config)).map((s) => s.pid);
  if (ours.length === 0) return 0;
  const sessions = childrenOfAll(new Set(ours));
  for (const p of [...ours, ...sessions]) {
    try {
      process.kill(p, "SIGTERM");
    } catch {
      /* gone */
    }
  }
  for (let i = 0; i < 200 && ours.some(isAlive); i++) await sleep(10);
  for (const p of ours.filter(isAlive)) process.kill(p, "SIGKILL");
  return ours.length;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/\) Z /.test(stat);
  } catch {
    return false;
  }
}
