// What the scenarios read from, or switch on, a node besides the workloads: the kernel log and
// the Xids it gained, the GPUs' PCI bus ids, the MPS control daemon, and the listing an
// exclusivity check compares with its tenant. Each takes the transport; the Xid filter is pure.
import { parseXid } from "../nvsmi/xid.js";
import type { Transport } from "../transport/types.js";
import type { Instance } from "../workloads/instances.js";
import { judgeUtilization, type UtilizationResult } from "../workloads/utilization.js";
import type { EventData, XidSeen } from "./history.js";

/** `00000000:07:00.0` and `0000:07:00` both become `07:00`. */
export function busKey(pci: string): string {
  const m = /([0-9a-f]{2}):([0-9a-f]{2})(?:\.\d)?\s*$/i.exec(pci.trim());
  return m ? `${m[1]}:${m[2]}`.toLowerCase() : pci.toLowerCase();
}

export async function readDmesg(t: Transport, signal?: AbortSignal): Promise<string[]> {
  const r = await t.exec({ argv: ["dmesg"] }, { timeoutMs: 30_000, signal });
  if (r.exitCode !== 0)
    throw new Error(`dmesg exited ${r.exitCode}: ${r.stderr.trim().slice(0, 200)}`);
  return r.stdout.split("\n").filter(Boolean);
}

/** The Xids among `fresh` kernel log lines on the GPU at `bus` (any GPU when null). */
export function xidsIn(fresh: readonly string[], bus: string | null): XidSeen[] {
  const xids: XidSeen[] = [];
  for (const line of fresh) {
    let ev: ReturnType<typeof parseXid>["events"][number] | undefined;
    try {
      ev = parseXid(line).events[0];
    } catch {
      ev = undefined;
    }
    if (!ev || (bus !== null && busKey(ev.pci) !== bus)) continue;
    xids.push({
      xid: ev.xid,
      pci: ev.pci,
      gpuInstanceId: ev.gpuInstanceId,
      computeInstanceId: ev.computeInstanceId,
      pid: ev.pid,
      name: ev.name,
      line,
    });
  }
  return xids;
}

export async function readPciMap(t: Transport): Promise<Map<number, string>> {
  const r = await t.exec(
    { argv: ["nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"] },
    { timeoutMs: 30_000 },
  );
  const out = new Map<number, string>();
  for (const line of r.stdout.split("\n")) {
    const [i, bus] = line.split(",").map((x) => x.trim());
    if (i && bus && /^\d+$/.test(i)) out.set(Number(i), busKey(bus));
  }
  return out;
}

/** Starts or stops the MPS control daemon for the GPU `gpuUuid` shows. Clients' limits are
 * their own environment (plan.ts mpsEnv), not the daemon's defaults. */
export async function mpsControl(
  t: Transport,
  gpuUuid: string,
  on: boolean,
): Promise<{ exitCode: number | null; stderr: string }> {
  const env = { CUDA_VISIBLE_DEVICES: gpuUuid };
  const r = on
    ? await t.exec({ argv: ["nvidia-cuda-mps-control", "-d"] }, { env, timeoutMs: 30_000 })
    : await t.exec({ shell: "echo quit | nvidia-cuda-mps-control" }, { env, timeoutMs: 30_000 });
  return { exitCode: r.exitCode, stderr: r.stderr };
}

/** What the driver says is on one GPU: its GPU instances and its compute processes. */
export async function readExclusivity(
  t: Transport,
  gpu: number,
  signal?: AbortSignal,
): Promise<{ lgiExit: number | null; lgi: string; appsExit: number | null; apps: string }> {
  const exec = async (argv: string[]) => {
    const r = await t.exec({ argv }, { timeoutMs: 30_000, signal });
    return { exitCode: r.exitCode, out: `${r.stdout}${r.stderr}` };
  };
  const lgi = await exec(["nvidia-smi", "mig", "-lgi", "-i", String(gpu)]);
  const apps = await exec([
    "nvidia-smi",
    "-i",
    String(gpu),
    "--query-compute-apps=pid,process_name,gpu_uuid,used_memory",
    "--format=csv,noheader",
  ]);
  return { lgiExit: lgi.exitCode, lgi: lgi.out, appsExit: apps.exitCode, apps: apps.out };
}

/** The victims' utilization figures of one window, by their labels. */
export function victimUtilization(
  victims: readonly Instance[],
  label: (i: Instance) => string,
  u: UtilizationResult,
): NonNullable<EventData["utilization"]> {
  const out: NonNullable<EventData["utilization"]>["victims"] = {};
  for (const v of victims) {
    const m = Object.fromEntries(
      // Insufficient samples give no figure (judgeUtilization): never a measurement shown.
      judgeUtilization(u.samples.get(v.uuid) ?? []).metrics.map((x) => [x.metric, x.value]),
    );
    out[label(v)] = {
      samples: m.utilization_samples ?? 0,
      smActiveMean: m.sm_active_mean ?? null,
      memUsedMaxMiB: m.memory_used_max ?? null,
    };
  }
  return { source: u.source, victims: out };
}
