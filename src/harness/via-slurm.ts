// `run --via slurm`: the fleet path. ONE job array, a task per node, each task pinned to its
// node and running slicecheck there (local transport) with the same suites and options, writing
// to the shared records database (--db postgres://…) and to <out>/<node>/. The controller
// submits through the first node's Slurm commands (a login node's part), shows each task's
// state as it changes, and gathers the nodes' results into one run (via-slurm-gather.ts).
//
// Pinning: the array is submitted held, each pending task is given its node (`scontrol update
// JobId=<id>_<i> NodeList=<node>`, which splits it off the array record; Slurm 22.05 takes it)
// and only then is the array released, so no task can start before it is pinned.
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { SlicecheckError } from "../errors.js";
import { openTransport } from "../transport/open.js";
import type { Transport } from "../transport/types.js";
import { quote } from "../util/shell.js";
import type { CheckRecord } from "../verdicts/checks.js";
import { type GresEntry, parseNodes } from "../verdicts/slurm.js";
import { freshOutDir } from "./out-dir.js";
import { slurmSh } from "./slurm-sh.js";
import {
  type DeviceConstraint,
  deviceConstraint,
  gpuGres,
  refuseConfined,
} from "./via-slurm-devices.js";
import { gatherViaSlurm } from "./via-slurm-gather.js";
import type { ViaSlurmJob, ViaSlurmOptions } from "./via-slurm-options.js";
import { arrayScript, CONFINED_FILE, type ScriptTask } from "./via-slurm-script.js";
import { giveUp, stuckCompleting } from "./via-slurm-watch.js";

export interface ViaSlurmResult {
  exitCode: number;
  arrayId: string;
  interrupted: boolean;
  jobs: ViaSlurmJob[];
  checks: CheckRecord[];
}

// The states a task leaves only by ending; anything else (a state this list does not know) is
// watched on, never taken for an end.
const ENDED = new Set([
  "COMPLETED",
  "CANCELLED",
  "FAILED",
  "TIMEOUT",
  "NODE_FAIL",
  "PREEMPTED",
  "BOOT_FAIL",
  "DEADLINE",
  "OUT_OF_MEMORY",
  "ENDED",
]);

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((r) => {
    const stop = () => {
      clearTimeout(timer);
      r();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", stop);
      r();
    }, ms);
    signal?.addEventListener("abort", stop, { once: true });
  });

/** Each node's results folder, emptied of an earlier run's; the job logs reach them through
 * <out>/tasks/<i> (sbatch's --output names a task by its index only). */
function prepareFolders(o: ViaSlurmOptions): string[] {
  freshOutDir(o.outDir);
  const tasks = join(o.outDir, "tasks");
  rmSync(tasks, { recursive: true, force: true });
  mkdirSync(tasks);
  return o.nodes.map((n, i) => {
    const out = resolve(o.outDir, n.name);
    // A folder left by a controller that died before gathering: its results are not this run's.
    if (freshOutDir(out).length) rmSync(join(out, "previous-run"), { recursive: true });
    rmSync(join(out, "exit-code"), { force: true });
    rmSync(join(out, "job.log"), { force: true });
    rmSync(join(out, CONFINED_FILE), { force: true });
    symlinkSync(join("..", n.name), join(tasks, String(i)));
    return out;
  });
}

/** The folders and the batch script; per task, under confinement, the GPU gres it asks for
 * and how many devices its nvidia-smi must then list (at least one: a node without GPU gres
 * gives a confined job no GPU at all). */
function writeTasks(
  o: ViaSlurmOptions,
  info: readonly { gres: GresEntry[] }[],
  confined: boolean,
): (ScriptTask & { gres: string | null })[] {
  const outs = prepareFolders(o);
  const tasks = o.nodes.map((n, i) => {
    const want = confined ? gpuGres(info[i]?.gres ?? []) : null;
    return {
      node: n.name,
      slurmNode: n.slurmNode ?? n.name,
      out: outs[i] as string,
      gres: want?.tres ?? null,
      devices: confined ? Math.max(want?.devices ?? 0, 1) : 0,
    };
  });
  const argv = [...o.command, "run", "-i", resolve(o.inventoryFile), "--run-id", o.runId];
  writeFileSync(join(o.outDir, "via-slurm.sh"), arrayScript(o.runId, [...argv, ...o.args], tasks), {
    mode: 0o755,
  });
  return tasks;
}

/** Per node: the partition of its task (--partition, else its own first one: a cluster need not
 * have a default partition), and why Slurm would start no job on it now (drained, down), if so. */
