// The performance model of the simulated GPUs. Every rate is a public peak figure divided by the
// SM count, so a MIG instance gets its CI's SMs times the per-SM rate; instances share nothing,
// and processes on one compute unit (a whole GPU, or one CI) share its rate equally, as
// time-slicing does ("CUDA will simply give an equal share of time to all of the GPU processes",
// k8s-device-plugin README, workloads.md 5.2). Memory bandwidth scales with the GI's memory
// slices. The figures are peaks: the model says how results relate, not what a real run gets.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Architecture } from "../../../src/mig/catalog/types.js";

/** Dense peak TFLOP/s per SM: FP32 (CUDA cores), FP64 as DGEMM gets it, TF32 tensor cores. */
export interface SmRates {
  fp32: number;
  fp64: number;
  tf32: number;
}

// A100 datasheet: FP32 19.5, FP64 Tensor Core 19.5, TF32 156 (dense) over 108 SMs.
// H100 SXM5 datasheet: FP32 67, FP64 Tensor Core 67, TF32 494.5 (989 with sparsity) over 132 SMs.
// HGX B200 at 1000 W (NVIDIA Blackwell datasheet via glennklockwood.com/garden/processors/B200):
// FP32 80, FP64 40, TF32 1100 over 148 SMs.
const BY_ARCH: Readonly<Record<Architecture, SmRates>> = {
  ampere: { fp32: 19.5 / 108, fp64: 19.5 / 108, tf32: 156 / 108 },
  hopper: { fp32: 67 / 132, fp64: 67 / 132, tf32: 494.5 / 132 },
  blackwell: { fp32: 80 / 148, fp64: 40 / 148, tf32: 1100 / 148 },
};

// Products clocked differently from their architecture's flagship (datasheets): A30 FP32 10.3
// over 56 SMs, H100 PCIe 51 over 114, H100 NVL 60 over 132. FP64/TF32 scale by the same factor.
const FP32_BY_PRODUCT: Readonly<Record<string, number>> = {
  A30: 10.3 / 56,
  "H100-PCIE": 51 / 114,
  "H100-NVL": 60 / 132,
};

/** Boards without MIG (sim/src/nvsmi/state.ts NON_MIG_BOARDS): SM count and rates. */
export const NON_MIG_MODEL: Readonly<Record<string, { sm: number; rates: SmRates }>> = {
  // L40S datasheet: 142 SMs, FP32 91.6, TF32 183 dense; FP64 is not published, Ada runs it at
  // 1/64 of FP32.
  L40S: { sm: 142, rates: { fp32: 91.6 / 142, fp64: 91.6 / 64 / 142, tf32: 183 / 142 } },
  // T4 datasheet: 40 SMs, FP32 8.1; Turing has no TF32, so tensor-core floats run at FP32 speed;
  // FP64 is 1/32 of FP32.
  T4: { sm: 40, rates: { fp32: 8.1 / 40, fp64: 8.1 / 32 / 40, tf32: 8.1 / 40 } },
};

export function smRates(product: string, architecture: Architecture | undefined): SmRates {
  const board = NON_MIG_MODEL[product];
  if (board) return board.rates;
  const base = BY_ARCH[architecture ?? "ampere"];
  const fp32 = FP32_BY_PRODUCT[product];
  if (fp32 === undefined) return base;
  const k = fp32 / base.fp32;
  return { fp32, fp64: base.fp64 * k, tf32: base.tf32 * k };
}

/** HBM/GDDR bandwidth in GB/s of the whole GPU (datasheets; A100 80GB is the SXM figure). */
const MEMORY_GBS: Readonly<Record<string, number>> = {
  A30: 933,
  "A100-40GB": 1555,
  "A100-80GB": 2039,
  "H100-80GB": 3350,
  "H100-PCIE": 2000,
  "H100-NVL": 3900,
  "GH200-96GB": 4000,
  H200: 4800,
  B200: 8000,
  L40S: 864,
  T4: 320,
};

export function memoryGBs(product: string): number {
  return MEMORY_GBS[product] ?? 1555;
}

/**
 * Bus bandwidth (GB/s) all_reduce reaches across whole GPUs of one node. Anchored on the real
 * 8x A100-SXM4 capture (superbench nccl_allreduce.log: busbw levels off at 235 GB/s over
 * NVLink3, 600 GB/s) and scaled by NVLink generation (NVLink4 900, NVLink5 1800 GB/s per
 * datasheets). Boards without an NVSwitch fabric go through PCIe: 20 GB/s on Gen4 and 40 on
 * Gen5 are assumptions (about 80 % of one direction of a x16 link).
 */
export function allReduceBusGBs(
  boardKey: string,
  architecture: Architecture | undefined,
  product: string,
): number {
  const nvlink = /SXM|GH200/i.test(boardKey) || product === "B200";
  if (nvlink) {
    const link = architecture === "blackwell" ? 1800 : architecture === "hopper" ? 900 : 600;
    return (235 * link) / 600;
  }
  return pcieBusGBs(architecture);
}

/** The PCIe figure of allReduceBusGBs: also where NVLink is down and NCCL goes through host
 * memory (SHM), which crosses PCIe twice; the references are silent on that path's figure, so
 * the same conservative one is used. */
export function pcieBusGBs(architecture: Architecture | undefined): number {
  return architecture === "hopper" || architecture === "blackwell" ? 40 : 20;
}

/**
 * ±1 % noise, deterministic per process: mulberry32 seeded with the pid, so a rerun of the same
 * pid is reproducible while two processes never print identical figures.
 */
export function noiseSource(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const u = ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    return 1 + (u * 2 - 1) * 0.01;
  };
}

/** Planted by `slicecheck sim upgrade-driver --regress PROFILE:METRIC=FACTOR`: profile → metric → factor. */
export const REGRESSIONS_FILE = "regressions.json";
export type Regressions = Record<string, Record<string, number>>;

/**
 * The factor a planted driver regression puts on one metric of one MIG profile (1 when none is
 * planted). It exists so that `slicecheck diff` has a regression to find: a checker that cannot
 * fail on a planted fault is not a checker. Read once per workload start; a missing or broken
 * file means no regression, never a crashed workload.
 */
export function regressionFactor(stateDir: string, profile: string | null, metric: string): number {
  if (profile === null) return 1;
  try {
    const r = JSON.parse(readFileSync(join(stateDir, REGRESSIONS_FILE), "utf8")) as Regressions;
    const f = r[profile]?.[metric];
    return typeof f === "number" && f > 0 ? f : 1;
  } catch {
    return 1;
  }
}

/** The MIG profile in a device name (`NVIDIA H100 80GB HBM3 MIG 1g.10gb` → `1g.10gb`). */
export function profileOfDevice(name: string): string | null {
  return /\bMIG (\S+)$/.exec(name)?.[1] ?? null;
}
