// The `layout` and `health` suites' verdicts, pure: what the nodes said in, checks out.
// The readers (src/report/health-read.ts) and the run command gather the facts.
import type { NodeReport } from "../mig/apply/index.js";
import { splitLostGpus } from "../nvsmi/lost.js";
import { parseXid } from "../nvsmi/xid.js";
import { VERDICT_SUITE } from "../util/suite-registry.js";
import type { ExtraCheck } from "./checks.js";

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

/** `00000000:1B:00.0` (nvidia-smi) → `0000:1b:00` (the Xid line's form). */
export function xidBus(pciBusId: string): string {
  const m = /([0-9a-f]+):([0-9a-f]{2}):([0-9a-f]{2})(?:\.\d)?$/i.exec(pciBusId);
  if (!m) return pciBusId.toLowerCase();
  return `${m[1]!.slice(-4).padStart(4, "0")}:${m[2]}:${m[3]}`.toLowerCase();
}

/**
 * Xids that fail health whatever the run did, since no fault slicecheck injects produces them:
 * memory (48 DBE, 63/64 row remapping/retirement, 92 excessive SBE, 94/95 contained and
 * uncontained errors), internal micro-controllers and engines (56-58, 62 PMU halt, 65, 68, 69,
 * 73), NVLink (74), the bus (79 fallen off the bus, 80, 81) and GSP (119/120). The list is the
 * one Azure's GPU Xid health check treats as critical (the `XID_EC="48 56 57 58 62 63 64 65 68
 * 69 73 74 79 80 81 92 119 120"` of its check script, as azurehpc-health-checks ships it), plus
 * 94/95 (reference workloads.md 4.4-4.5: memory errors; 95 needs a GPU reset). A critical Xid is
 * never excused by an injected fault.
 */
export const CRITICAL_XIDS: ReadonlySet<number> = new Set([
  48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 94, 95, 119, 120,
]);

/** Xids that a fault the isolation suite injects produces, on the aggressor's own GI/CI: the
 * crasher's illegal address (31), its trap (13) and the channel teardown after it (43). OOM,
 * kill, hang and noisy neighbours produce none. */
export const FAULT_XIDS: Readonly<Record<string, readonly number[]>> = {
  crash: [13, 31, 43],
  oom: [],
  kill: [],
  hang: [],
  noisy: [],
};

