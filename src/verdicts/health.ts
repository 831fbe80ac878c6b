// The `layout` and `health` suites' verdicts, pure: what the nodes said in, checks out.
// The readers (src/report/health-read.ts) and the run command gather the facts.
import type { NodeReport } from "../mig/apply/index.js";
import { splitLostGpus } from "../nvsmi/lost.js";
import { VERDICT_SUITE } from "../util/suite-registry.js";
import type { ExtraCheck } from "./checks.js";
import {
  type Base,
  type GpuRef,
  type InjectedFault,
  type KernelEvents,
  newKernelEvents,
  xidBus,
  xidCheck,
} from "./health-xid.js";

// Where the Xid rules lived before health-xid.ts: their importers keep this path.
export { CRITICAL_XIDS, FAULT_XIDS, type InjectedFault, xidBus } from "./health-xid.js";

/** `layout`: one check per node and GPU, from `assertLayout` right after the apply. */
/**
 * The layout suite's checks. `intended` (`config 'x' of FILE`, from the inventory): the run
 * was given no --layout, and each GPU is held to its node's intended layout instead; one that
 * differs fails LAYOUT_NOT_INTENDED naming the intended layout and what was found.
 */
export function layoutChecks(
  reports: readonly NodeReport[],
  config: string,
  intended?: string,
): ExtraCheck[] {
  const out: ExtraCheck[] = [];
  for (const r of reports) {
    const base = {
      suite: VERDICT_SUITE.layout,
      node: r.node,
      parameters: { config },
      attachment: null,
    };
    if (r.error || r.gpus.length === 0) {
      out.push({
        ...base,
        gpu: null,
        title: `${r.node} matches config ${config}`,
        status: "broken",
        message: `could not read ${r.node}: ${r.error?.message ?? r.status}`,
      });
      continue;
    }
    for (const g of r.gpus) {
      const title = `${r.node} GPU ${g.index} matches config ${config}`;
      if (g.error) out.push({ ...base, gpu: g.index, title, status: "broken", message: g.error });
      else if ((g.status === "drift" || g.drift.length > 0) && intended)
        out.push({
          ...base,
          gpu: g.index,
          title,
          status: "failed",
          code: "LAYOUT_NOT_INTENDED",
          message: `${r.node} GPU ${g.index} is not in its intended layout, ${intended}; found: ${g.drift.join("; ")}; fix: slicecheck apply --intended --nodes ${r.node}`,
        });
      else if (g.status === "drift" || g.drift.length > 0)
        out.push({
          ...base,
          gpu: g.index,
          title,
          status: "failed",
          message: `layout drift on ${r.node} GPU ${g.index} from config ${config}: ${g.drift.join("; ")}`,
        });
      else
        out.push({
          ...base,
          gpu: g.index,
          title,
          status: "passed",
          message: `${r.node} GPU ${g.index} is as config ${config} wants it`,
        });
    }
  }
  return out;
}

/** One GPU as `nvidia-smi --query-gpu=index,pci.bus_id,driver_version,persistence_mode,ecc…`. */
export interface GpuHealthRow {
  index: number;
  pciBusId: string;
  driver: string;
  persistence: string;
  eccUncorrected: string;
}

export const HEALTH_QUERY =
  "index,pci.bus_id,driver_version,persistence_mode,ecc.errors.uncorrected.volatile.total";

export function parseHealthQuery(stdout: string): GpuHealthRow[] {
  return stdout
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const [index = "", pciBusId = "", driver = "", persistence = "", ecc = ""] = l
        .split(",")
        .map((x) => x.trim());
      if (!/^\d+$/.test(index)) throw new Error(`unexpected nvidia-smi line: '${l}'`);
      return { index: Number(index), pciBusId, driver, persistence, eccUncorrected: ecc };
    });
}

export interface NodeHealthFacts {
  node: string;
  /** nvidia-smi's exit code and output of the query; null exit: it could not be run at all. */
  smiExit: number | null;
  smiOutput: string;
  /** dmesg at the run's start and end; null where it could not be read. */
  dmesgBefore: string[] | null;
  dmesgAfter: string[] | null;
  /** The faults the isolation suite injected in this run. */
  injected: readonly InjectedFault[];
  /** The GPUs (by index) the run found at its start, with their instances' labels: what a
   * lost GPU takes down with it. */
  gpus?: readonly { index: number; instances: readonly string[] }[];
}

/** What nvidia-smi said: the answering GPUs' rows, the lines of those it reports lost, and why
 * its output could not be read. */
interface SmiAnswer {
  rows: GpuHealthRow[];
  lost: { pci: string; why: string; line: string }[];
  parseProblem: string | null;
}