async function nodeInfo(
  t: Transport,
  o: ViaSlurmOptions,
): Promise<{ partition: string | null; unavailable: string | null; gres: GresEntry[] }[]> {
  const names = o.nodes.map((n) => n.slurmNode ?? n.name);
  const info = parseNodes(await slurmSh(t, ["scontrol", "show", "node", "-o", names.join(",")]));
  return names.map((n) => {
    const x = info.find((y) => y.name === n);
    return {
      partition: o.partition ?? x?.partitions[0] ?? null,
      gres: x?.gres ?? [],
      unavailable:
        x && /DRAIN|DOWN|FAIL/.test(x.state)
          ? `its Slurm node ${n} is ${x.state}${x.reason ? ` (reason: ${x.reason})` : ""} and takes no job`
          : null,
    };
  });
}

/** Whether the nodes' jobs have their devices confined (via-slurm-devices.ts): the controller's
 * config, else the cgroup.conf beside the slurm.conf it names, read through the submit node. */
async function readConstraint(t: Transport): Promise<DeviceConstraint> {
  const config = await slurmSh(t, ["scontrol", "show", "config"]);
  const conf = /^\s*SLURM_CONF\s*=\s*(\S+)/m.exec(config)?.[1] ?? "/etc/slurm/slurm.conf";
  const cg = await t.exec(
    { argv: ["cat", join(dirname(conf), "cgroup.conf")] },
    { timeoutMs: 60_000 },
  );
  return deviceConstraint(config, cg.exitCode === 0 ? cg.stdout : null);
}

/** Whether the tasks must hold their nodes' GPU gres; refuses (exit 3) what a confined task
 * cannot do. */
async function confinement(t: Transport, o: ViaSlurmOptions): Promise<boolean> {
  const c = await readConstraint(t);
  refuseConfined(c, o);
  if (c.on)
    o.progress(
      `GPU devices are confined to a job's gres (ConstrainDevices=yes, from ${c.source}): each task asks for all of its node's GPU gres`,
    );
  return c.on;
}

/**
 * Pins every task to its node in one remote shell (one round trip, not one per node: a fleet of
 * hundreds of nodes is pinned in about the time of one scontrol call each on the node, without
 * the SSH channel's cost per call). A task whose pinning fails fails the whole submission.
 */
async function pinAll(
  t: Transport,
  items: readonly { jobId: string; node: string; partition: string | null; tres: string | null }[],
): Promise<void> {
  const lines = items.map(({ jobId, node, partition, tres }) => {
    const j = quote(`JobId=${jobId}`);
    const part = partition
      ? `scontrol update ${j} ${quote(`Partition=${partition}`)} 2>&1 && `
      : "";
    // The node's GPU gres, where its devices are confined to what a job holds; Gres= is an
    // older scontrol's spelling.
    const gres = tres
      ? ` && { scontrol update ${j} ${quote(`TresPerNode=${tres}`)} 2>&1 || scontrol update ${j} ${quote(`Gres=${tres.replace(/gres:/g, "")}`)} 2>&1; }`
      : "";
    // ReqNodeList: an older scontrol's spelling of the same field.
    return `out=$( { ${part}{ scontrol update ${j} ${quote(`NodeList=${node}`)} 2>&1 || scontrol update ${j} ${quote(`ReqNodeList=${node}`)} 2>&1; }${gres}; } ); echo "slicecheck-pin ${jobId} $? $(printf %s "$out" | tr '\n' ' ')"`;
  });
  const r = await t.exec({ shell: lines.join("\n") }, { timeoutMs: 60_000 + 2_000 * items.length });
  const done = new Map<string, string>();
  for (const l of r.stdout.split("\n")) {
    const m = /^slicecheck-pin (\S+) (\d+) ?(.*)$/.exec(l);
    if (m) done.set(m[1] as string, m[2] === "0" ? "" : (m[3] ?? "").trim() || `exit ${m[2]}`);
  }
  for (const { jobId, node } of items) {
    const why = done.get(jobId);
    if (why === undefined || why)
      throw new SlicecheckError(
        "SLURM",
        `scontrol update JobId=${jobId} NodeList=${node} on ${t.node.name} failed: ${why ?? (r.stderr.trim() || `no answer (exit ${r.exitCode})`)}`,
      );
  }
}