/** A fault the isolation suite injected in this run, where and by whom. */
export interface InjectedFault {
  gpu: number;
  fault: string;
  /** The aggressor's GI/CI; null where it had none (soft partitioning). */
  gpuInstanceId: number | null;
  computeInstanceId: number | null;
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

/** `health`: per GPU: driver answers, persistence mode, ECC errors, new Xids, and the GPU as
 * one failure domain. */
export function healthChecks(f: NodeHealthFacts): ExtraCheck[] {
  const base = { suite: VERDICT_SUITE.health, node: f.node };
  let rows: GpuHealthRow[] = [];
  let parseProblem: string | null = null;
  const lostLines: { pci: string; why: string; line: string }[] = [];
  if (f.smiExit === 0 || f.smiExit === 15) {
    const split = splitLostGpus(f.smiOutput);
    lostLines.push(...split.lost.map((l) => ({ pci: l.pciBusId, why: l.why, line: l.line })));
    try {
      rows = parseHealthQuery(split.rest);
    } catch (e) {
      parseProblem = (e as Error).message;
    }
  }
  const answered = f.smiExit === 0 || (f.smiExit === 15 && lostLines.length > 0);
  if (!answered || parseProblem || rows.length + lostLines.length === 0) {
    return [
      {
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
      },
    ];
  }
  const before = new Set(f.dmesgBefore ?? []);
  const newLines = (f.dmesgAfter ?? []).filter((l) => !before.has(l));
  let newXids: {
    bus: string;
    xid: number;
    gi: number | null;
    ci: number | null;
    line: string;
  }[] = [];
  let offBus: { bus: string | null; line: string }[] = [];
  let xidProblem: string | null = null;
  try {
    for (const line of newLines) {
      const p = parseXid(line);
      newXids.push(
        ...p.events.map((e) => ({
          bus: e.pci.toLowerCase(),
          xid: e.xid,
          gi: e.gpuInstanceId,
          ci: e.computeInstanceId,
          line,
        })),
      );
      offBus.push(...p.fallenOffBus.map((e) => ({ bus: e.pci ? xidBus(e.pci) : null, line })));
    }
  } catch (e) {
    xidProblem = (e as Error).message;
    newXids = [];
    offBus = [];
  }
  // A GPU nvidia-smi cannot reach is left out of its rows: GPUs enumerate in PCI bus order, so
  // the missing indices, in order, are the lost GPUs' buses, in order.
  const answeredIdx = new Set(rows.map((r) => r.index));
  const missing = (f.gpus ?? [])
    .map((g) => g.index)
    .filter((i) => !answeredIdx.has(i))
    .sort((a, b) => a - b);
  const lostSorted = [...lostLines].sort((a, b) => xidBus(a.pci).localeCompare(xidBus(b.pci)));
  const lostGpus = lostSorted.map((l, k) => ({
    index: missing.length === lostSorted.length ? (missing[k] ?? null) : null,
    ...l,
  }));
  const out: ExtraCheck[] = [];
  const domain = (
    gpu: number | null,
    bus: string,
    name: string,
    evidence: string[],
    up: boolean,
  ) => {
    const insts = f.gpus?.find((g) => g.index === gpu)?.instances ?? [];
    const title = `${name} failure domain`;
    const params = { bus };
    if (up)
      return out.push({
        ...base,
        gpu,
        title,
        status: "passed",
        message: `${name} is on the bus: its ${insts.length} instance(s) share it as one failure domain (MIG isolates them at runtime; a whole-GPU fault takes them all)`,
        parameters: params,
        attachment: null,
      });
    out.push({
      ...base,
      gpu,
      title,
      status: "failed",
      code: "GPU_LOST",
      message: `${name} (${bus}) is lost: every instance on it is lost with it${insts.length ? ` (${insts.length}: ${insts.join(", ")})` : ""}. MIG is runtime isolation, not redundancy: a whole-GPU fault takes down every tenant of the GPU at once`,
      parameters: { ...params, instancesLost: String(insts.length) },
      attachment: { name: "evidence", content: evidence.join("\n") },
    });
  };
  const xidCheck = (gpu: number | null, bus: string, name: string, gbase: object) => {
    const title = `${name} logged no new Xid`;
    if (f.dmesgBefore === null || f.dmesgAfter === null || xidProblem) {
      out.push({
        ...base,
        ...gbase,
        gpu,
        title,
        status: "broken",
        message: `could not read the kernel log of ${f.node}${xidProblem ? `: ${xidProblem}` : ""}`,
        attachment: null,
      } as ExtraCheck);
      return;
    }
    const mine = newXids.filter((x) => x.bus === bus);
    const log = mine.map((x) => x.line).join("\n");
    const faults = f.injected.filter((i) => i.gpu === gpu);
    // Excused: only an Xid the injected fault kind produces, on that fault's aggressor.
    const excuse = (x: (typeof mine)[number]) =>
      !CRITICAL_XIDS.has(x.xid) &&
      faults.find(
        (i) =>
          (FAULT_XIDS[i.fault] ?? []).includes(x.xid) &&
          x.gi === i.gpuInstanceId &&
          (x.ci === null || i.computeInstanceId === null || x.ci === i.computeInstanceId),
      );
    const critical = mine.filter((x) => CRITICAL_XIDS.has(x.xid));
    const unexcused = mine.filter((x) => !excuse(x));
    const attachment = mine.length ? { name: "new Xid lines", content: log } : null;
    const common = { ...base, ...gbase, gpu, title, attachment };
    if (mine.length === 0)
      out.push({ ...common, status: "passed", message: "no new Xid" } as ExtraCheck);
    else if (critical.length > 0)
      out.push({
        ...common,
        status: "failed",
        code: "XID",
        message: `critical Xid ${[...new Set(critical.map((x) => x.xid))].join(", ")} on ${name} (${bus}) during the run, never excused by an injected fault: ${critical[0]!.line}`,
      } as ExtraCheck);
    else if (unexcused.length > 0)
      out.push({
        ...common,
        status: "failed",
        code: "XID",
        message: `${unexcused.length} new Xid line(s) on ${name} (${bus}) during the run that no fault injected in it explains${faults.length ? ` (injected: ${faults.map((i) => `${i.fault} on GI ${i.gpuInstanceId ?? "-"}`).join(", ")})` : ""}: ${unexcused[0]!.line}`,
      } as ExtraCheck);
    else
      out.push({
        ...common,
        status: "passed",
        message: `${mine.length} new Xid line(s); note: each is one the isolation suite's injected fault produces on its aggressor (${[...new Set(mine.map((x) => x.xid))].join(", ")})`,
      } as ExtraCheck);
  };
  for (const g of lostGpus) {
    const bus = xidBus(g.pci);
    const name = `${f.node} GPU ${g.index ?? bus}`;
    const gbase = { parameters: { "pci bus": bus } };
    const see = `${name} is lost (${g.why}); see its failure domain check`;
    out.push({
      ...base,
      ...gbase,
      gpu: g.index,
      title: `${name} driver answers`,
      status: "failed",
      code: "GPU_LOST",
      // The driver's own words, with the GPU's bus id: what a reviewer checks on the node.
      message: `${name} (${bus}) is lost: the driver says "${g.why}" (nvidia-smi: ${g.line})`,
      attachment: { name: "nvidia-smi", content: f.smiOutput },
    });
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
    xidCheck(g.index, bus, name, gbase);
    domain(
      g.index,
      bus,
      name,
      [g.line, ...offBus.filter((o) => o.bus === bus).map((o) => o.line)],
      false,
    );
  }
  for (const g of rows) {
    const gbase = { parameters: { "driver version": g.driver } };
    const name = `${f.node} GPU ${g.index}`;
    out.push({
      ...base,
      ...gbase,
      gpu: g.index,
      title: `${name} driver answers`,
      status: "passed",
      message: `nvidia-smi answered on ${f.node}: driver ${g.driver}`,
      attachment: null,
    });
    out.push({
      ...base,
      ...gbase,
      gpu: g.index,
      title: `${name} persistence mode`,
      status: "passed",
      message: `persistence mode ${/^enabled$/i.test(g.persistence) ? "On" : "Off"} (${g.persistence}); reported, not required`,
      attachment: { name: "persistence mode", content: g.persistence },
    });
    const ecc = g.eccUncorrected;
    const eccCount = /^\d+$/.test(ecc) ? Number(ecc) : null;
    const bus = xidBus(g.pciBusId);
    const eccBad = eccCount !== null && eccCount > 0;
    out.push({
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
    });
    xidCheck(g.index, bus, name, gbase);
    // The driver still answers for it, but the kernel says it fell off the bus: lost all the same.
    const fell = [
      ...offBus.filter((o) => o.bus === bus).map((o) => o.line),
      ...newXids.filter((x) => x.bus === bus && x.xid === 79).map((x) => x.line),
    ];
    domain(g.index, bus, name, fell, fell.length === 0);
  }
  return out;
}