/** A GPU nvidia-smi reported lost, with its index where it can be told. */
type LostGpu = SmiAnswer["lost"][number] & { index: number | null };

/** `health`: per GPU: driver answers, persistence mode, ECC errors, new Xids, and the GPU as
 * one failure domain. */
export function healthChecks(f: NodeHealthFacts): ExtraCheck[] {
  const base = { suite: VERDICT_SUITE.health, node: f.node };
  const smi = readSmi(f);
  const silent = noAnswer(f, base, smi);
  if (silent) return [silent];
  const k = newKernelEvents(f.dmesgBefore, f.dmesgAfter);
  const out: ExtraCheck[] = [];
  for (const g of lostGpusOf(f, smi)) out.push(...lostGpuChecks(f, base, k, g));
  for (const g of smi.rows) out.push(...answeringGpuChecks(f, base, k, g));
  return out;
}

/** nvidia-smi's output, read only where it exited 0, or 15 (a GPU lost, the others listed):
 * after any other exit its output is an error to quote, not rows. */
function readSmi(f: NodeHealthFacts): SmiAnswer {
  if (f.smiExit !== 0 && f.smiExit !== 15) return { rows: [], lost: [], parseProblem: null };
  const split = splitLostGpus(f.smiOutput);
  const lost = split.lost.map((l) => ({ pci: l.pciBusId, why: l.why, line: l.line }));
  try {
    return { rows: parseHealthQuery(split.rest), lost, parseProblem: null };
  } catch (e) {
    return { rows: [], lost, parseProblem: (e as Error).message };
  }
}

/** The one check of a node whose driver gave no usable answer, or null where it answered: exit
 * 15 counts as an answer only with a lost GPU's line to show for it. Broken where nvidia-smi
 * could not be run or read (the harness's failure), failed where it ran and refused. */
function noAnswer(f: NodeHealthFacts, base: Base, smi: SmiAnswer): ExtraCheck | null {
  const { rows, lost, parseProblem } = smi;
  const answered = f.smiExit === 0 || (f.smiExit === 15 && lost.length > 0);
  if (answered && !parseProblem && rows.length + lost.length > 0) return null;
  return {
    ...base,
    gpu: null,
    title: `${f.node} driver answers`,
    status: f.smiExit === null || parseProblem ? "broken" : "failed",
    message:
      f.smiExit === null
        ? `nvidia-smi could not be run on ${f.node}: ${f.smiOutput}`
        : parseProblem
          ? `nvidia-smi on ${f.node}: ${parseProblem}`
          : `nvidia-smi on ${f.node} exited ${f.smiExit}: ${f.smiOutput.trim().slice(0, 300)}`,
    parameters: {},
    attachment: { name: "nvidia-smi", content: f.smiOutput },
  };
}

/** The lost GPUs in bus order, each with its index where it can be told. */
function lostGpusOf(f: NodeHealthFacts, smi: SmiAnswer): LostGpu[] {
  // A GPU nvidia-smi cannot reach is left out of its rows: GPUs enumerate in PCI bus order, so
  // the missing indices, in order, are the lost GPUs' buses, in order.
  const answeredIdx = new Set(smi.rows.map((r) => r.index));
  const missing = (f.gpus ?? [])
    .map((g) => g.index)
    .filter((i) => !answeredIdx.has(i))
    .sort((a, b) => a - b);
  const lostSorted = [...smi.lost].sort((a, b) => xidBus(a.pci).localeCompare(xidBus(b.pci)));
  // Only a one-to-one match names them: otherwise which index went with which bus is a guess.
  return lostSorted.map((l, k) => ({
    index: missing.length === lostSorted.length ? (missing[k] ?? null) : null,
    ...l,
  }));
}

/** A lost GPU's checks: its driver's words fail it, the checks that need the driver cannot be
 * made, and its failure domain (every instance on it) is lost. */
function lostGpuChecks(f: NodeHealthFacts, base: Base, k: KernelEvents, g: LostGpu) {
  const bus = xidBus(g.pci);
  const name = `${f.node} GPU ${g.index ?? bus}`;
  const gbase = { parameters: { "pci bus": bus } };
  const see = `${name} is lost (${g.why}); see its failure domain check`;
  const out: ExtraCheck[] = [
    {
      ...base,
      ...gbase,
      gpu: g.index,
      title: `${name} driver answers`,
      status: "failed",
      code: "GPU_LOST",
      // The driver's own words, with the GPU's bus id: what a reviewer checks on the node.
      message: `${name} (${bus}) is lost: the driver says "${g.why}" (nvidia-smi: ${g.line})`,
      attachment: { name: "nvidia-smi", content: f.smiOutput },
    },
  ];
  for (const t of ["persistence mode", "has no uncorrected ECC errors"])
    out.push({
      ...base,
      ...gbase,
      gpu: g.index,
      title: `${name} ${t}`,
      status: "broken",
      message: see,
      attachment: null,
    });
  out.push(xidCheck(k, { base, gbase, gpu: g.index, bus, name, injected: f.injected }));
  const evidence = [g.line, ...k.offBus.filter((o) => o.bus === bus).map((o) => o.line)];
  out.push(domainCheck(f, base, { gpu: g.index, bus, name }, evidence, false));
  return out;
}

