#!/usr/bin/env node

// The simulated `gpu_burn` (wilicc/gpu-burn; formats in gpu-burn-cli.ts): one burn client per
// visible CUDA device, each doing batches of `iterations` GEMMs of 8192² and reporting after
// every batch (the first after two, as the real child does), the parent reprinting progress with
// a leading `\r` on every report and every 5 s (its nvidia-smi temperature poll), a summary every
// 10 %, then the kill, `done` and `Tested N GPUs:` with `GPU i: OK|FAULTY`. Parent exit 0 even
// with a FAULTY GPU; 19 without devices; 22 on a bad -m/-i; 123 when every client died.
//
// Rate per client: SMs × per-SM peak (FP32, FP64 with -d, TF32 with -tc on floats) × a cuBLAS
// GEMM efficiency of 0.81 (the reference capture gpu-burn_a100x4: 15881 Gflop/s for -d on an
// A100-SXM4-40GB against its 19500 peak), ±1 % noise, shared with the other processes on the
// same compute unit. Children's stdout is block-buffered when it is not a terminal, so their
// `Initialized device` lines come out when they exit (as in the superbench capture).
//
// Where the simulation is simpler than the real program: the parent does not sleep the 30 s
// SIGTERM grace period (clients stop at once), a dead client's `read[i] error 0` is printed once,
// not in a loop, and a dead client is reported FAULTY (the real counter is uninitialised).

import { formatList } from "../nvsmi/fmt/list.js";
import { layoutFor } from "../nvsmi/layout.js";
import { readState } from "../nvsmi/state.js";
import { viewOf } from "../nvsmi/view.js";
import { admit, CONTEXT_MIB, freeMiB, MIB } from "./admit.js";
import { nodeCtx } from "./ctx.js";
import { type CudaError, cudaErrorByCode } from "./cuda.js";
import type { SimDevice } from "./device.js";
import {
  type ClientView,
  dateLine,
  HELP,
  OPS_PER_MUL,
  parseBurnArgs,
  progressLine,
  SIZE,
  USEMEM,
} from "./gpu-burn-cli.js";
import { noiseSource, smRates } from "./model.js";
import { type Registration, register } from "./registry.js";
import { doomed, entryFor, finish, openSession, sharersOf } from "./session.js";

// Runs as a Node process of its own (the resident simulator runs stress, memhog, crasher, serve).
const ctx = nodeCtx();

const GEMM_EFFICIENCY = 0.81;
/** Line numbers of gpu_burn-drv.cpp's checks (approximate: they move between versions). */
const LINE = { alloc: 204, ctx: 105, event: 351 };
const TEMP_POLL_MS = 5000;

const parsed = parseBurnArgs(process.argv.slice(2));
const print = (text: string) => process.stdout.write(text);
if (parsed.kind === "help") {
  print(HELP);
  process.exit(0);
}
if (parsed.kind === "syntax") {
  process.stderr.write(`Syntax error near ${parsed.option}\n`);
  process.exit(22);
}
const s = openSession(ctx, "gpu_burn", false, "gpu_burn");
const state = readState(s.stateDir);
if (parsed.kind === "list") {
  for (const d of s.devices)
    print(`ID ${d.ordinal}: ${d.name}, ${Math.floor((d.memoryMiB * MIB) / 1e6)}MB\n`);
  process.exit(0);
}
const args = parsed.args;
if (!args.lengthGiven) print("Run length not specified in the command line. ");
print(`Using compare file: ${args.kernelFile}\nBurning for ${args.runLength} seconds.\n`);
print(
  `${formatList(
    state.gpus.map((g) => viewOf(state, g)),
    layoutFor(state.driver),
  ).join("\n")}\n`,
);

if (s.devices.length === 0) {
  process.stderr.write(
    "terminate called after throwing an instance of 'std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >'\nNo CUDA devices\n",
  );
  process.exit(19);
}

interface Client extends ClientView {
  dev: SimDevice | undefined;
  /** Child stdout, held until the child exits unless stdout is a terminal. */
  buffered: string[];
  iters: number;
  nextAt: number;
  lastAt: number;
  noise: () => number;
  rate: number;
}

const resultSize = (args.doubles ? 8 : 4) * SIZE * SIZE;
const tty = process.stdout.isTTY === true;
const childOut = (c: Client, line: string) => (tty ? print(`${line}\n`) : c.buffered.push(line));
const devices = args.deviceId >= 0 ? [s.devices[args.deviceId]] : s.devices;
const clients: Client[] = devices.map((dev, k) => {
  const r = smRates(dev?.product ?? "", dev?.architecture);
  const perSm = args.doubles ? r.fp64 : args.tensorCores ? r.tf32 : r.fp32;
  return {
    dev,
    buffered: [],
    iters: 0,
    nextAt: 0,
    lastAt: 0,
    noise: noiseSource(s.pid * 31 + k),
    rate: (dev?.sm ?? 0) * perSm * 1000 * GEMM_EFFICIENCY,
    calcs: 0,
    gflops: 0,
    errors: 0,
    died: false,
    temp: 0,
  };
});

