#!/usr/bin/env node

// The simulated `all_reduce_perf` (nccl-tests, built without MPI): one process, nThreads × nGpus
// ranks on the first visible devices, the header, one row per size, the footer (formats in
// nccl-cli.ts). With one MIG device visible a process has one rank, so busbw is 0 by the
// 2(n-1)/n factor (reference workloads.md 1.2, sample rtx5090_1gpu); `-g 2` inside a MIG slice
// fails with `Invalid number of GPUs` (exit 5).
//
// Time model, per iteration:
// - one rank, out-of-place: 5.5 us of launch latency (the capture's small sizes show 5.3-5.6 us)
//   plus a device-to-device copy of the buffer at half the memory bandwidth (read and write),
//   the GI's share of it under MIG; in-place is a no-op for NCCL with one rank, 0.2 us (capture);
// - n ranks over whole GPUs: 35 us (the 8x A100 capture's small sizes) plus 2(n-1)/n of the
//   bytes at the node's bus bandwidth (model.ts allReduceBusGBs).
// - NVLink only between whole GPUs whose links are up (sim fault nvlink-down takes them down;
//   a MIG device never uses NVLink: workloads.md "NVLink is not supported when in MIG mode"):
//   otherwise NCCL goes through host memory (SHM) at the PCIe figure (model.ts pcieBusGBs).
// With NCCL_DEBUG=INFO the process prints NCCL's INFO lines: the version and one line per ring
// connection naming its transport (`via P2P/CUMEM/read` or `via SHM/direct/direct`, the forms
// real logs show), as NCCL does on stdout.
// algbw = bytes / time, busbw = algbw × 2(n-1)/n; ±1 % noise per row. The process sleeps the
// modelled time of its warm-up and timed iterations, so it runs for real.

import { activeNvlinks } from "../nvsmi/fmt/topo.js";
import { readState } from "../nvsmi/state.js";
import { admit, CONTEXT_MIB, freeMiB, MIB } from "./admit.js";
import { nodeCtx } from "./ctx.js";
import { cudaErrorByCode } from "./cuda.js";
import { allReduceBusGBs, memoryGBs, noiseSource, pcieBusGBs } from "./model.js";
import {
  cG,
  headerLine,
  type Measure,
  parseNcclArgs,
  rankLine,
  rowLine,
  TABLE_HEADER,
  TYPE_SIZES,
} from "./nccl-cli.js";
import { register } from "./registry.js";
import { doomed, entryFor, finish, openSession } from "./session.js";

// Runs as a Node process of its own (the resident simulator runs stress, memhog, crasher, serve).
const ctx = nodeCtx();

/** nccl-tests exit statuses (testResult_t, reference 1.4). */
const EXIT = { ok: 0, cuda: 2, notImplemented: 5, invalidUsage: 6 } as const;
/** common.cu lines of the checks, from the real capture (941: device setup, 891: its caller). */
const LINE = { cuda: 941, caller: 891 };
const INIT_MS = 300;

const parsed = parseNcclArgs(process.argv.slice(2));
if (typeof parsed === "string") {
  process.stderr.write(`${parsed}\n`);
  process.exit(EXIT.invalidUsage);
}
const a = parsed;
if (a.nThreads < 1 || a.nGpus < 1) {
  process.stderr.write(
    `invalid number of threads or GPUs per thread: -t ${a.nThreads} -g ${a.nGpus}\n`,
  );
  process.exit(EXIT.invalidUsage);
}
const s = openSession(ctx, "all_reduce_perf", false, "all_reduce_perf");
const host = readState(s.stateDir).node;
const print = (line: string) => process.stdout.write(`${line}\n`);
const trace = () => print(` .. ${host} pid ${s.pid}: Test failure common.cu:${LINE.caller}`);

print(headerLine(a));
print("#");
print("# Using devices");
const ranks = a.nThreads * a.nGpus;
if (ranks > s.devices.length) {
  process.stderr.write(
    `Invalid number of GPUs: ${ranks} requested but only ${s.devices.length} were found.\nPlease check the number of processes and GPUs per process.\n`,
  );
  trace();
  await finish(s, EXIT.notImplemented);
}
const devs = s.devices.slice(0, ranks);
for (const [r, d] of devs.entries()) print(rankLine(r, s.pid, host, d.ordinal, d.pci, d.name));

