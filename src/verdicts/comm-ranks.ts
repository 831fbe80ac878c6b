// The multi-process all_reduce (one rank per device, workloads/allreduce.cu) judged from what
// each rank printed. Across MIG instances of one GPU the documented path is host memory (SHM)
// or the network (NET), never peer-to-peer: no CUDA P2P or IPC between instances (reference
// workloads.md 1.5: sjeaugey in NVIDIA/nccl#1716, the RAPIDS MIG page), so it is well below
// what the whole card does. A cross-instance run that claims P2P (or NVLink SHARP) contradicts
// that model and fails; no transport line, a hung rank or unreadable output is undecided.
// Pure: the suite collects the outputs (src/workloads/ranks.ts).
import { type AllreduceReport, parseBuiltinOutput } from "../workloads/parsers/builtin.js";
import { parseNcclTransports } from "../workloads/parsers/nccl-transport.js";
import type { RankOutput } from "../workloads/ranks.js";
import type { Verdict } from "./types.js";

/** The figure a cross-instance busbw is compared with: a measured whole-card run, or the
 * product's expectation when the card is partitioned. */
export interface WholeCardFigure {
  busbw: number;
  source: string;
}

/** NCCL's documented refusals of several ranks on one GPU (reference workloads.md 1.5). */
const REFUSALS: readonly { re: RegExp; why: string }[] = [
  { re: /Duplicate GPU detected/, why: "NCCL < 2.30 sees the parent GPU for every rank" },
  {
    re: /Multiple Ranks are using the same GPU\/Partition/,
    why: "NCCL 2.30+ refuses several ranks on one GPU without NCCL_MULTI_RANK_GPU_ENABLE",
  },
];

const DEADLINE = new Set([124, 137]);

const verdict = (
  status: Verdict["status"],
  summary: string,
  figures: Verdict["evidence"]["figures"],
  text: string,
  kind?: Verdict["kind"],
): Verdict => ({
  name: "crossInstanceRanks",
  status,
  summary,
  evidence: { figures, logLines: text.trimEnd().split("\n").slice(-12) },
  ...(kind ? { kind } : {}),
});

interface Read {
  reports: AllreduceReport[];
  transports: string[];
  via: string[];
}

function readRanks(ranks: readonly RankOutput[]): Read | string {
  const reports: AllreduceReport[] = [];
  const transports = new Set<string>();
  const via = new Set<string>();
  for (const r of ranks) {
    let a: AllreduceReport | null;
    try {
      a = parseBuiltinOutput(r.output).allreduce;
    } catch (e) {
      return `rank ${r.rank}: ${(e as Error).message}`;
    }
    if (a === null) return `rank ${r.rank} printed no 'SLICECHECK allreduce' line`;
    reports.push(a);
    for (const c of parseNcclTransports(r.output).connections) {
      transports.add(c.transport);
      via.add(c.via);
    }
  }
  return { reports, transports: [...transports], via: [...via] };
}

/** Why the run did not complete (a rank hung, missing, refused, errored), or null. */
function incomplete(
  ranks: readonly RankOutput[],
  expected: number,
  text: string,
  refusalDocumented: boolean,
): Verdict | null {
  const figures = { ranks: ranks.length, expected };
  if (ranks.length !== expected)
    return verdict("broken", `${ranks.length} of ${expected} rank(s) reported`, figures, text);
  const hung = ranks.filter((r) => DEADLINE.has(r.exitCode));
  if (hung.length > 0)
    return verdict(
      "broken",
      `rank(s) ${hung.map((r) => r.rank).join(", ")} killed at the deadline (exit ${hung[0]!.exitCode}): undecided`,
      figures,
      text,
    );
  const refusal = REFUSALS.find((x) => x.re.test(text));
  if (refusal && refusalDocumented && ranks.some((r) => r.exitCode !== 0))
    return verdict(
      "passed",
      `refused, as documented: ${refusal.why} (${refusal.re.exec(text)![0]})`,
      { ...figures, outcome: "refused" },
      text,
      "documented-constraint",
    );
  const errored = ranks.filter((r) => r.exitCode !== 0 && r.exitCode !== 1);
  if (errored.length > 0)
    return verdict(
      "broken",
      `rank(s) ${errored.map((r) => `${r.rank} exit ${r.exitCode}`).join(", ")}: neither a run nor a documented refusal`,
      figures,
      text,
    );
  return null;
}

const textOf = (ranks: readonly RankOutput[]) =>
  ranks.map((r) => `[rank ${r.rank} exit ${r.exitCode}]\n${r.output}`).join("\n");

function figuresOf(ranks: readonly RankOutput[], read: Read) {
  return {
    ranks: ranks.length,
    transport: read.transports.join(",") || null,
    via: read.via.join(", ") || null,
    "busbw GB/s": Math.min(...read.reports.map((a) => a.busbw)),
    "algbw GB/s": Math.min(...read.reports.map((a) => a.algbw)),
    bytes: read.reports[0]!.bytes,
    wrong: read.reports.reduce((s, a) => s + a.wrong, 0),
  };
}

