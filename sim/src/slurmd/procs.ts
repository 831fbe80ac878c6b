// The Slurm daemons' processes: started in their own daemon mode (they fork and write a pid
// file), found again by that pid file, and stopped only if /proc says the pid is still our
// daemon (its command line names our config or socket), never by name.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { SlicecheckError } from "../../../src/errors.js";
import { isAlive, readPid } from "../sshd.js";

export const SLURM_BIN = {
  munged: "/usr/sbin/munged",
  mungekey: "/usr/sbin/mungekey",
  slurmctld: "/usr/sbin/slurmctld",
  slurmd: "/usr/sbin/slurmd",
  scontrol: "/usr/bin/scontrol",
} as const;

export function requireSlurm(): void {
  const missing = Object.values(SLURM_BIN).filter((p) => !existsSync(p));
  if (missing.length)
    throw new SlicecheckError(
      "TOOL_MISSING",
      `Slurm or munge is not installed (${missing.join(", ")} missing); install them with \`apt-get install -y slurm-wlm munge\` (npm test does this itself)`,
    );
}

export function isOurs(pid: number, mark: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(mark);
  } catch {
    return false;
  }
}

/**
 * Runs a daemon that forks; throws with its output when it does not come up. Its environment
 * is a clean one: a sync can start from inside a run's session, and a daemon that inherited
 * the session's SLICECHECK_RUN tag would be killed with the run's leftovers.
 */
export function startDaemon(
  name: string,
  bin: string,
  args: string[],
  extra: Record<string, string> = {},
): void {
  const env = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LANG: "C.UTF-8", ...extra };
  const r = spawnSync(bin, args, { env, encoding: "utf8", timeout: 30_000 });
  if (r.status !== 0)
    throw new SlicecheckError(
      "SLURM",
      `${name} did not start (exit ${r.status ?? r.signal}): ${`${r.stderr ?? ""}${r.stdout ?? ""}`.trim() || "no output"}`,
      { name },
    );
}

/** SIGTERM, up to 15 s for a clean exit (slurmctld saves its state), then SIGKILL. */
export async function stopDaemon(pidFile: string, mark: string): Promise<boolean> {
  const pid = readPid(pidFile);
  if (!pid || !isAlive(pid) || !isOurs(pid, mark)) return false;
  process.kill(pid, "SIGTERM");
  for (let i = 0; i < 300 && isAlive(pid); i++) await new Promise((r) => setTimeout(r, 50));
  if (isAlive(pid)) process.kill(pid, "SIGKILL");
  return true;
}

export function running(pidFile: string, mark: string): number | null {
  const pid = readPid(pidFile);
  return pid && isAlive(pid) && isOurs(pid, mark) ? pid : null;
}

/** A character device placeholder (the null device's numbers: nothing ever opens it). */
export function mknodNull(path: string): void {
  execFileSync("mknod", [path, "c", "1", "3"], { stdio: "pipe" });
}

/**
 * A character device no driver answers (major 240, of the range Linux reserves for local use):
 * open() fails with ENXIO. Stands for a device the job's cgroup denies (cgroup.ts).
 */
export function mknodDead(path: string): void {
  execFileSync("mknod", [path, "c", "240", "0"], { stdio: "pipe" });
}

export async function until(
  what: string,
  cond: () => boolean,
  timeoutMs: number,
  detail: () => string = () => "",
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end)
      throw new SlicecheckError(
        "SLURM",
        `${what} within ${timeoutMs / 1000} s${detail() ? `: ${detail()}` : ""}`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * `slurm` where this runs as root, Debian's package made the user, and that user can write the
 * controller's state folder (its log and state are handed to it); else the user running this
 * (a temporary folder of mode 0700 on the way, or not root: slurmctld runs as whoever starts it).
 */
export function controllerUser(dir: string): string {
  if (process.getuid?.() !== 0) return userInfo().username;
  if (spawnSync("id", ["-u", "slurm"], { stdio: "ignore" }).status !== 0) return "root";
  const state = join(dir, "state");
  const log = join(dir, "slurmctld.log");
  if (!existsSync(log)) writeFileSync(log, "");
  spawnSync("chown", ["-R", "slurm:slurm", state, log], { stdio: "ignore" });
  const ok =
    spawnSync("runuser", ["-u", "slurm", "--", "test", "-w", state], { stdio: "ignore" }).status ===
    0;
  return ok ? "slurm" : "root";
}