// Three buffers (send, recv, expected) with validation, two without; 1 GiB kept for NCCL.
const buffers = a.check ? 3 : 2;
const minMem = Math.min(...devs.map((d) => d.memoryMiB)) * MIB;
const memMax = Math.floor((minMem - 2 ** 30) / buffers);
if (a.maxBytes > memMax) {
  a.maxBytes = memMax;
  print("#");
  print(`# Reducing maxBytes to ${a.maxBytes} due to memory limitation`);
}
const need = CONTEXT_MIB + Math.ceil((buffers * a.maxBytes) / MIB);
const ok = await register(s.stateDir, s.processName, s.pid, (state) => {
  const fits = devs.every(
    (d) => admit(state, d, need) === "ok" && freeMiB(state, d, s.pid) >= need,
  );
  return { entries: fits ? devs.map((d) => entryFor(d, need)) : [], result: fits };
});
if (!ok) {
  print(`${host}: Test CUDA failure common.cu:${LINE.cuda} 'out of memory'`);
  trace();
  await finish(s, EXIT.cuda);
}
await new Promise((r) => setTimeout(r, INIT_MS));
const nvlink = devs.every((d) => d.gi === null && activeNvlinks(d.gpu) > 0);
if (/^info$/i.test(process.env.NCCL_DEBUG ?? "")) printInfo(nvlink);
for (const line of TABLE_HEADER) print(line);

const n = devs.length;
const factor = (2 * (n - 1)) / n;
const first = devs[0]!;
const copyGBs = (memoryGBs(first.product) * first.memoryShare) / 2;
const busGBs = nvlink
  ? allReduceBusGBs(first.boardKey, first.architecture, first.product)
  : pcieBusGBs(first.architecture);
const noise = noiseSource(s.pid);
const wordSize = TYPE_SIZES[a.type] ?? 4;
const measure = (bytes: number, inPlace: boolean): Measure => {
  const us =
    n === 1
      ? inPlace
        ? 0.2
        : 5.5 + bytes / (copyGBs * 1e3)
      : 35 + (bytes * factor) / (busGBs * 1e3);
  const timeUs = us * noise();
  const algbw = bytes / timeUs / 1e3;
  return { timeUs, algbw, busbw: algbw * factor };
};

let busSum = 0;
let busCount = 0;
for (let size = a.minBytes; size <= a.maxBytes; ) {
  const count = Math.floor(size / wordSize);
  const bytes = count * wordSize;
  const oop = measure(bytes, false);
  const ip = measure(bytes, true);
  const spentMs = ((a.warmup + a.iters * a.aggIters) * (oop.timeUs + ip.timeUs)) / 1000;
  await new Promise((r) => setTimeout(r, Math.max(1, spentMs)));
  const doom = doomed(s, first);
  if (doom !== null) {
    print(`${host}: Test CUDA failure common.cu:${LINE.cuda} '${cudaErrorByCode(doom).text}'`);
    trace();
    await finish(s, EXIT.cuda);
  }
  print(rowLine(bytes, count, a, oop, ip));
  busSum += oop.busbw + ip.busbw;
  busCount += 2;
  const next = a.stepFactor > 1 ? size * a.stepFactor : size + a.stepBytes;
  if (next <= size) break;
  size = next;
}
print("# Out of bounds values : 0 OK");
// %s after the value is "" without NCCL_TESTS_MIN_BW, so the line ends in a space.
print(`# Avg bus bandwidth    : ${cG(busCount > 0 ? busSum / busCount : 0)} `);
print("#");
print("");
await finish(s, EXIT.ok);

/** NCCL's INFO lines for this communicator: version, and each ring connection's transport. */
function printInfo(viaNvlink: boolean): void {
  if (devs.length < 2) return;
  const tag = (r: number) => `${host}:${s.pid}:${s.pid + 1 + r} [${devs[r]!.ordinal}] NCCL INFO`;
  print(`${tag(0)} NCCL version 2.21.5+cuda12.4`);
  const via = viaNvlink ? "P2P/CUMEM/read" : "SHM/direct/direct";
  for (let c = 0; c < 2; c++)
    for (let r = 0; r < devs.length; r++) {
      const next = (r + 1) % devs.length;
      const ch = String(c).padStart(2, "0");
      print(
        `${tag(r)} Channel ${ch}/0 : ${r}[${devs[r]!.ordinal}] -> ${next}[${devs[next]!.ordinal}] via ${via}`,
      );
    }
  print(`${tag(0)} Connected all rings`);
}
