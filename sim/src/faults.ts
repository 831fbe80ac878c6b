// Faults planted into a simulated node (`slicecheck sim fault NODE KIND`), each one a state a real
// node can be found in, and each one undone by `--clear`. What was planted is recorded in
// <stateDir>/faults.json, so that `--clear` removes exactly that and nothing a test or a workload
// set up by other means. New kinds are one entry in FAULT_KINDS.

import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { didYouMean } from "../../src/util/closest.js";
import {
  type ChaosKind,
  type FaultKind,
  type FaultOptions,
  type FaultRecord,
  gpuOf,
  gpuOfRecord,
  type PlantedFault,
  usage,
} from "./fault-kind.js";
import { eccUncorrectable, gpuLost, nvlinkDown } from "./faults-gpu.js";
import { tenant } from "./faults-tenant.js";
import {
  cdiStale,
  containerSeesAll,
  image,
  noRuntime,
  noToolkit,
  nvcc,
  runtimeUnconfigured,
} from "./faults-tools.js";
import { wrongGradient } from "./faults-train.js";
import { appendKernelLog, KERN } from "./klog/log.js";
import { gpuBanner } from "./klog/xid.js";
import { type SimGpu, type SimState, updateState } from "./nvsmi/state.js";
import { viewOf } from "./nvsmi/view.js";
import { HISTORIES, historyRows } from "./slurm/histories.js";
import { readHistory, writeHistory } from "./slurm/sacct.js";
import { readSlurm, SLURM_STATES, writeSlurm } from "./slurm/state.js";
import { type ChaosFlags, readChaos, writeChaos } from "./workloads/chaos.js";
import { pciOf } from "./workloads/device.js";

export type { FaultOptions, FaultRecord, PlantedFault };

export const FAULTS_FILE = "faults.json";

/** The clients that block a MIG mode change and a reset (mig-reference.md §7). */
export const HOLDER_NAMES: readonly string[] = [
  "nvidia-persistenced",
  "nv-hostengine",
  "nvidia_drm",
];

const foreignProcess: FaultKind = {
  usage: "foreign-process --gpu N: a CUDA process of someone else holds the GPU",
  plant({ state }, o) {
    const gpu = gpuOf(state, o);
    const pids = state.gpus.flatMap((g) => g.processes.map((p) => p.pid));
    const pid = Math.max(31_000, ...pids.map((p) => p + 1));
    // Under MIG a CUDA process runs inside a GI; without GIs it holds the whole GPU.
    const gi = gpu.mig.current ? [...gpu.gis].sort((a, b) => a.id - b.id)[0] : undefined;
    const ci = gi ? [...gi.cis].sort((a, b) => a.id - b.id)[0] : undefined;
    gpu.processes.push({
      pid,
      name: "python3",
      type: "C",
      gi: gi?.id ?? null,
      ci: ci?.id ?? null,
      usedMiB: 2048,
      planted: true,
    });
    return {
      record: { kind: "foreign-process", gpu: gpu.index, pid },
      detail: `compute process ${pid} (python3, 2048 MiB) on GPU ${gpu.index}${gi ? ` in GI ${gi.id}` : ""}`,
    };
  },
  undo({ state }, r) {
    if (r.kind !== "foreign-process") return;
    const gpu = gpuOfRecord(state, r.gpu);
    if (gpu) gpu.processes = gpu.processes.filter((p) => p.pid !== r.pid);
  },
};

const holder: FaultKind = {
  usage: `holder --name ${HOLDER_NAMES.join("|")} --gpu N: a driver client keeps the GPU open`,
  plant({ state }, o) {
    const name = o.name ?? "";
    if (!HOLDER_NAMES.includes(name)) {
      throw usage(`holder needs --name ${HOLDER_NAMES.join("|")}, got '${name}'`);
    }
    const gpu = gpuOf(state, o);
    gpu.holders = [...(gpu.holders ?? []), name];
    return {
      record: { kind: "holder", gpu: gpu.index, name },
      detail: `${name} holds GPU ${gpu.index}`,
    };
  },
  undo({ state }, r) {
    if (r.kind !== "holder") return;
    const gpu = gpuOfRecord(state, r.gpu);
    if (!gpu) return;
    const at = gpu.holders.indexOf(r.name);
    if (at >= 0) gpu.holders.splice(at, 1);
  },
};

