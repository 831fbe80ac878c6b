// Communication paths besides one rank per instance (reference workloads.md 1.5, mig-reference
// "Other"): NCCL across two MIG instances of one GPU is refused or slow, a documented constraint
// that is recorded with its outcome and never fails the node; an all_reduce across whole GPUs
// gives the bus bandwidth that slicing gives up; each profile's P2P column of `-lgip` says which
// instances could talk peer to peer. Pure: they read the outputs the suite collected.
import { parseLgip } from "../nvsmi/lgip.js";
import { parseNcclTests } from "../workloads/parsers/nccl-tests.js";
import type { Verdict } from "./types.js";

export interface CommOutput {
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

const v = (
  name: string,
  status: Verdict["status"],
  summary: string,
  figures: Verdict["evidence"]["figures"],
  text: string,
  documented = false,
): Verdict => ({
  name,
  status,
  summary,
  evidence: { figures, logLines: text.trimEnd().split("\n").slice(-8) },
  ...(documented ? { kind: "documented-constraint" as const } : {}),
});

/** The documented refusals: CUDA enumerates one MIG device per process (nccl-tests' message),
 * NCCL < 2.30 sees the parent GPU twice, NCCL 2.30+ asks for NCCL_MULTI_RANK_GPU_ENABLE. */
const REFUSALS: readonly { re: RegExp; why: string }[] = [
  {
    re: /Invalid number of GPUs: \d+ requested but only \d+ were found/,
    why: "CUDA enumerates one MIG device per process",
  },
  { re: /Duplicate GPU detected/, why: "NCCL sees the parent GPU for both ranks" },
  {
    re: /Multiple Ranks are using the same GPU\/Partition/,
    why: "NCCL refuses several ranks on one GPU without NCCL_MULTI_RANK_GPU_ENABLE",
  },
];

/** A two-rank all_reduce across two MIG instances of one GPU: refused as documented, or run on
 * the slow path (no P2P between instances: shared memory) with its bus bandwidth. Either is the
 * expected outcome, a documented constraint; anything else could not be decided. */
export function crossInstance(o: CommOutput): Verdict {
  const name = "crossInstanceNccl";
  const text = `${o.stdout}\n${o.stderr}`;
  const refusal = REFUSALS.find((r) => r.re.test(text));
  if (refusal && o.exitCode !== 0)
    return v(
      name,
      "passed",
      `refused, as documented: ${refusal.why} (${refusal.re.exec(text)![0]}; exit ${o.exitCode}); one rank per instance is the supported path`,
      { outcome: "refused", exitCode: o.exitCode },
      text,
      true,
    );
  if (o.exitCode === 0) {
    let busbw: number | null = null;
    try {
      busbw = parseNcclTests(o.stdout).avgBusBandwidth;
    } catch {
      busbw = null;
    }
    return v(
      name,
      "passed",
      `ran on the slow path (no P2P between MIG instances): average bus bandwidth ${busbw ?? "?"} GB/s`,
      { outcome: "slow-path", "busbw GB/s": busbw },
      text,
      true,
    );
  }
  return v(
    name,
    "broken",
    `neither the documented refusal nor a run: exit ${o.exitCode ?? "none (killed at its deadline)"}`,
    { outcome: "undecided", exitCode: o.exitCode },
    text,
  );
}

/** all_reduce_perf -g N over N whole GPUs: completes with no wrong results; its bus bandwidth. */
export function multiGpu(o: CommOutput, gpus: number): Verdict {
  const name = "multiGpuAllReduce";
  const text = `${o.stdout}\n${o.stderr}`;
  if (o.exitCode === null || o.exitCode >= 124)
    return v(name, "broken", `killed at its deadline (exit ${o.exitCode})`, { gpus }, text);
  let r: ReturnType<typeof parseNcclTests>;
  try {
    r = parseNcclTests(o.stdout);
  } catch (e) {
    return v(
      name,
      "broken",
      `its output could not be read: ${(e as Error).message}`,
      { gpus },
      text,
    );
  }
  const wrong = r.rows.reduce((a, x) => a + (x.outOfPlace.wrong ?? 0) + (x.inPlace.wrong ?? 0), 0);
  const figures = {
    gpus,
    ranks: r.ranks.length,
    "busbw GB/s": r.avgBusBandwidth,
    "largest size algbw GB/s": r.rows.at(-1)?.outOfPlace.algbw ?? null,
    wrong,
  };
  if (o.exitCode !== 0 || wrong > 0 || (r.outOfBounds ?? 0) > 0 || r.failures.length > 0)
    return v(
      name,
      "failed",
      `all_reduce over ${gpus} GPUs failed: exit ${o.exitCode}, ${wrong} wrong, ${r.failures.map((f) => f.message).join("; ") || "no failure line"}`,
      figures,
      text,
    );
  if (r.ranks.length !== gpus)
    return v(name, "broken", `${r.ranks.length} rank(s) came up, not ${gpus}`, figures, text);
  return v(
    name,
    "passed",
    `${gpus} whole GPUs: average bus bandwidth ${r.avgBusBandwidth} GB/s, no wrong results`,
    figures,
    text,
  );
}

/** Each profile's P2P capability on one GPU, from `nvidia-smi mig -lgip -i N`. */
export function p2pOfProfiles(lgip: string, gpu: number): Verdict {
  const name = "profilesP2P";
  let profiles: { name: string; p2p: boolean }[];
  try {
    profiles = parseLgip(lgip).gpus.find((g) => g.index === gpu)?.profiles ?? [];
  } catch (e) {
    return v(name, "broken", `nvidia-smi mig -lgip: ${(e as Error).message}`, {}, lgip);
  }
  if (profiles.length === 0) return v(name, "broken", "no profile was listed", {}, lgip);
  const figures = Object.fromEntries(profiles.map((p) => [`${p.name} P2P`, p.p2p ? "Yes" : "No"]));
  const yes = profiles.filter((p) => p.p2p).map((p) => p.name);
  return v(
    name,
    "passed",
    yes.length
      ? `P2P on ${yes.join(", ")}; not on the other ${profiles.length - yes.length} profile(s)`
      : `no profile offers P2P (${profiles.length} listed): instances talk through host memory`,
    figures,
    lgip,
  );
}

// One rank per device in separate processes (workloads/allreduce.cu): comm-ranks.ts.
export {
  crossInstanceFailCode,
  crossInstanceRanks,
  type WholeCardFigure,
  wholeCardExpectation,
  wholeGpuRanks,
} from "./comm-ranks.js";