export async function runViaSlurm(o: ViaSlurmOptions): Promise<ViaSlurmResult> {
  const submit = o.nodes[0];
  if (!submit) throw new SlicecheckError("USAGE", "--via slurm needs at least one node");
  const t = openTransport(submit, { runId: o.runId });
  const jobs: ViaSlurmJob[] = [];
  let arrayId = "";
  let interrupted = false;
  const cancelled = new Set<string>();
  const cancel = async (why: string) => {
    await slurmSh(t, ["scancel", arrayId]);
    o.progress(`${why}: cancelled job array ${arrayId} (scancel ${arrayId})`);
  };
  try {
    await t.connect();
    const info = await nodeInfo(t, o);
    // Before the folders and the array: a refusal leaves nothing behind.
    const tasks = writeTasks(o, info, await confinement(t, o));
    const script = join(o.outDir, "via-slurm.sh");
    const parts = info.map((x) => x.partition);
    const first = parts[0] ?? null;
    const id = await slurmSh(t, [
      "sbatch",
      "--parsable",
      `--array=0-${o.nodes.length - 1}`,
      // Held until every task is pinned to its node: none may start anywhere else.
      "--hold",
      // A clean environment: the submit session's run tag would have its watchdog kill the
      // task when the controller disconnects.
      "--export=NONE",
      ...(first ? [`--partition=${first}`] : []),
      ...(o.reservation ? [`--reservation=${o.reservation}`] : []),
      // Slurm's own bound on a running task: SIGTERM at the limit (slicecheck writes its
      // reports, as on an interrupt), SIGKILL KillWait later; the task then ends TIMEOUT.
      ...(o.timeLimitS ? [`--time=${Math.ceil(o.timeLimitS / 60)}`] : []),
      `--job-name=slicecheck-${o.runId}`,
      `--output=${join(o.outDir, "tasks", "%a", "job.log")}`,
      script,
    ]);
    arrayId = id.trim().split(";")[0] ?? "";
    o.progress(`submitted job array ${arrayId} (held), ${o.nodes.length} task(s)`);
    await pinAll(
      t,
      tasks.map((task, i) => ({
        jobId: `${arrayId}_${i}`,
        node: task.slurmNode,
        partition: parts[i] !== first ? (parts[i] ?? null) : null,
        tres: task.gres,
      })),
    );
    for (const [i, task] of tasks.entries()) {
      const jobId = `${arrayId}_${i}`;
      jobs.push({ ...task, jobId, states: ["PENDING"], ranOn: null, note: null, exitCode: null });
      o.progress(`${task.node}: job ${jobId} pinned to Slurm node ${task.slurmNode}`);
      const why = info[i]?.unavailable;
      if (why) {
        // Cancelled before the release: pending, it would hold the array's later tasks back.
        await slurmSh(t, ["scancel", jobId]);
        cancelled.add(jobId);
        (jobs.at(-1) as ViaSlurmJob).note = `${why}: cancelled before the release`;
        o.progress(`${task.node}: job ${jobId} cancelled: ${why}`);
      }
    }
    // The tasks one by one: releasing the array fails on a task already cancelled.
    const held = jobs.filter((j) => !cancelled.has(j.jobId)).map((j) => j.jobId);
    if (held.length) await slurmSh(t, ["scontrol", "release", held.join(",")]);
    interrupted = await watch(t, o, arrayId, jobs, cancel, cancelled);
  } catch (e) {
    if (arrayId) {
      await cancel("error").catch(() => {});
      if (e instanceof Error) e.message += ` (job array ${arrayId} cancelled)`;
    }
    throw e;
  } finally {
    await t.close().catch(() => {});
  }
  return { ...gatherViaSlurm(o, jobs, interrupted), jobs, arrayId, interrupted };
}

/** Pending tasks go at once; running ones get a SIGTERM first (--full: slicecheck itself, not
 * only the batch shell), so that they stop their workloads and write their reports as a direct
 * run does, before Slurm's KillWait SIGKILL of a plain scancel would. */
async function interruptArray(t: Transport, o: ViaSlurmOptions, arrayId: string): Promise<void> {
  await slurmSh(t, ["scancel", "--state=PENDING", arrayId]);
  await slurmSh(t, ["scancel", "--full", "--signal=TERM", "--state=RUNNING", arrayId]).catch(
    () => {},
  );
  o.progress(
    `interrupted: SIGTERM to the running tasks of job array ${arrayId}, pending ones cancelled`,
  );
}

type TaskState = { state: string; on: string; reason: string };

/** How long squeue may keep failing before the controller gives the watch up: slurmctld
 * restarting takes seconds; one that has not answered for this long (its own SlurmctldTimeout
 * is 120 s by default) is not coming back for this run. Counted in time, not in tries: a try
 * against a dead slurmctld can itself take many seconds. */
const SQUEUE_FAILING_S = 120;

/** The array's tasks by job id; null when squeue failed, for a while to be waited out. -r: one
 * line per array task; -t all: a task that ended stays visible (with its end state) until
 * slurmctld purges it (MinJobAge), and after that it is simply gone. */
