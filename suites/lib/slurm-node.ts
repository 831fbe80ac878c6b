// The slurm suite's work on one node, apart from its judging: the node's Slurm view (scontrol,
// gres.conf, cgroup.conf) and then one probe job per MIG profile, one after another on the
// node. The suite starts this for every node at once (run.eachNode), so that N nodes take the
// time of one; its tests then judge from what came back. Nothing here judges: whatever went
// wrong is kept for the test that reports it, so each check says what it said when the test
// ran the work itself. Users' suites may copy it: it uses only the public API.
import { type ExecAnswer, type SuiteNode, type SuiteRun, slurm } from "slicecheck/suite";

const { gresType, migGresName, parseNodes, parsePartitions, probeScript } = slurm;
type SlurmNodeInfo = slurm.SlurmNodeInfo;

/** How long the stress inside each probe job runs (s). */
export const STRESS_S = 2;

export interface SlurmView {
  me: SlurmNodeInfo | null;
  all: SlurmNodeInfo[];
  partitions: Map<string, string[]>;
  version: string | null;
  gresConf: { path: string; text: string | null; why: string | null };
  cgroupConf: { path: string; text: string | null; why: string | null };
  raw: string;
}

/** One probe job as it ran, or how far it got: the test replays these in order. */
export interface ProbeRun {
  /** Why the run could not open the node it drained to its own jobs. */
  openError?: string;
  window?: { reservation: string | null; opened: boolean };
  /** Why no stress program was there for the job. */
  buildError?: string;
  /** What the job's srun threw (a lost connection): the test throws it as today. */
  thrown?: unknown;
  job?: {
    profile: string;
    argv: string[];
    gres: "gpu" | "mig";
    type: string;
    answer: ExecAnswer;
    startMs: number;
    wallMs: number;
  };
}

/** The node's view (or why it could not be read) and its probes by profile. */
export interface NodeWork {
  view: SlurmView | null;
  problem: string | null;
  probes: Map<string, ProbeRun>;
}

type Jobs = ReturnType<SuiteRun["slurmJobs"]>;

export async function readView(node: SuiteNode, name: string): Promise<SlurmView> {
  const sh = async (cmd: string) => {
    const r = await node.exec({ shell: cmd }, { timeoutS: 60 });
    return { ok: r.exitCode === 0, out: r.stdout, err: r.stderr.trim() };
  };
  const nodes = await sh("scontrol show node -o");
  if (!nodes.ok)
    throw new Error(`scontrol show node failed: ${nodes.err || "no output"} (is Slurm up?)`);
  const parts = await sh("scontrol show partition -o");
  const version = await sh("scontrol version");
  const conf = await sh("scontrol show config | sed -n 's/^SLURM_CONF *= *//p'");
  const confDir = (conf.out.trim() || "/etc/slurm/slurm.conf").replace(/\/[^/]*$/, "");
  const cat = (p: string) => sh(`cat '${p.replace(/'/g, "'\\''")}'`);
  const path = `${confDir}/gres.conf`;
  const gres = await cat(path);
  // Read on the node, where slurmd reads it (a cgroup.conf is per cluster, like slurm.conf).
  const cgPath = `${confDir}/cgroup.conf`;
  const cg = await cat(cgPath);
  const all = parseNodes(nodes.out);
  return {
    me: all.find((n) => n.name === name) ?? null,
    all,
    partitions: parsePartitions(parts.out),
    version: version.out.trim().replace(/^slurm(-wlm)?\s+/, "") || null,
    gresConf: { path, text: gres.ok ? gres.out : null, why: gres.ok ? null : gres.err },
    cgroupConf: { path: cgPath, text: cg.ok ? cg.out : null, why: cg.ok ? null : cg.err },
    raw: nodes.out,
  };
}

/** The view, then each profile's probe job in turn; the run's window on the node closed after. */
export async function nodeWork(
  run: SuiteRun,
  node: SuiteNode,
  profiles: readonly string[],
): Promise<NodeWork> {
  const out: NodeWork = { view: null, problem: null, probes: new Map() };
  const name = node.slurmNode;
  if (node.error || !name) return out;
  try {
    out.view = await readView(node, name);
  } catch (e) {
    out.problem = (e as Error).message;
    return out;
  }
  const me = out.view.me;
  if (!me) return out;
  // The probes' window on the node: where this run drained it, a reservation of the run's own
  // with the node resumed under it for as long as its probes run; drained again after.
  const jobs = run.slurmJobs(node);
  try {
    for (const p of profiles) out.probes.set(p, await probe(run, node, me, p, jobs));
  } finally {
    // A close that fails is tried again by the run's teardown, before it resumes the node.
    await jobs.close().catch(() => {});
  }
  return out;
}

// Inside a Slurm job (a --via slurm task) srun would make a step of that job, which holds no
// GPU: the probe is a job of its own, so the job's SLURM_* variables go (SLURM_CONF, which names
// the cluster, stays), and so does a CUDA_VISIBLE_DEVICES of the caller's: the job runs with
// what Slurm gives it, nothing of ours.
const CLEAN =
  'for v in $(env | sed -n "s/^\\(SLURM_[A-Z0-9_]*\\)=.*/\\1/p"); do [ "$v" = SLURM_CONF ] || unset "$v"; done; unset CUDA_VISIBLE_DEVICES; exec "$@"';

/** One probe job through srun on the node, for one instance of `profile`. */
async function probe(
  run: SuiteRun,
  node: SuiteNode,
  me: SlurmNodeInfo,
  profile: string,
  jobs: Jobs,
): Promise<ProbeRun> {
  let w: ProbeRun["window"];
  try {
    w = await jobs.open();
  } catch (e) {
    return { openError: (e as Error).message };
  }
  // A node drained by someone else takes no job: the test says so, no srun is tried.
  if (!w.opened && /DRAIN|DOWN/.test(me.state)) return { window: w };
  let stress: string;
  try {
    stress = await run.program(node, "stress");
  } catch (e) {
    return { window: w, buildError: (e as Error).message };
  }
  const type = gresType(profile);
  // The site's naming: Slurm's typed gpu gres, or the document's `mig:<profile>`.
  const gres = migGresName(me.gres);
  const partition = me.partitions[0];
  const argv = [
    "srun",
    `--nodelist=${node.slurmNode}`,
    ...(partition ? [`--partition=${partition}`] : []),
    ...(w.reservation ? [`--reservation=${w.reservation}`] : []),
    `--gres=${gres}:${type}:1`,
    "-N1",
    "-n1",
    "--time=2",
    "--immediate=60",
    "--job-name=slicecheck-probe",
    "sh",
    "-c",
    probeScript(STRESS_S, node.instances, stress, gres),
  ];
  const startMs = Date.now();
  try {
    const answer = await node.exec(["sh", "-c", CLEAN, "sh", ...argv], { timeoutS: 120 });
    return {
      window: w,
      job: { profile, argv, gres, type, answer, startMs, wallMs: Date.now() - startMs },
    };
  } catch (e) {
    return { window: w, thrown: e };
  }
}