const slurm: FaultKind = {
  usage: `slurm --state ${Object.keys(SLURM_STATES).join("|")}: the Slurm node's state`,
  plant({ state, stateDir }, o) {
    const shown = SLURM_STATES[o.state ?? ""];
    if (!shown) {
      throw usage(
        `slurm needs --state ${Object.keys(SLURM_STATES).join("|")}, got '${o.state ?? ""}'`,
      );
    }
    const data = readSlurm(stateDir);
    const previous = data.nodes[state.node] ?? null;
    data.nodes[state.node] = {
      state: shown,
      reason: shown.includes("DRAIN") || shown === "DOWN" ? "slicecheck-sim" : null,
    };
    writeSlurm(stateDir, data);
    return {
      record: { kind: "slurm", node: state.node, previous },
      detail: `Slurm node ${state.node} is ${shown}`,
    };
  },
  undo({ stateDir }, r) {
    if (r.kind !== "slurm") return;
    const data = readSlurm(stateDir);
    if (r.previous) data.nodes[r.node] = r.previous;
    else delete data.nodes[r.node];
    writeSlurm(stateDir, data);
  },
};

const sacct: FaultKind = {
  usage: `sacct --name ${Object.keys(HISTORIES).join("|")}: Slurm accounting holds this job history`,
  plant({ state, stateDir }, o) {
    const rows = historyRows(o.name ?? "", state.node);
    if (!rows) {
      throw usage(`sacct needs --name ${Object.keys(HISTORIES).join("|")}, got '${o.name ?? ""}'`);
    }
    const previous = readHistory(stateDir);
    writeHistory(stateDir, rows);
    return {
      record: { kind: "sacct", previous },
      detail: `sacct answers from the ${o.name} history (${rows.filter((r) => !r.JobID?.includes(".")).length} jobs)`,
    };
  },
  undo({ stateDir }, r) {
    if (r.kind !== "sacct") return;
    writeHistory(stateDir, r.previous);
  },
};

const noReset: FaultKind = {
  usage: "no-reset --gpu N: the hypervisor blocks GPU resets (VM passthrough)",
  plant({ state }, o) {
    const gpu = gpuOf(state, o);
    const previous = gpu.resetSupported;
    gpu.resetSupported = false;
    return {
      record: { kind: "no-reset", gpu: gpu.index, previous },
      detail: `GPU ${gpu.index} cannot be reset (VM passthrough)`,
    };
  },
  undo({ state }, r) {
    if (r.kind !== "no-reset") return;
    const gpu = gpuOfRecord(state, r.gpu);
    if (gpu) gpu.resetSupported = r.previous;
  },
};

function chaosFlag(
  kind: ChaosKind,
  usageText: string,
  set: (c: ChaosFlags, o: FaultOptions) => string,
  unset: (c: ChaosFlags) => void,
): FaultKind {
  return {
    usage: usageText,
    plant({ stateDir }, o) {
      const c = readChaos(stateDir);
      const detail = set(c, o);
      writeChaos(stateDir, c);
      return { record: { kind }, detail };
    },
    undo({ stateDir }, r) {
      if (r.kind !== kind) return;
      const c = readChaos(stateDir);
      unset(c);
      if (!c.isolationBroken && !c.hang && !c.serveSlow) delete c.events;
      writeChaos(stateDir, c);
    },
  };
}

const isolationBroken = chaosFlag(
  "isolation-broken",
  "isolation-broken: an instance's OOM slows and its crash kills the other instances of its GPU",
  (c) => {
    c.isolationBroken = true;
    return "MIG isolation is broken: OOMs and crashes reach the neighbouring instances";
  },
  (c) => {
    delete c.isolationBroken;
  },
);

// serve-slow: issue 22 item 3 (latency isolation), a victim's tail latency that a neighbour's
// OOM raises; MIG must never show it, so the latency verdict must fail on it.
const serveSlow = chaosFlag(
  "serve-slow",
  "serve-slow [--gpu N] [--instance GI]: the serve on that GPU (instance) gets 4x its p99 latency once a neighbouring instance runs out of memory",
  (c, o) => {
    c.serveSlow = { gpu: o.gpu ?? 0, gi: o.instance ?? null, factor: 4 };
    return `serve on GPU ${o.gpu ?? 0}${o.instance !== undefined ? ` GI ${o.instance}` : ""} slows (p99 x4) under a neighbour's OOM`;
  },
  (c) => {
    delete c.serveSlow;
  },
);

