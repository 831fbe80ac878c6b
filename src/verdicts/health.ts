// The `layout` and `health` suites' verdicts, pure: what the nodes said in, checks out.
// The readers (src/report/health-read.ts) and the run command gather the facts.
import type { NodeReport } from "../mig/apply/index.js";
import { parseXid } from "../nvsmi/xid.js";
import type { ExtraCheck } from "../report/context.js";

/** `layout`: one check per node and GPU, from `assertLayout` right after the apply. */
export function layoutChecks(reports: readonly NodeReport[], config: string): ExtraCheck[] {
  const out: ExtraCheck[] = [];
  for (const r of reports) {
    const base = {
      suite: "layout" as const,
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

export interface NodeHealthFacts {
  node: string;
  /** nvidia-smi's exit code and output of the query; null exit: it could not be run at all. */
  smiExit: number | null;
  smiOutput: string;
  /** dmesg at the run's start and end; null where it could not be read. */
  dmesgBefore: string[] | null;
  dmesgAfter: string[] | null;
  /** GPUs (by index) where the isolation suite injected faults in this run. */
  isolationGpus: ReadonlySet<number>;
}

/** `health`: per GPU: driver answers, persistence mode, ECC errors, new Xids. */
export function healthChecks(f: NodeHealthFacts): ExtraCheck[] {
  const base = { suite: "health" as const, node: f.node };
  let rows: GpuHealthRow[] = [];
  let parseProblem: string | null = null;
  if (f.smiExit === 0) {
    try {
      rows = parseHealthQuery(f.smiOutput);
    } catch (e) {
      parseProblem = (e as Error).message;
    }
  }
  if (f.smiExit !== 0 || parseProblem || rows.length === 0) {
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
  let newXids: { bus: string; line: string }[] = [];
  let xidProblem: string | null = null;
  try {
    newXids = newLines.flatMap((line) =>
      parseXid(line).events.map((e) => ({ bus: e.pci.toLowerCase(), line })),
    );
  } catch (e) {
    xidProblem = (e as Error).message;
  }
  const out: ExtraCheck[] = [];
  for (const g of rows) {
    const gbase = { ...base, gpu: g.index, parameters: { "driver version": g.driver } };
    const name = `${f.node} GPU ${g.index}`;
    out.push({
      ...gbase,
      title: `${name} driver answers`,
      status: "passed",
      message: `nvidia-smi answered on ${f.node}: driver ${g.driver}`,
      attachment: null,
    });
    out.push({
      ...gbase,
      title: `${name} persistence mode`,
      status: "passed",
      message: `persistence mode ${/^enabled$/i.test(g.persistence) ? "On" : "Off"} (${g.persistence}); reported, not required`,
      attachment: { name: "persistence mode", content: g.persistence },
    });
    const ecc = g.eccUncorrected;
    const eccCount = /^\d+$/.test(ecc) ? Number(ecc) : null;
    out.push({
      ...gbase,
      title: `${name} has no uncorrected ECC errors`,
      status: eccCount !== null && eccCount > 0 ? "failed" : "passed",
      message:
        eccCount === null
          ? `uncorrected volatile ECC errors: ${ecc || "(empty)"}; note: this GPU does not report the count`
          : `uncorrected volatile ECC errors: ${eccCount}`,
      attachment: null,
    });
    const title = `${name} logged no new Xid`;
    if (f.dmesgBefore === null || f.dmesgAfter === null || xidProblem) {
      out.push({
        ...gbase,
        title,
        status: "broken",
        message: `could not read the kernel log of ${f.node}${xidProblem ? `: ${xidProblem}` : ""}`,
        attachment: null,
      });
      continue;
    }
    const mine = newXids.filter((x) => x.bus === xidBus(g.pciBusId));
    const log = mine.map((x) => x.line).join("\n");
    if (mine.length === 0)
      out.push({ ...gbase, title, status: "passed", message: "no new Xid", attachment: null });
    else if (f.isolationGpus.has(g.index))
      out.push({
        ...gbase,
        title,
        status: "passed",
        message: `${mine.length} new Xid line(s); note: the isolation suite's faults in this run caused them`,
        attachment: { name: "new Xid lines", content: log },
      });
    else
      out.push({
        ...gbase,
        title,
        status: "failed",
        message: `${mine.length} new Xid line(s) on ${name} (${xidBus(g.pciBusId)}) during the run: ${mine[0]?.line ?? ""}`,
        attachment: { name: "new Xid lines", content: log },
      });
  }
  return out;
}
