// slurm: per node, Slurm's view of the GPUs against the live MIG instances, then one probe job
// per MIG profile through the real scheduler. Checks: Slurm knows the node (its version is
// recorded); its gres (scontrol, and gres.conf when readable) counts what the instances are,
// per profile type, with no whole-card gpu gres left on a MIG GPU; no MIG gres in a whole-card
// partition; a job asking for `gpu:<profile>:1` lands on exactly one instance of that profile
// and computes there. Every problem is a check result with its evidence, never a crash. The
// nodes' work (lib/slurm-node.ts) runs side by side; the tests judge from what it brought back.
import {
  broken,
  current,
  fail,
  forEachNode,
  harness,
  notAssessed,
  type SuiteNode,
  slurm,
} from "slicecheck/suite";
import { brokenIf } from "./lib/judge.js";
import {
  type NodeWork,
  nodeWork,
  type ProbeRun,
  type SlurmView,
  STRESS_S,
} from "./lib/slurm-node.js";

const {
  CONFINEMENT_TITLE,
  compareGres,
  isMigCapableGres,
  isMigType,
  judgeConfinement,
  parseCgroupConf,
  parseGresConf,
  parseProbe,
  probeDevice,
} = slurm;
type SlurmNodeInfo = slurm.SlurmNodeInfo;
type ConfinementInput = slurm.ConfinementInput;

// What the run prepares for this suite, and how reports label it.
const run = harness({
  unfitOnFailure: true,
  labels: { epic: "MIG partition validation", feature: "Slurm", severity: "critical" },
});

const wholeCardPartition = (v: SlurmView, p: string) =>
  (v.partitions.get(p) ?? []).some((n) =>
    v.all.find((x) => x.name === n)?.gres.some((g) => g.name === "gpu" && !isMigType(g.type)),
  );

type Ready = SlurmView & { me: SlurmNodeInfo };

/** A probe job's check, judged from the job as it ran (or how far it got), in the order the
 * probe went: the window on the node, the stress program, then what the job saw and did. */
function judgeProbe(node: SuiteNode, v: Ready, pr: ProbeRun, seen: ConfinementInput[]): void {
  const name = node.slurmNode;
  const c = current();
  if (pr.openError !== undefined)
    broken(
      "SLURM",
      `could not open ${name}, which this run drained, to its probe jobs: ${pr.openError}`,
    );
  const w = pr.window;
  if (w && !w.opened && /DRAIN|DOWN/.test(v.me.state))
    broken(
      "SLURM_NODE_DRAINED",
      `${name} is ${v.me.state}${v.me.reason ? ` (${v.me.reason})` : ""}, not by this run: Slurm starts no probe job on it (with --drain a run opens the nodes it drained to its own probes)`,
    );
  if (w?.reservation) c.parameter("reservation", w.reservation);
  if (pr.buildError !== undefined)
    broken("WORKLOAD_BUILD", `no stress for the probe job: ${pr.buildError}`);
  if (pr.thrown !== undefined) throw pr.thrown;
  const job = pr.job as NonNullable<ProbeRun["job"]>;
  // The check spans its job, which ran beside the tests before it.
  c.window(job.startMs, job.startMs + job.wallMs);
  judgeJob(node, job, seen);
}

function judgeJob(
  node: SuiteNode,
  job: NonNullable<ProbeRun["job"]>,
  seen: ConfinementInput[],
): void {
  const name = node.slurmNode;
  const c = current();
  const { argv, gres, type, answer: r, wallMs } = job;
  const p = parseProbe(r.stdout);
  c.evidence(
    "srun",
    `${argv.slice(0, -1).join(" ")} <probe>\nexit ${r.exitCode}\n${r.stdout}${r.stderr}`,
  );
  c.figures({ wallMs, latencyMs: wallMs - STRESS_S * 1000, tflops: p.tflops });
  if (!p.node)
    fail(
      "SLURM_PROBE",
      `no probe job ran for ${gres}:${type}:1 on ${name} (srun exit ${r.exitCode}): ${r.stderr.trim().split("\n").slice(-2).join(" ")}`,
    );
  const dev = probeDevice(p);
  seen.push({
    asked: `${gres}:${type}:1`,
    allocated: dev.kind === "uuid" ? dev.uuid : null,
    answer: p,
  });
  c.parameter("CUDA_VISIBLE_DEVICES in the job", p.cvdSet ? p.cvd || "(empty)" : "(unset)");
  if (dev.kind === "unmapped") broken("SLURM_PROBE_UNMAPPED", `the job on ${p.node}: ${dev.why}`);
  if (dev.kind !== "uuid")
    fail(
      "SLURM_PROBE_DEVICE",
      `the job on ${p.node} was not given exactly one device for ${gres}:${type}:1: ${dev.why}`,
    );
  const got = node.instances.find((i) => i.uuid === dev.uuid);
  if (!got)
    fail("SLURM_PROBE_DEVICE", `the job got ${dev.uuid}, which is no MIG instance of ${node.name}`);
  c.parameter("landed on", `${got.label} ${got.profile} ${got.uuid}`);
  c.parameter(
    "device named by",
    dev.via === "mig-minors" ? `${p.file} (mig-minors: ${p.mig})` : "CUDA_VISIBLE_DEVICES",
  );
  judgeCompute(node, job, p, got);
}