/** An answering GPU's checks: driver, persistence (reported only), ECC, Xids, and its failure
 * domain, lost all the same where the kernel says it fell off the bus. */
function answeringGpuChecks(f: NodeHealthFacts, base: Base, k: KernelEvents, g: GpuHealthRow) {
  const gbase = { parameters: { "driver version": g.driver } };
  const name = `${f.node} GPU ${g.index}`;
  const bus = xidBus(g.pciBusId);
  const out: ExtraCheck[] = [
    {
      ...base,
      ...gbase,
      gpu: g.index,
      title: `${name} driver answers`,
      status: "passed",
      message: `nvidia-smi answered on ${f.node}: driver ${g.driver}`,
      attachment: null,
    },
    {
      ...base,
      ...gbase,
      gpu: g.index,
      title: `${name} persistence mode`,
      status: "passed",
      message: `persistence mode ${/^enabled$/i.test(g.persistence) ? "On" : "Off"} (${g.persistence}); reported, not required`,
      attachment: { name: "persistence mode", content: g.persistence },
    },
    eccCheck(base, gbase, g, name, bus),
    xidCheck(k, { base, gbase, gpu: g.index, bus, name, injected: f.injected }),
  ];
  // The driver still answers for it, but the kernel says it fell off the bus: lost all the same.
  const fell = [
    ...k.offBus.filter((o) => o.bus === bus).map((o) => o.line),
    ...k.xids.filter((x) => x.bus === bus && x.xid === 79).map((x) => x.line),
  ];
  out.push(domainCheck(f, base, { gpu: g.index, bus, name }, fell, fell.length === 0));
  return out;
}

/** Uncorrected volatile ECC errors fail a GPU; a GPU that reports no count passes with a note. */
function eccCheck(
  base: Base,
  gbase: { parameters: Record<string, string> },
  g: GpuHealthRow,
  name: string,
  bus: string,
): ExtraCheck {
  const ecc = g.eccUncorrected;
  const eccCount = /^\d+$/.test(ecc) ? Number(ecc) : null;
  const eccBad = eccCount !== null && eccCount > 0;
  return {
    ...base,
    ...gbase,
    gpu: g.index,
    title: `${name} has no uncorrected ECC errors`,
    status: eccBad ? "failed" : "passed",
    ...(eccBad ? { code: "ECC_UNCORRECTED" } : {}),
    message:
      eccCount === null
        ? `uncorrected volatile ECC errors: ${ecc || "(empty)"}; note: this GPU does not report the count`
        : eccBad
          ? `${name} (${bus}): ${eccCount} uncorrected volatile ECC error(s)`
          : `uncorrected volatile ECC errors: ${eccCount}`,
    attachment: null,
  };
}

/** The GPU as one failure domain: up, or lost with every instance on it. */
function domainCheck(
  f: NodeHealthFacts,
  base: Base,
  { gpu, bus, name }: GpuRef,
  evidence: string[],
  up: boolean,
): ExtraCheck {
  const insts = f.gpus?.find((g) => g.index === gpu)?.instances ?? [];
  const title = `${name} failure domain`;
  const params = { bus };
  if (up)
    return {
      ...base,
      gpu,
      title,
      status: "passed",
      message: `${name} is on the bus: its ${insts.length} instance(s) share it as one failure domain (MIG isolates them at runtime; a whole-GPU fault takes them all)`,
      parameters: params,
      attachment: null,
    };
  return {
    ...base,
    gpu,
    title,
    status: "failed",
    code: "GPU_LOST",
    message: `${name} (${bus}) is lost: every instance on it is lost with it${insts.length ? ` (${insts.length}: ${insts.join(", ")})` : ""}. MIG is runtime isolation, not redundancy: a whole-GPU fault takes down every tenant of the GPU at once`,
    parameters: { ...params, instancesLost: String(insts.length) },
    attachment: { name: "evidence", content: evidence.join("\n") },
  };
}