async function readArray(
  t: Transport,
  arrayId: string,
  failing: { since: number | null },
): Promise<Map<string, TaskState> | null> {
  let q: string;
  try {
    q = await slurmSh(t, ["squeue", "-h", "-r", "-t", "all", "-j", arrayId, "-o", "%i|%T|%N|%R"]);
    failing.since = null;
  } catch (e) {
    // An array slurmctld has already purged is an invalid job id: every task has ended.
    // Anything else (slurmctld restarting) is waited out a while, never taken for an end.
    if (!/Invalid job id/i.test(String(e))) {
      failing.since ??= Date.now();
      if (Date.now() - failing.since < SQUEUE_FAILING_S * 1000) return null;
      if (e instanceof Error)
        e.message += ` (squeue has failed for ${SQUEUE_FAILING_S} s: slurmctld is not answering)`;
      throw e;
    }
    q = "";
  }
  return new Map(
    q
      .split("\n")
      .filter(Boolean)
      .map((l) => l.split("|"))
      .map(([id = "", state = "", on = "", reason = ""]) => [id, { state, on, reason }]),
  );
}

/** One task's state noted and shown; a pending one given up on is cancelled, saying why. */
async function noteTask(
  t: Transport,
  o: ViaSlurmOptions,
  j: ViaSlurmJob,
  s: TaskState,
  w: {
    interrupted: boolean;
    released: number;
    shown: Map<string, string>;
    unavailable: Map<string, number>;
    cancelled: Set<string>;
    completing: Map<string, number>;
    taken: Set<string>;
  },
): Promise<void> {
  if (s.state === "RUNNING" && s.on) j.ranOn = s.on;
  if (s.state === "RUNNING" && !w.cancelled.has(j.jobId)) j.note = null;
  if (s.state === "PENDING" && !w.cancelled.has(j.jobId)) j.note = `PENDING ${s.reason}`;
  if (j.states.at(-1) !== s.state) j.states.push(s.state);
  const line = ENDED.has(s.state)
    ? `ended (${s.state})`
    : s.state === "RUNNING"
      ? `RUNNING on ${s.on}`
      : `${s.state} ${s.reason}`;
  if (w.shown.get(j.jobId) !== line) {
    w.shown.set(j.jobId, line);
    o.progress(`${j.node}: job ${j.jobId} ${line}`);
  }
  const why =
    s.state === "PENDING" && !w.interrupted && !w.cancelled.has(j.jobId)
      ? giveUp(j, s.reason, (Date.now() - w.released) / 1000, o.startTimeoutS, w.unavailable)
      : null;
  const stuck = stuckCompleting(j, s.state, Date.now() / 1000, w.completing, o.completingGraceS);
  if (stuck) {
    w.taken.add(j.jobId);
    j.note = stuck;
    o.progress(`${j.node}: job ${j.jobId} ${stuck}`);
  }
  if (why) {
    w.cancelled.add(j.jobId);
    await slurmSh(t, ["scancel", j.jobId]);
    j.note = why;
    o.progress(`${j.node}: job ${j.jobId} ${why}`);
  }
}

/** Polls the tasks' states until every one has ended; returns whether it was interrupted. */
async function watch(
  t: Transport,
  o: ViaSlurmOptions,
  arrayId: string,
  jobs: ViaSlurmJob[],
  cancel: (why: string) => Promise<void>,
  /** The tasks the controller has cancelled (given up on), by job id. */
  cancelled: Set<string>,
): Promise<boolean> {
  const w = {
    interrupted: false,
    released: Date.now(),
    shown: new Map<string, string>(),
    /** Since when each pending task's own node has been unavailable, by job id. */
    unavailable: new Map<string, number>(),
    cancelled,
    /** Since when each task has been COMPLETING, and those taken as ended while so, by job id. */
    completing: new Map<string, number>(),
    taken: new Set<string>(),
  };
  const ended = (j: ViaSlurmJob) => ENDED.has(j.states.at(-1) ?? "") || w.taken.has(j.jobId);
  let stopBy = Number.POSITIVE_INFINITY;
  const failing = { since: null as number | null };
  for (;;) {
    if (o.signal?.aborted && !w.interrupted) {
      w.interrupted = true;
      await interruptArray(t, o, arrayId);
      stopBy = Date.now() + 60_000;
    }
    const live = await readArray(t, arrayId, failing);
    if (!live) {
      await sleep(1000, o.signal);
      continue;
    }
    for (const j of jobs.filter((x) => !w.taken.has(x.jobId)))
      await noteTask(t, o, j, live.get(j.jobId) ?? { state: "ENDED", on: "", reason: "" }, w);
    if (jobs.every(ended)) return w.interrupted;
    if (Date.now() > stopBy) {
      await cancel("the tasks did not stop within 60 s of the interrupt");
      return w.interrupted;
    }
    await sleep(1000, w.interrupted ? undefined : o.signal);
  }
}
