// slurm: per node, Slurm's view of the GPUs against the live MIG instances, then one probe job
// per MIG profile through the real scheduler. Checks: Slurm knows the node (its version is
// recorded); its gres (scontrol, and gres.conf when readable) counts what the instances are,
// per profile type, with no whole-card gpu gres left on a MIG GPU; no MIG gres in a whole-card
// partition; a job asking for `gpu:<profile>:1` lands on exactly one instance of that profile
// and computes there. Every problem is a check result with its evidence, never a crash.
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

const {
  CONFINEMENT_TITLE,
  compareGres,
  gresType,
  isMigCapableGres,
  isMigType,
  judgeConfinement,
  migGresName,
  parseCgroupConf,
  parseGresConf,
  parseNodes,
  parsePartitions,
  parseProbe,
  probeDevice,
  probeScript,
} = slurm;
type SlurmNodeInfo = slurm.SlurmNodeInfo;
type ConfinementInput = slurm.ConfinementInput;

// What the run prepares for this suite, and how reports label it.
const run = harness({
  unfitOnFailure: true,
  labels: { epic: "MIG partition validation", feature: "Slurm", severity: "critical" },
});
const STRESS_S = 2;

interface SlurmView {
  me: SlurmNodeInfo | null;
  all: SlurmNodeInfo[];
  partitions: Map<string, string[]>;
  version: string | null;
  gresConf: { path: string; text: string | null; why: string | null };
  cgroupConf: { path: string; text: string | null; why: string | null };
  raw: string;
}

