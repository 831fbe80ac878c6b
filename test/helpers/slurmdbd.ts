// A real Slurm with accounting for one describe block: Debian's MariaDB, slurmdbd, slurmctld and
// one slurmd (two placeholder GPUs typed h100), with munge, every daemon on this machine under a
// temporary folder, started in `before` and stopped by pid in `after`. Jobs run for real and
// `sacct` reads them back from the database, so the advise parser meets sacct's own output.
// GPU memory is not accounted here (no NVML: gres/gpumem needs AutoDetect=nvml on a real GPU).
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { tempDir } from "./tmp.js";

export interface AccountingCluster {
  dir: string;
  /** A shell command with this cluster's SLURM_CONF; throws on a non-zero exit. */
  sh(cmd: string): string;
}

const CLUSTER = "slicecheck-dbd";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function until(what: string, cond: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  const r = spawnSync(cmd, args, { env: { ...process.env, ...env }, encoding: "utf8" });
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(" ")}: exit ${r.status}: ${r.stderr}${r.stdout}`);
  return r.stdout;
}

function slurmConf(d: string, ports: Record<string, number>): string {
  return [
    `ClusterName=${CLUSTER}`,
    "SlurmctldHost=localhost(127.0.0.1)",
    `SlurmctldPort=${ports.ctld}`,
    "SlurmUser=root",
    "SlurmdUser=root",
    "AuthType=auth/munge",
    "CredType=cred/munge",
    `AuthInfo=socket=${d}/munge/munge.socket`,
    `StateSaveLocation=${d}/state`,
    `SlurmdSpoolDir=${d}/spool/%n`,
    `SlurmctldPidFile=${d}/slurmctld.pid`,
    `SlurmdPidFile=${d}/slurmd-%n.pid`,
    `SlurmctldLogFile=${d}/slurmctld.log`,
    `SlurmdLogFile=${d}/slurmd-%n.log`,
    "ProctrackType=proctrack/linuxproc",
    "TaskPlugin=task/none",
    "SelectType=select/cons_tres",
    "SelectTypeParameters=CR_Core",
    "SlurmdParameters=config_overrides",
    "GresTypes=gpu",
    "ReturnToService=2",
    "MpiDefault=none",
    "AccountingStorageType=accounting_storage/slurmdbd",
    "AccountingStorageHost=localhost",
    `AccountingStoragePort=${ports.dbd}`,
    // For slurmdbd connections AccountingStoragePass names the munge socket (slurm.conf(5)):
    // without it sacct and slurmctld look for munge at /run/munge.
    `AccountingStoragePass=${d}/munge/munge.socket`,
    "AccountingStorageTRES=gres/gpu,gres/gpu:h100",
    "JobAcctGatherType=jobacct_gather/linux",
    "JobAcctGatherFrequency=1",
    "JobCompType=jobcomp/none",
    "KillWait=5",
    "MinJobAge=60",
    `NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=${ports.slurmd} CPUs=8 RealMemory=64000 Gres=gpu:h100:2`,
    "PartitionName=gpu Nodes=n1 MaxTime=INFINITE State=UP Default=YES",
    "",
  ].join("\n");
}

function slurmdbdConf(d: string, ports: Record<string, number>): string {
  return [
    "AuthType=auth/munge",
    `AuthInfo=socket=${d}/munge/munge.socket`,
    "DbdHost=localhost",
    `DbdPort=${ports.dbd}`,
    "SlurmUser=root",
    "StorageType=accounting_storage/mysql",
    "StorageHost=127.0.0.1",
    `StoragePort=${ports.db}`,
    "StorageUser=slurm",
    "StoragePass=slicecheck",
    "StorageLoc=slurm_acct_db",
    `PidFile=${d}/slurmdbd.pid`,
    `LogFile=${d}/slurmdbd.log`,
    "",
  ].join("\n");
}

async function startMariadb(d: string, port: number): Promise<ChildProcess> {
  run("mariadb-install-db", [
    "--no-defaults",
    `--datadir=${d}/db`,
    "--user=root",
    "--auth-root-authentication-method=normal",
    "--skip-test-db",
  ]);
  const db = spawn(
    "mariadbd",
    [
      "--no-defaults",
      `--datadir=${d}/db`,
      `--socket=${d}/mysql.sock`,
      `--port=${port}`,
      "--bind-address=127.0.0.1",
      "--user=root",
      `--pid-file=${d}/mysql.pid`,
      `--log-error=${d}/mysql.err`,
      "--innodb-buffer-pool-size=32M",
    ],
    { stdio: "ignore" },
  );
  await until("MariaDB made no socket", () => existsSync(`${d}/mysql.sock`), 60_000);
  run("mariadb", [
    "--no-defaults",
    `--socket=${d}/mysql.sock`,
    "-uroot",
    "-e",
    "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slicecheck'; GRANT ALL ON *.* TO 'slurm'@'127.0.0.1';",
  ]);
  return db;
}

async function startAll(d: string, started: (db: ChildProcess) => void): Promise<void> {
  const ports = {
    db: await freePort(),
    dbd: await freePort(),
    ctld: await freePort(),
    slurmd: await freePort(),
  };
  for (const sub of ["db", "munge", "state", "spool", "dev/n1"])
    mkdirSync(join(d, sub), { recursive: true });
  chmodSync(join(d, "munge"), 0o755);
  for (const i of [0, 1]) writeFileSync(join(d, `dev/n1/nvidia${i}`), "");
  writeFileSync(join(d, "slurm.conf"), slurmConf(d, ports));
  writeFileSync(join(d, "slurmdbd.conf"), slurmdbdConf(d, ports), { mode: 0o600 });
  writeFileSync(
    join(d, "gres.conf"),
    [0, 1].map((i) => `NodeName=n1 Name=gpu Type=h100 File=${d}/dev/n1/nvidia${i}\n`).join(""),
  );
  const env = { SLURM_CONF: join(d, "slurm.conf") };
  started(await startMariadb(d, ports.db));
  run("mungekey", ["--create", `--keyfile=${d}/munge/munge.key`]);
  run("munged", [
    `--key-file=${d}/munge/munge.key`,
    `--socket=${d}/munge/munge.socket`,
    `--pid-file=${d}/munge/munged.pid`,
    `--log-file=${d}/munge/munged.log`,
    `--seed-file=${d}/munge/munged.seed`,
  ]);
  run("slurmdbd", [], env);
  // slurmctld asks slurmdbd for the cluster's TRES at start: the cluster must be registered.
  await until(
    "slurmdbd did not register the cluster",
    () => {
      const r = spawnSync("sacctmgr", ["-i", "add", "cluster", CLUSTER], {
        env: { ...process.env, ...env },
      });
      return r.status === 0 || String(r.stdout).includes("already exists");
    },
    30_000,
  );
  run("slurmctld", [], env);
  run("slurmd", ["-N", "n1"], env);
  await until(
    "the node did not come up idle",
    () => {
      const r = spawnSync("sinfo", ["-h", "-o", "%T"], {
        env: { ...process.env, ...env },
        encoding: "utf8",
      });
      return r.status === 0 && r.stdout.trim() === "idle";
    },
    30_000,
  );
}

/** SIGTERM to each daemon this cluster started (by its pid file; MariaDB by its child), then
 * wait until they are gone: the folder is removed after, and a daemon still writing stops that. */
async function stopAll(d: string, db: ChildProcess | undefined): Promise<void> {
  const pids: number[] = [];
  for (const pid of ["slurmd-n1.pid", "slurmctld.pid", "slurmdbd.pid", "munge/munged.pid"]) {
    const file = join(d, pid);
    if (existsSync(file)) pids.push(Number(readFileSync(file, "utf8").trim()));
  }
  if (db?.pid !== undefined && db.exitCode === null) pids.push(db.pid);
  const alive = (pid: number) => existsSync(`/proc/${pid}`);
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGTERM");
    } catch {
      /* already gone */
    }
  }
  await until("the accounting cluster's daemons did not stop", () => !pids.some(alive), 30_000);
}

export function useAccountingCluster(): AccountingCluster {
  const handle = {} as AccountingCluster;
  let db: ChildProcess | undefined;
  before(async function () {
    this.timeout(180_000);
    const dir = tempDir("slurmdbd");
    chmodSync(dir, 0o711);
    handle.dir = dir;
    handle.sh = (cmd) => run("sh", ["-c", cmd], { SLURM_CONF: join(dir, "slurm.conf") });
    await startAll(dir, (c) => {
      db = c;
    });
  });
  after(async function () {
    this.timeout(40_000);
    if (handle.dir) await stopAll(handle.dir, db);
  });
  return handle;
}