/** The job landed on `got`: it is of the asked profile, its CUDA computes there, without errors. */
function judgeCompute(
  node: SuiteNode,
  job: NonNullable<ProbeRun["job"]>,
  p: slurm.ProbeAnswer,
  got: SuiteNode["instances"][number],
): void {
  const c = current();
  const { gres, type, answer: r, wallMs } = job;
  if (got.profile !== job.profile)
    fail(
      "SLURM_PROBE_WRONG_PROFILE",
      `a job asking for ${gres}:${type}:1 landed on ${got.label}, a ${got.profile} instance (${got.uuid}): Slurm's gres types do not match the devices`,
    );
  // What the tenant's own CUDA runs on, with nothing set by the probe.
  if (!p.cudaUuid)
    fail(
      "SLURM_PROBE_DEVICE",
      `Slurm allocated ${got.label} to the job, but its CUDA sees no device (CUDA_VISIBLE_DEVICES${p.cvdSet ? `=${p.cvd ?? ""}` : " unset"} as Slurm left it): ${p.cudaError ?? `stress exit ${p.stressExit}`}`,
    );
  if (p.cudaUuid !== got.uuid) {
    const other = node.instances.find((i) => i.uuid === p.cudaUuid);
    fail(
      "SLURM_PROBE_DEVICE",
      `Slurm allocated ${got.label} (${got.uuid}) to the job, but its CUDA computes on ${other ? `${other.label}, a ${other.profile} instance` : "another device"} (${p.cudaUuid})`,
    );
  }
  c.parameter("job's CUDA computes on", `${got.label} ${got.uuid}`);
  if (p.errors === null || r.exitCode !== 0)
    fail(
      "STRESS_FAILED",
      `the stress inside the job on ${got.label} did not finish (exit ${r.exitCode})`,
    );
  if (p.errors > 0)
    fail("STRESS_FAILED", `the stress inside the job on ${got.label} counted ${p.errors} error(s)`);
  c.note(`job landed on ${got.label} (${got.uuid}); ${p.tflops} TFLOP/s; ${wallMs} ms`);
}

/** What the probe jobs saw, judged: a tenant's job reaches its own instance and nothing else. */
function judgeConfined(node: SuiteNode, v: Ready, seen: ConfinementInput[], tried: number): void {
  const name = node.slurmNode;
  const c = current();
  const cg = v.cgroupConf.text === null ? null : parseCgroupConf(v.cgroupConf.text);
  const constrain = cg?.constrainDevices ?? null;
  const said =
    cg === null
      ? `${v.cgroupConf.path} not readable (${v.cgroupConf.why ?? "?"})`
      : `ConstrainDevices=${constrain ?? "(not set: Slurm's default, no)"}`;
  c.parameter("ConstrainDevices", cg === null ? "unknown" : (constrain ?? "unset (no)"));
  if (v.cgroupConf.text !== null) c.evidence(v.cgroupConf.path, v.cgroupConf.text);
  if (seen.length === 0)
    broken(
      "SLURM_PROBE",
      `no probe job ran on ${name} (${tried} tried): confinement NOT ASSESSED (${said})`,
    );
  const j = judgeConfinement(seen, node.instances);
  c.figures({ ...j.figures, constrainDevices: constrain ?? "unset" });
  if (!j.observed)
    broken(
      "SLURM_PROBE",
      `the probe jobs on ${name} listed no instance, opened no cap and had no neighbour to try: confinement NOT ASSESSED (${said})`,
    );
  if (j.problems.length)
    fail(
      "TENANT_NOT_CONFINED",
      `a job on ${name} reaches more than its allocation (${said}): ${j.problems.join(" | ")}`,
    );
  c.note(
    `${seen.length} job(s) on ${name}: each saw only its own instance, opened no other GPU instance's caps, and was refused ${j.figures.neighboursTried} neighbour UUID(s) (${said})`,
  );
}