function wrongResults(
  ranks: readonly RankOutput[],
  figures: ReturnType<typeof figuresOf>,
  text: string,
): Verdict | null {
  if (figures.wrong === 0 && ranks.every((r) => r.exitCode === 0)) return null;
  return verdict("failed", `${figures.wrong} wrong element(s) across the ranks`, figures, text);
}

/** The same program with one rank per whole GPU: completes without wrong results; its busbw
 * and transport are the figures the cross-instance run is compared with. */
export function wholeGpuRanks(ranks: readonly RankOutput[], expected: number): Verdict {
  const text = textOf(ranks);
  const stop = incomplete(ranks, expected, text, false);
  if (stop) return { ...stop, name: "wholeGpuRanks" };
  const read = readRanks(ranks);
  if (typeof read === "string")
    return { ...verdict("broken", read, { ranks: ranks.length }, text), name: "wholeGpuRanks" };
  const figures = figuresOf(ranks, read);
  const v =
    wrongResults(ranks, figures, text) ??
    verdict(
      "passed",
      `${expected} whole GPUs, one rank each: busbw ${figures["busbw GB/s"].toFixed(2)} GB/s over ${figures.transport ?? "an unnamed transport"}`,
      figures,
      text,
    );
  return { ...v, name: "wholeGpuRanks" };
}

/** The stable code of a failed crossInstanceRanks: a claimed peer path, or wrong results. */
export function crossInstanceFailCode(v: Verdict): "MIG_P2P_CLAIMED" | "NCCL_FAILED" {
  return v.evidence.figures["p2p claimed"] === true && v.evidence.figures.wrong === 0
    ? "MIG_P2P_CLAIMED"
    : "NCCL_FAILED";
}

/** One rank per MIG instance of one GPU: SHM or NET below the whole card passes (a documented
 * constraint, with its figures); P2P fails (MIG_P2P_CLAIMED); wrong results fail. */
export function crossInstanceRanks(
  ranks: readonly RankOutput[],
  expected: number,
  wholeCard: WholeCardFigure | null,
): Verdict {
  const text = textOf(ranks);
  const stop = incomplete(ranks, expected, text, true);
  if (stop) return stop;
  const read = readRanks(ranks);
  if (typeof read === "string") return verdict("broken", read, { ranks: ranks.length }, text);
  const peer = read.transports.filter((t) => t === "P2P" || t === "NVLS");
  const figures = {
    ...figuresOf(ranks, read),
    "p2p claimed": peer.length > 0,
    "whole-card busbw GB/s": wholeCard?.busbw ?? null,
    "whole-card source": wholeCard?.source ?? null,
  };
  const busbw = figures["busbw GB/s"];
  const bad = wrongResults(ranks, figures, text);
  if (bad) return bad;
  if (read.transports.length === 0)
    return verdict("broken", "NCCL printed no transport line (NCCL_DEBUG=INFO)", figures, text);
  if (peer.length > 0)
    return verdict(
      "failed",
      `the cross-instance path claims ${peer.join(" and ")} (${figures.via}): MIG instances have no peer-to-peer path, traffic must go through host memory or the network`,
      figures,
      text,
    );
  const unknown = read.transports.filter((t) => t !== "SHM" && t !== "NET");
  if (unknown.length > 0)
    return verdict("broken", `a transport this check cannot place: ${figures.via}`, figures, text);
  const path = `${figures.transport} (${figures.via}), busbw ${busbw.toFixed(2)} GB/s`;
  if (wholeCard === null)
    return verdict(
      "passed",
      `${path}; no whole-card figure to compare with`,
      figures,
      text,
      "characterised",
    );
  if (busbw >= wholeCard.busbw)
    return verdict(
      "broken",
      `${path}, not below the whole card's ${wholeCard.busbw} GB/s (${wholeCard.source}): one of the two figures cannot be trusted`,
      figures,
      text,
    );
  return verdict(
    "passed",
    `${path}, below the whole card's ${wholeCard.busbw} GB/s (${wholeCard.source}), as documented`,
    figures,
    text,
    "documented-constraint",
  );
}

/**
 * What the whole card's all_reduce reaches when the card is partitioned and cannot be measured:
 * the 8x A100-SXM4 capture of the references (superbench nccl_allreduce.log, busbw levelling off
 * at 235 GB/s over NVLink3) scaled by NVLink generation for Hopper and Blackwell SXM boards
 * (900 and 1800 GB/s against 600, datasheets). PCIe boards: null, the references give no
 * whole-card figure for them, and the run is recorded without a comparison.
 */
export function wholeCardExpectation(gpuName: string): WholeCardFigure | null {
  const source = "product expectation: 8x A100-SXM4 capture, scaled by NVLink generation";
  if (/PCIE|PCIe/.test(gpuName)) return null;
  if (/A100/.test(gpuName)) return { busbw: 235, source };
  if (/H100|H200|GH200|H20\b/.test(gpuName)) return { busbw: (235 * 900) / 600, source };
  if (/B200|GB200/.test(gpuName)) return { busbw: (235 * 1800) / 600, source };
  return null;
}