/** Each child's initBuffers, decided under the lock so the memory it takes is really free. */
const failures = await register(s.stateDir, "gpu_burn", s.pid, (st) => {
  const entries: Registration[] = [];
  const failed: (string | null)[] = [];
  for (const c of clients) {
    const dev = c.dev;
    if (!dev) {
      failed.push(
        `Couldn't init a GPU test: Error (gpu_burn-drv.cpp:${LINE.ctx}): invalid device ordinal`,
      );
      continue;
    }
    if (admit(st, dev, CONTEXT_MIB) === "mps-not-ready") {
      failed.push(
        `Couldn't init a GPU test: Error (gpu_burn-drv.cpp:${LINE.ctx}): MPS server is not ready to accept new MPS client requests`,
      );
      continue;
    }
    const avail = (freeMiB(st, dev, s.pid) - CONTEXT_MIB) * MIB;
    const use =
      args.useBytes === 0
        ? avail * USEMEM
        : args.useBytes < 0
          ? (avail * -args.useBytes) / 100
          : args.useBytes;
    c.iters = Math.max(0, Math.floor((use - 2 * resultSize) / resultSize));
    const mb = (b: number) => Math.floor(Math.max(0, b) / MIB);
    childOut(
      c,
      `Initialized device ${dev.ordinal} with ${dev.memoryMiB} MB of memory (${mb(avail)} MB available, using ${mb(use)} MB of it), using ${args.doubles ? "DOUBLES" : "FLOATS"}${args.tensorCores ? ", using Tensor Cores" : ""}`,
    );
    childOut(c, `Results are ${resultSize} bytes each, thus performing ${c.iters} iterations`);
    if (use < 3 * resultSize) {
      failed.push(
        "terminate called after throwing an instance of 'std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >'",
      );
    } else if ((c.iters + 2) * resultSize > avail) {
      failed.push(
        `Couldn't init a GPU test: Error in C alloc (gpu_burn-drv.cpp:${LINE.alloc}): out of memory`,
      );
    } else {
      failed.push(null);
      entries.push(entryFor(dev, CONTEXT_MIB + Math.ceil(((c.iters + 2) * resultSize) / MIB)));
    }
  }
  return { entries, result: failed };
});

const start = Date.now();
const startSec = Math.floor(start / 1000);
function schedule(c: Client, from: number, batches: number): void {
  const st = readState(s.stateDir);
  const share = c.dev ? sharersOf(st, c.dev, s.pid) : 1;
  const gflops = (c.rate * c.noise()) / share;
  c.nextAt = from + ((batches * c.iters * OPS_PER_MUL) / (gflops * 1e9)) * 1000;
}
failures.forEach((f, i) => {
  const c = clients[i]!;
  c.lastAt = start;
  if (f !== null) {
    process.stderr.write(`${f}\n`);
    c.died = true;
    c.nextAt = start;
  } else schedule(c, start, 2);
});
const pendingDeath = new Set(clients.filter((c) => c.died));
const dead = (c: Client, e: CudaError) => {
  process.stderr.write(
    `Failure during compute: Error in Record event (gpu_burn-drv.cpp:${LINE.event}): ${e.text}\n`,
  );
  c.died = true;
  c.calcs = -1;
};

let reported = false;
let nextSummary = 10;
let nextTemp = start;
for (;;) {
  const live = clients.filter((c) => !c.died);
  const due = Math.min(
    nextTemp,
    ...live.map((c) => c.nextAt),
    pendingDeath.size > 0 ? start : Number.POSITIVE_INFINITY,
  );
  while (Date.now() < due) await new Promise((r) => setTimeout(r, Math.min(50, due - Date.now())));
  const now = Date.now();
  const thisSec = Math.floor(now / 1000);
  for (const c of pendingDeath) {
    process.stderr.write(`read[${clients.indexOf(c)}] error 0`);
    c.calcs = -1;
    reported = true;
  }
  pendingDeath.clear();
  for (const c of live) {
    const doom = c.dev ? doomed(s, c.dev) : null;
    if (doom !== null) {
      dead(c, cudaErrorByCode(doom));
      reported = true;
    } else if (now >= c.nextAt) {
      // Timed from when the child wrote its report (the batch's end), not from when this loop
      // woke up: timer latency is the simulator's, not the GPU's.
      c.gflops = (c.iters * OPS_PER_MUL) / ((c.nextAt - c.lastAt) / 1000) / 1e9;
      c.calcs += c.iters;
      c.lastAt = c.nextAt;
      schedule(c, c.nextAt, 1);
      reported = true;
    }
  }
  if (now >= nextTemp) {
    for (const c of clients) c.temp = c.dev?.gpu.telemetry.tempC ?? 0;
    nextTemp += TEMP_POLL_MS;
  }
  if (reported) {
    // fminf(x / runTime * 100, 100): a zero run length gives inf or NaN, and fminf 100.
    const ratio = ((thisSec - startSec) / args.runLength) * 100;
    const elapsed = Number.isNaN(ratio) ? 100 : Math.min(ratio, 100);
    print(progressLine(elapsed, clients));
    if (nextSummary < elapsed) {
      nextSummary = elapsed + 10;
      print(`\n\tSummary at:   ${dateLine(new Date(now))}\n\n`);
    }
  }
  if (clients.every((c) => c.died)) {
    process.stderr.write("\n\nNo clients are alive!  Aborting\n");
    await finish(s, 123);
  }
  if (startSec + args.runLength < thisSec) break;
}

print("\nKilling processes with SIGTERM (soft kill)\n");
for (const c of clients) {
  if (c.died) continue;
  childOut(c, `Freed memory for dev ${c.dev?.ordinal ?? 0}`);
  childOut(c, "Uninitted cublas");
}
for (const c of clients) if (c.buffered.length > 0) print(`${c.buffered.join("\n")}\n`);
print(`done\n\nTested ${clients.length} GPUs:\n`);
for (const [i, c] of clients.entries()) {
  print(`\tGPU ${i}: ${c.died || c.errors > 0 ? "FAULTY" : "OK"}\n`);
}
await finish(s, 0);
