// Which MIG profile a job would fit on a product: the smallest GPU-instance profile with the
// memory the job used (its `gres/gpumem` peak, with headroom), else the one its MIG GRES type
// asked for. A job of more than one GPU fits no MIG profile (an instance is a fraction of one
// GPU); a job whose GPU memory is neither accounted nor named can only be given a whole card.
// GPU utilization is not used to size compute: NVML's figure is the share of time a kernel ran,
// not the share of SMs it needed, so a busy 1g-sized job and a busy whole-card job read the same.

import { catalogFor, type GiProfile, type ProductKey } from "../../mig/catalog/index.js";
import type { SacctJob } from "./sacct.js";

/** `gres/gpumem` is a peak sampled every JobAcctGatherFrequency (30 s by default): a shorter
 * spike goes unseen, so a profile must offer a tenth more than the peak read. */
export const MEMORY_HEADROOM = 1.1;

export type FitBasis = "used" | "requested" | "unknown";

export interface JobFit {
  /** The smallest profile that holds the job; null when none does (multi-GPU). */
  profile: string | null;
  /** The profile is the whole GPU (7g, 4g on A30): slicing gains this job nothing. */
  wholeCard: boolean;
  basis: FitBasis;
  /** In words, for the table and JSON. */
  why: string;
}

/** The GPU-instance profiles a job can be placed on: no `+me`/`+gfx` variants (they exist once
 * per GPU for media work), smallest first (memory slices, then compute slices). */
export function sliceProfiles(product: ProductKey): readonly GiProfile[] {
  const hit = SLICE_PROFILES.get(product);
  if (hit) return hit;
  const list = catalogFor(product)
    .giProfiles.filter((p) => !p.name.includes("+"))
    .sort((a, b) => a.memorySlices - b.memorySlices || a.computeSlices - b.computeSlices);
  SLICE_PROFILES.set(product, list);
  return list;
}

// A history holds thousands of jobs, each fitted on every product: resolve each catalogue once.
const SLICE_PROFILES = new Map<ProductKey, readonly GiProfile[]>();

function nominalGiB(name: string): number {
  const m = /\.(\d+)gb/i.exec(name);
  return m ? Number(m[1]) : 0;
}

const GIB = 1024 ** 3;

function need(job: SacctJob): { basis: FitBasis; fits: (p: GiProfile) => boolean; what: string } {
  if (job.gpuMemUsedBytes !== null) {
    const bytes = job.gpuMemUsedBytes * MEMORY_HEADROOM;
    return {
      basis: "used",
      fits: (p) => p.memoryMiB * 1024 ** 2 >= bytes,
      what: `${(job.gpuMemUsedBytes / GIB).toFixed(1)} GiB used (+${Math.round((MEMORY_HEADROOM - 1) * 100)} %)`,
    };
  }
  const asked = job.migRequest;
  if (asked) {
    return {
      basis: "requested",
      fits: (p) => nominalGiB(p.name) >= asked.gib && p.computeSlices >= asked.slices,
      what: `asked for ${job.gpuType}`,
    };
  }
  return { basis: "unknown", fits: () => false, what: "" };
}

export function fitJob(job: SacctJob, product: ProductKey): JobFit {
  const profiles = sliceProfiles(product);
  const whole = profiles[profiles.length - 1];
  if (job.gpus > 1) {
    return {
      profile: null,
      wholeCard: true,
      basis: job.gpuMemUsedBytes !== null ? "used" : "unknown",
      why: `${job.gpus} GPUs: a MIG instance is part of one GPU`,
    };
  }
  const n = need(job);
  if (n.basis === "unknown") {
    return {
      profile: whole?.name ?? null,
      wholeCard: true,
      basis: "unknown",
      why: "GPU memory not accounted (no gres/gpumem) nor named by a MIG GRES type: whole card",
    };
  }
  const hit = profiles.find(n.fits);
  const wholeCard = hit === undefined || hit === whole;
  return {
    profile: hit?.name ?? null,
    wholeCard,
    basis: n.basis,
    why: hit ? `${n.what} → ${hit.name}` : `${n.what}: more than the whole GPU offers`,
  };
}