const xidMisattributed = chaosFlag(
  "xid-misattributed",
  "xid-misattributed: Xid lines name another GPU instance than the faulting one",
  (c) => {
    c.xidMisattributed = true;
    return "Xid lines name the wrong GI/CI";
  },
  (c) => {
    delete c.xidMisattributed;
  },
);

const mpsCapIgnored = chaosFlag(
  "mps-cap-ignored",
  "mps-cap-ignored: MPS does not enforce CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (a capped client allocates past its cap)",
  (c) => {
    c.mpsCapIgnored = true;
    return "MPS clients' pinned memory limits are not enforced";
  },
  (c) => {
    delete c.mpsCapIgnored;
  },
);

/** mig-p2p-claimed: ranks on MIG instances of one GPU report P2P between them (NCCL's
 * "via P2P/IPC") instead of host memory: the model the cross-instance check holds broken. */
const migP2pClaimed = chaosFlag(
  "mig-p2p-claimed",
  "mig-p2p-claimed: NCCL ranks on MIG instances of one GPU claim a P2P path between them",
  (c) => {
    c.migP2pClaimed = true;
    return "NCCL across MIG instances claims P2P/IPC";
  },
  (c) => {
    delete c.migP2pClaimed;
  },
);

/** vgpu: the GPU as a vGPU guest sees it (`--name guest`) or a vGPU host (`--name host`,
 * time-sliced vGPUs under the best-effort scheduler, NVIDIA's default). A guest holds a quarter
 * card time-sliced C-series type, the vGPU user guide's H100-20C on an H100 80GB (its Hopper
 * vGPU types table: framebuffer 20 GB, at most 4 per GPU): its nvidia-smi and CUDA show that
 * framebuffer as the GPU's memory, and its allocations stop there. */
const vgpu: FaultKind = {
  usage: "vgpu --gpu N --name guest|host: the GPU is a vGPU (guest) or a vGPU host's",
  plant({ state }, o) {
    const gpu = gpuOf(state, o);
    if (o.name !== "guest" && o.name !== "host")
      throw usage("vgpu needs --name guest or --name host");
    const previous = gpu.virtualization ?? null;
    gpu.virtualization =
      o.name === "guest"
        ? guestOf(state, gpu)
        : { mode: "Host VGPU", scheduler: "BEST_EFFORT", activeVgpus: 2 };
    const v = gpu.virtualization;
    return {
      record: { kind: "vgpu", gpu: gpu.index, previous },
      detail: `GPU ${gpu.index} is a vGPU ${o.name}${v.vgpuType ? ` (${v.vgpuType}, framebuffer ${v.framebufferMiB} MiB)` : ""}`,
    };
  },
  undo({ state }, r) {
    if (r.kind !== "vgpu" && r.kind !== "vgpu-fb-leak") return;
    const gpu = gpuOfRecord(state, r.gpu);
    if (!gpu) return;
    if (r.previous) gpu.virtualization = r.previous;
    else delete gpu.virtualization;
  },
};

/** A quarter of the card, in whole GB as NVIDIA names its types (`H100-20C`). */
function guestOf(state: SimState, gpu: SimGpu): NonNullable<SimGpu["virtualization"]> {
  const v = viewOf(state, gpu);
  const gb = Math.max(1, Math.round(v.boardMemoryMiB / 1024 / 4));
  const board = v.smiName.replace(/^NVIDIA\s+/, "").split(/\s+/)[0];
  return { mode: "VGPU", vgpuType: `NVIDIA ${board}-${gb}C`, framebufferMiB: gb * 1024 };
}

/** vgpu-fb-leak: the vGPU guest's framebuffer isolation broken: nvidia-smi still shows the
 * framebuffer, but the host lets the guest's allocations run on into the card's memory (another
 * VM's). Makes the GPU a guest if it is not one yet. */
const vgpuFbLeak: FaultKind = {
  usage: "vgpu-fb-leak --gpu N: a vGPU guest's allocations pass its framebuffer",
  plant({ state }, o) {
    const gpu = gpuOf(state, o);
    const previous = gpu.virtualization ?? null;
    const guest = previous?.mode === "VGPU" ? previous : guestOf(state, gpu);
    gpu.virtualization = { ...guest, fbLeak: true };
    return {
      record: { kind: "vgpu-fb-leak", gpu: gpu.index, previous },
      detail: `GPU ${gpu.index} is a vGPU guest whose allocations pass its ${guest.framebufferMiB} MiB framebuffer`,
    };
  },
  undo: (ctx, r) => vgpu.undo(ctx, r),
};