/** The gres check's evidence and comparisons: scontrol's, and gres.conf's where readable. */
function judgeGres(node: SuiteNode, v: Ready): void {
  const name = node.slurmNode as string;
  const c = current();
  const live = {
    profiles: node.instances.filter((i) => i.gpuInstanceId !== null).map((i) => i.profile),
    wholeCards: node.gpus.filter((g) => !g.migEnabled).length,
    migGpus: node.gpus.filter((g) => g.migEnabled).length,
  };
  const gpuGres = v.me.gres.filter((g) => isMigCapableGres(g.name));
  const bySlurm = compareGres("scontrol", gpuGres, live);
  const problems = [...bySlurm.problems];
  let figures = bySlurm.figures;
  c.evidence(
    "scontrol show node -o",
    v.raw.split("\n").find((l) => l.startsWith(`NodeName=${name} `)) ?? "",
  );
  c.evidence(
    "live instances",
    node.instances.map((i) => `${i.label} ${i.profile} ${i.uuid}`).join("\n"),
  );
  if (v.gresConf.text !== null) {
    const conf = parseGresConf(v.gresConf.text, name);
    c.evidence(v.gresConf.path, v.gresConf.text);
    if (conf.autoDetect)
      c.note(`gres.conf: AutoDetect=${conf.autoDetect} (slurmd asks NVML for the devices)`);
    if (conf.lines.length > 0) {
      const byFile = compareGres("gres.conf", conf.lines, live);
      problems.push(...byFile.problems);
      figures = { ...figures, ...byFile.figures };
    }
  } else c.note(`${v.gresConf.path} not readable (${v.gresConf.why ?? "?"}); scontrol only`);
  c.figures(figures);
  if (problems.length) fail("SLURM_GRES_MISMATCH", `${name}: ${problems.join("; ")}`);
}

describe("slurm", () => {
  // Every node's Slurm view and probe jobs at once (at most --concurrency at a time), each
  // node's tests awaiting its own: run in each node's `before` and its tests, mocha would run
  // the nodes one after another. A node's own probes stay one after another, as before.
  const profilesOf = (node: SuiteNode) =>
    [
      ...new Set(node.instances.filter((i) => i.gpuInstanceId !== null).map((i) => i.profile)),
    ].sort();
  const work = run.eachNode((node) => nodeWork(run, node, profilesOf(node)));
  before(() => work.start());
  forEachNode(run.nodes, (node) => {
    const name = node.slurmNode;
    const got = (): Promise<NodeWork> =>
      work
        .result(node)
        .catch((e: Error) => ({ view: null, problem: e.message, probes: new Map() }));
    const ready = async (): Promise<Ready & { work: NodeWork }> => {
      brokenIf(node.error);
      if (!name)
        broken(
          "SLURM_NOT_CONFIGURED",
          `the inventory names no slurm_node for ${node.name}; set it to the node's name in Slurm`,
        );
      const w = await got();
      brokenIf(w.problem, "SLURM_UNREADABLE");
      const v = w.view as SlurmView;
      if (!v.me)
        fail(
          "SLURM_NODE_UNKNOWN",
          `Slurm has no node ${name}: ${v.all.map((n) => n.name).join(", ") || "no nodes at all"}`,
        );
      return { ...(v as Ready), work: w };
    };
    const migProfiles = profilesOf(node);

    it("Slurm knows the node", async () => {
      const v = await ready();
      const c = current();
      c.figures({ slurmVersion: v.version, state: v.me.state });
      c.parameter("Slurm version", v.version ?? "unknown");
      c.note(`${name}: ${v.me.state}${v.me.reason ? ` (${v.me.reason})` : ""}, Slurm ${v.version}`);
    });

    it("gres matches the MIG instances", async () => judgeGres(node, await ready()));

    if (migProfiles.length > 0)
      it("MIG gres only in MIG partitions", async () => {
        const v = await ready();
        const whole = v.me.partitions.filter((p) => wholeCardPartition(v, p));
        current().figures({ partitions: v.me.partitions.join(",") });
        if (whole.length)
          fail(
            "SLURM_PARTITION",
            `${name} offers MIG gres but is in whole-card partition(s) ${whole.join(", ")} (other nodes there offer whole GPUs): a job asking for a GPU there may get a MIG slice`,
          );
      });

    // What each probe job saw, for the confinement check after them.
    const seen: ConfinementInput[] = [];
    let probes = 0;
    for (const profile of migProfiles)
      it(`probe job on ${profile} lands on one ${profile} instance`, async () => {
        const v = await ready();
        probes++;
        const p = v.work.probes.get(profile);
        if (!p) return broken("INTERNAL", `no probe job came back for ${profile} on ${name}`);
        judgeProbe(node, v, p, seen);
      });

    // A tenant's job reaches its own instance and nothing else, as the job itself sees it.
    if (migProfiles.length > 0 || !name)
      it(CONFINEMENT_TITLE, async () => {
        if (!node.error && !name)
          notAssessed(
            "NOT_ASSESSED",
            `${node.name} has no scheduler (no slurm_node): the harness is root there and sees every instance, so what a tenant can reach is NOT ASSESSED; set slurm_node to probe it through Slurm`,
          );
        judgeConfined(node, await ready(), seen, probes);
      });
  });
});