async function read(node: SuiteNode, name: string): Promise<SlurmView> {
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

const wholeCardPartition = (v: SlurmView, p: string) =>
  (v.partitions.get(p) ?? []).some((n) =>
    v.all.find((x) => x.name === n)?.gres.some((g) => g.name === "gpu" && !isMigType(g.type)),
  );

describe("slurm", () => {
  forEachNode(run.nodes, (node) => {
    const name = node.slurmNode;
    let view: SlurmView | null = null;
    let problem: string | null = null;
    before(async () => {
      if (node.error || !name) return;
      try {
        view = await read(node, name);
      } catch (e) {
        problem = (e as Error).message;
      }
    });
    const ready = (): SlurmView & { me: SlurmNodeInfo } => {
      brokenIf(node.error);
      if (!name)
        broken(
          "SLURM_NOT_CONFIGURED",
          `the inventory names no slurm_node for ${node.name}; set it to the node's name in Slurm`,
        );
      brokenIf(problem, "SLURM_UNREADABLE");
      const v = view as SlurmView;
      if (!v.me)
        fail(
          "SLURM_NODE_UNKNOWN",
          `Slurm has no node ${name}: ${v.all.map((n) => n.name).join(", ") || "no nodes at all"}`,
        );
      return v as SlurmView & { me: SlurmNodeInfo };
    };
    const migProfiles = node.instances.filter((i) => i.gpuInstanceId !== null);

    it("Slurm knows the node", () => {
      const v = ready();
      const c = current();
      c.figures({ slurmVersion: v.version, state: v.me.state });
      c.parameter("Slurm version", v.version ?? "unknown");
      c.note(`${name}: ${v.me.state}${v.me.reason ? ` (${v.me.reason})` : ""}, Slurm ${v.version}`);
    });

    it("gres matches the MIG instances", () => {
      const v = ready();
      const c = current();
      const live = {
        profiles: migProfiles.map((i) => i.profile),
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
        const conf = parseGresConf(v.gresConf.text, name as string);
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
    });

    if (migProfiles.length > 0)
      it("MIG gres only in MIG partitions", () => {
        const v = ready();
        const whole = v.me.partitions.filter((p) => wholeCardPartition(v, p));
        current().figures({ partitions: v.me.partitions.join(",") });
        if (whole.length)
          fail(
            "SLURM_PARTITION",
            `${name} offers MIG gres but is in whole-card partition(s) ${whole.join(", ")} (other nodes there offer whole GPUs): a job asking for a GPU there may get a MIG slice`,
          );
      });

    // The probes' window on the node: where this run drained it, a reservation of the run's
    // own with the node resumed under it for as long as the probes run; drained again after.
    const jobs = run.slurmJobs(node);
    // A close that fails is tried again by the run's teardown, before it resumes the node.
    after(() => jobs.close().catch(() => {}));

    // What each probe job saw, for the confinement check after them.
    const seen: ConfinementInput[] = [];
    let probes = 0;
    for (const profile of [...new Set(migProfiles.map((i) => i.profile))].sort())
      it(`probe job on ${profile} lands on one ${profile} instance`, async () => {
        const v = ready();
        const c = current();
        probes++;
        const w = await jobs
          .open()
          .catch((e: Error) =>
            broken(
              "SLURM",
              `could not open ${name}, which this run drained, to its probe jobs: ${e.message}`,
            ),
          );
        if (!w.opened && /DRAIN|DOWN/.test(v.me.state))
          broken(
            "SLURM_NODE_DRAINED",
            `${name} is ${v.me.state}${v.me.reason ? ` (${v.me.reason})` : ""}, not by this run: Slurm starts no probe job on it (with --drain a run opens the nodes it drained to its own probes)`,
          );
        if (w.reservation) c.parameter("reservation", w.reservation);
        const stress = await run
          .program(node, "stress")
          .catch((e: Error) =>
            broken("WORKLOAD_BUILD", `no stress for the probe job: ${e.message}`),
          );
        const type = gresType(profile);
        // The site's naming: Slurm's typed gpu gres, or the document's `mig:<profile>`.
        const gres = migGresName(v.me.gres);
        const partition = v.me.partitions[0];
        const argv = [
          "srun",
          `--nodelist=${name}`,
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
        const t0 = Date.now();
        // Inside a Slurm job (a --via slurm task) srun would make a step of that job, which
        // holds no GPU: the probe is a job of its own, so the job's SLURM_* variables go
        // (SLURM_CONF, which names the cluster, stays), and so does a CUDA_VISIBLE_DEVICES of
        // the caller's: the job runs with what Slurm gives it, nothing of ours.
        const clean =
          'for v in $(env | sed -n "s/^\\(SLURM_[A-Z0-9_]*\\)=.*/\\1/p"); do [ "$v" = SLURM_CONF ] || unset "$v"; done; unset CUDA_VISIBLE_DEVICES; exec "$@"';
        const r = await node.exec(["sh", "-c", clean, "sh", ...argv], { timeoutS: 120 });
        const wallMs = Date.now() - t0;
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
        if (dev.kind === "unmapped")
          broken("SLURM_PROBE_UNMAPPED", `the job on ${p.node}: ${dev.why}`);
        if (dev.kind !== "uuid")
          fail(
            "SLURM_PROBE_DEVICE",
            `the job on ${p.node} was not given exactly one device for ${gres}:${type}:1: ${dev.why}`,
          );
        const got = node.instances.find((i) => i.uuid === dev.uuid);
        if (!got)
          fail(
            "SLURM_PROBE_DEVICE",
            `the job got ${dev.uuid}, which is no MIG instance of ${node.name}`,
          );
        c.parameter("landed on", `${got.label} ${got.profile} ${got.uuid}`);
        c.parameter(
          "device named by",
          dev.via === "mig-minors" ? `${p.file} (mig-minors: ${p.mig})` : "CUDA_VISIBLE_DEVICES",
        );
        if (got.profile !== profile)
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
          fail(
            "STRESS_FAILED",
            `the stress inside the job on ${got.label} counted ${p.errors} error(s)`,
          );
        c.note(`job landed on ${got.label} (${got.uuid}); ${p.tflops} TFLOP/s; ${wallMs} ms`);
      });

    // A tenant's job reaches its own instance and nothing else, as the job itself sees it.
    if (migProfiles.length > 0 || !name)
      it(CONFINEMENT_TITLE, () => {
        if (!node.error && !name)
          notAssessed(
            "NOT_ASSESSED",
            `${node.name} has no scheduler (no slurm_node): the harness is root there and sees every instance, so what a tenant can reach is NOT ASSESSED; set slurm_node to probe it through Slurm`,
          );
        const v = ready();
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
            `no probe job ran on ${name} (${probes} tried): confinement NOT ASSESSED (${said})`,
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
      });
  });
});