const hang = chaosFlag(
  "hang",
  "hang: a stress stops progressing once a neighbouring instance faults",
  (c) => {
    c.hang = true;
    return "a victim's stress hangs when its neighbour faults";
  },
  (c) => {
    delete c.hang;
  },
);

const dropConnection = chaosFlag(
  "drop-connection",
  "drop-connection [--name PROGRAM]: the next simulated workload (of PROGRAM) kills its sshd session, once",
  (c, o) => {
    c.dropConnection = { program: o.name ?? null };
    return `the next ${o.name ?? "workload"} drops its SSH connection`;
  },
  (c) => {
    delete c.dropConnection;
  },
);

export const FAULT_KINDS: Readonly<Record<string, FaultKind>> = {
  "foreign-process": foreignProcess,
  holder,
  slurm,
  sacct,
  "no-reset": noReset,
  "gpu-lost": gpuLost,
  "ecc-uncorrectable": eccUncorrectable,
  "nvlink-down": nvlinkDown,
  "isolation-broken": isolationBroken,
  "xid-misattributed": xidMisattributed,
  "mps-cap-ignored": mpsCapIgnored,
  "mig-p2p-claimed": migP2pClaimed,
  vgpu,
  "vgpu-fb-leak": vgpuFbLeak,
  nvcc,
  "no-toolkit": noToolkit,
  "cdi-stale": cdiStale,
  image,
  "container-sees-all": containerSeesAll,
  "no-runtime": noRuntime,
  "runtime-unconfigured": runtimeUnconfigured,
  hang,
  "drop-connection": dropConnection,
  "wrong-gradient": wrongGradient,
  "serve-slow": serveSlow,
  tenant,
};

function readRecords(stateDir: string): FaultRecord[] {
  const file = join(stateDir, FAULTS_FILE);
  if (!existsSync(file)) return [];
  const data = JSON.parse(readFileSync(file, "utf8")) as { planted?: FaultRecord[] };
  return Array.isArray(data.planted) ? data.planted : [];
}

function writeRecords(stateDir: string, planted: FaultRecord[]): void {
  const file = join(stateDir, FAULTS_FILE);
  writeFileSync(`${file}.tmp`, `${JSON.stringify({ planted }, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
}

/** Plants one fault; the state lock is held throughout, so a running nvidia-smi sees all or none.
 * An unknown kind throws at once (not as a rejected promise), before anything is touched. */
export function plantFault(
  stateDir: string,
  kind: string,
  o: FaultOptions = {},
): Promise<PlantedFault> {
  const k = FAULT_KINDS[kind];
  if (!k) {
    const kinds = Object.values(FAULT_KINDS).map((f) => `  ${f.usage}`);
    throw usage(
      `unknown fault kind '${kind}'${didYouMean(kind, Object.keys(FAULT_KINDS))}; the kinds are:\n${kinds.join("\n")}`,
    );
  }
  return plantKnown(stateDir, k, o);
}

async function plantKnown(stateDir: string, k: FaultKind, o: FaultOptions): Promise<PlantedFault> {
  const planted = await updateState(stateDir, (state) => {
    const planted = k.plant({ state, stateDir }, o);
    writeRecords(stateDir, [...readRecords(stateDir), planted.record]);
    return { changed: true, result: planted };
  });
  if (planted.klog) {
    const { gpu, lines } = planted.klog;
    const pci = pciOf(gpu);
    await appendKernelLog(stateDir, lines, KERN.err, (log) =>
      log.some((rec) => rec.text.startsWith(`NVRM: GPU at PCI:${pci}: `))
        ? []
        : gpuBanner(gpu, pci),
    );
  }
  return planted;
}

/** Undoes every fault `sim fault` planted on the node, newest first; returns what it undid. */
export function clearFaults(stateDir: string): Promise<FaultRecord[]> {
  return updateState(stateDir, (state) => {
    const records = readRecords(stateDir);
    for (const r of [...records].reverse()) FAULT_KINDS[r.kind]?.undo({ state, stateDir }, r);
    writeRecords(stateDir, []);
    return { changed: records.length > 0, result: records };
  });
}
