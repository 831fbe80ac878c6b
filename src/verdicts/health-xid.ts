// The health suite's Xid rules, pure: which Xids fail a GPU whatever the run did, which an
// injected fault explains, and the per-GPU "logged no new Xid" check. Split from health.ts,
// which re-exports what its importers used from here.
import { parseXid } from "../nvsmi/xid.js";
import type { ExtraCheck } from "./checks.js";

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

/** What every health check of a node carries. */
export type Base = Pick<ExtraCheck, "suite" | "node">;

/** One GPU as the per-GPU checks name it: by index where known, else by its bus. */
export interface GpuRef {
  gpu: number | null;
  bus: string;
  name: string;
}

/** The new kernel log lines' Xids and fallen-off-the-bus events, by bus. */
export interface KernelEvents {
  xids: { bus: string; xid: number; gi: number | null; ci: number | null; line: string }[];
  offBus: { bus: string | null; line: string }[];
  /** The log at the run's start or end could not be read: an unread log shows no Xid. */
  unread: boolean;
  /** Why a new line could not be parsed (both lists are then empty). */
  problem: string | null;
}

/** The Xids and bus losses in the kernel log lines new since the run's start. One line that
 * cannot be parsed makes the whole log unreadable: a partial list could pass a GPU. */
export function newKernelEvents(before: string[] | null, after: string[] | null): KernelEvents {
  const seen = new Set(before ?? []);
  const newLines = (after ?? []).filter((l) => !seen.has(l));
  const unread = before === null || after === null;
  const k: KernelEvents = { xids: [], offBus: [], unread, problem: null };
  try {
    for (const line of newLines) {
      const p = parseXid(line);
      k.xids.push(
        ...p.events.map((e) => ({
          bus: e.pci.toLowerCase(),
          xid: e.xid,
          gi: e.gpuInstanceId,
          ci: e.computeInstanceId,
          line,
        })),
      );
      k.offBus.push(...p.fallenOffBus.map((e) => ({ bus: e.pci ? xidBus(e.pci) : null, line })));
    }
  } catch (e) {
    return { xids: [], offBus: [], unread, problem: (e as Error).message };
  }
  return k;
}

type NewXid = KernelEvents["xids"][number];

/** Whether an injected fault explains an Xid: only one its kind produces, on that fault's
 * aggressor's GI (and CI, where both are known), and never a critical one. */
function excused(x: NewXid, faults: readonly InjectedFault[]): boolean {
  return (
    !CRITICAL_XIDS.has(x.xid) &&
    faults.some(
      (i) =>
        (FAULT_XIDS[i.fault] ?? []).includes(x.xid) &&
        x.gi === i.gpuInstanceId &&
        (x.ci === null || i.computeInstanceId === null || x.ci === i.computeInstanceId),
    )
  );
}

/** A GPU's "logged no new Xid" check, with the node's `base`, the GPU's parameters (`gbase`)
 * and the faults injected in the run (those on other GPUs excuse nothing here). */
export interface XidSubject extends GpuRef {
  base: Base;
  gbase: { parameters: Record<string, string> };
  injected: readonly InjectedFault[];
}

/** The GPU logged no new Xid, or only ones an injected fault explains; a critical Xid fails
 * whatever was injected. Broken where the log could not be read: no evidence of a clean GPU. */
export function xidCheck(k: KernelEvents, s: XidSubject): ExtraCheck {
  const { base, gbase, gpu, bus, name } = s;
  const title = `${name} logged no new Xid`;
  if (k.unread || k.problem)
    return {
      ...base,
      ...gbase,
      gpu,
      title,
      status: "broken",
      message: `could not read the kernel log of ${base.node}${k.problem ? `: ${k.problem}` : ""}`,
      attachment: null,
    };
  const mine = k.xids.filter((x) => x.bus === bus);
  const faults = s.injected.filter((i) => i.gpu === gpu);
  const critical = mine.filter((x) => CRITICAL_XIDS.has(x.xid));
  const unexcused = mine.filter((x) => !excused(x, faults));
  const log = mine.map((x) => x.line).join("\n");
  const attachment = mine.length ? { name: "new Xid lines", content: log } : null;
  const common = { ...base, ...gbase, gpu, title, attachment };
  if (mine.length === 0) return { ...common, status: "passed", message: "no new Xid" };
  if (critical.length > 0)
    return {
      ...common,
      status: "failed",
      code: "XID",
      message: `critical Xid ${[...new Set(critical.map((x) => x.xid))].join(", ")} on ${name} (${bus}) during the run, never excused by an injected fault: ${critical[0]!.line}`,
    };
  if (unexcused.length > 0)
    return {
      ...common,
      status: "failed",
      code: "XID",
      message: `${unexcused.length} new Xid line(s) on ${name} (${bus}) during the run that no fault injected in it explains${faults.length ? ` (injected: ${faults.map((i) => `${i.fault} on GI ${i.gpuInstanceId ?? "-"}`).join(", ")})` : ""}: ${unexcused[0]!.line}`,
    };
  return {
    ...common,
    status: "passed",
    message: `${mine.length} new Xid line(s); note: each is one the isolation suite's injected fault produces on its aggressor (${[...new Set(mine.map((x) => x.xid))].join(", ")})`,
  };
}
