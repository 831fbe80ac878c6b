// The latency model of the simulated `slicecheck-serve` (workloads/serve.cu). Pure, so that the
// unit tests can hold it to its promises: a MIG slice's latency depends on its own SMs only
// (serve.cu sizes its batch to the SMs, so every profile's request is about the same length),
// and a process that shares its compute unit (time-slicing, MPS) waits behind its neighbours.
//
// The figures are assumptions where the references are silent, chosen conservative (they make
// sharing look no worse than the public numbers do):
// - A request is one kernel of 4·n³ FLOP per SM (a batch of 2 matrices per SM, n × n each) at
//   25 % of the FP32 peak (a tiled shared-memory SGEMM without tensor cores; no published
//   figure for this kernel), plus 0.03 ms of launch, event wait and blocking-sync wake-up.
// - The tail alone: p99 = 1.2 × p50 (scheduling jitter of a quiet host; no reference).
// - Sharing the compute unit: the request's kernel gets the unit's share of the time, and a
//   request that arrives while a neighbour holds the time slice waits for it. NVIDIA publishes
//   no time-slice length; 2 ms is assumed. The public tail figures are whole pipelines only
//   (workloads.md 5.3: 7 vLLM tenants on an A100, p95 about 1.9 × shared vs a 1g.5gb slice);
//   this model raises a 0.1 ms p99 by far more, which is what a tail-latency check must see.

/** Launch, event wait and wake-up per request, ms (assumption). */
export const OVERHEAD_MS = 0.03;
/** Fraction of the FP32 peak the tiled kernel reaches (assumption). */
export const EFFICIENCY = 0.25;
/** p99 over p50 of a request stream alone on its unit (assumption). */
export const ALONE_TAIL = 1.2;
/** How long a request waits when a neighbour holds the time slice, ms (assumption). */
export const TIMESLICE_MS = 2;

export interface ServeConditions {
  /** FP32 TFLOP/s per SM of the product. */
  fp32PerSm: number;
  /** Device memory as the process sees it (serve.cu: n = 128 from 4 GiB, else 64). */
  memoryMiB: number;
  /** The process's share of its compute unit (1 alone; session.ts shareOf). */
  share: number;
  /** A planted slowdown of the tail (`sim fault serve-slow`): p99 × this. */
  tailFactor?: number;
}

export interface ServeFigures {
  p50Ms: number;
  p99Ms: number;
  rps: number;
}

export function matrixSize(memoryMiB: number): number {
  return memoryMiB >= 4096 ? 128 : 64;
}

export function serveFigures(c: ServeConditions): ServeFigures {
  const n = matrixSize(c.memoryMiB);
  const kernelMs = ((4 * n ** 3) / (c.fp32PerSm * 1e12 * EFFICIENCY)) * 1e3;
  const share = c.share > 0 && c.share <= 1 ? c.share : 1;
  const p50Ms = OVERHEAD_MS + kernelMs / share;
  const tail = share < 1 ? p50Ms + TIMESLICE_MS : p50Ms * ALONE_TAIL;
  const p99Ms = tail * (c.tailFactor ?? 1);
  // One request at a time, plus its sentinel fill and check (about another request's overhead).
  const rps = 1000 / (p50Ms + 2 * OVERHEAD_MS);
  return { p50Ms, p99Ms, rps };
}
