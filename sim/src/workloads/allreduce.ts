#!/usr/bin/env node
// The simulated `slicecheck-allreduce` (workloads/allreduce.cu): one rank of an NCCL
// all_reduce in its own process, seeing only CUDA_VISIBLE_DEVICES. Rank 0 writes a 128-byte id
// to --id-file (a temporary file renamed over it); the others poll for it until --wait. Where
// real NCCL's bootstrap then tells each rank where its peers are, here each rank leaves
// `<id-file>.rank<R>` (its GPU, GPU instance and pid) and waits for all N: a rank that never
// comes leaves the others waiting until --wait, then failing as NCCL's init would.
//
// Transport (NCCL_DEBUG=INFO prints it as NCCL does: `Channel 00 : 0[0] -> 1[0] via ...`):
// - ranks on MIG instances of one GPU: SHM (reference workloads.md 1.5: no CUDA P2P or IPC
//   between MIG instances, traffic goes through host memory, sjeaugey in NVIDIA/nccl#1716, the
//   RAPIDS MIG page). NCCL 2.30+ is modelled: without NCCL_MULTI_RANK_GPU_ENABLE=1 it refuses
//   several ranks on one GPU (the message of init.cc, reference 1.5). The planted
//   `mig-p2p-claimed` fault makes this path claim P2P/IPC instead, at the SHM figure;
// - ranks on distinct whole GPUs: P2P/IPC at the node's all_reduce bus bandwidth (model.ts
//   allReduceBusGBs: NVLink on SXM boards, PCIe otherwise).
// Bandwidth of the SHM path: the references are silent on the figure. Each rank's data crosses
// the one GPU's PCIe link twice (device to host memory, host memory to the peer device), so it
// is taken as half the PCIe figure model.ts assumes for a whole-GPU all_reduce over PCIe
// (10 GB/s busbw on PCIe Gen4, 20 on Gen5): conservative, and far below any NVLink figure.
// time = bytes × 2(n-1)/n / busbw per all_reduce, ±1 % noise; the process sleeps the modelled
// time of its 2 warm-up and --iters timed all_reduces. --plant-error reports one wrong element.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { formatAllreduceLine } from "../../../src/workloads/parsers/builtin.js";
import { CONTEXT_MIB, MIB } from "./admit.js";
import { readChaos } from "./chaos.js";
import { nodeCtx } from "./ctx.js";
import { SITES } from "./cuda.js";
import { eachOption, parseBytes, parseDouble, usageError } from "./flags.js";
import { allReduceBusGBs, noiseSource } from "./model.js";
import { finish, joinDevice, openDevice, openSession, sleepWatching } from "./session.js";

// Runs as a Node process of its own (the resident simulator runs stress, memhog, crasher, serve).
const ctx = nodeCtx();

const PROGRAM = "allreduce";
const USAGE =
  "usage: allreduce --rank R --nranks N --id-file PATH [--bytes B] [--iters K] [--wait S]\n" +
  "                 [--plant-error]\n";
const EXIT = { wrong: 1, cuda: 2 } as const;

const o = { rank: -1, nranks: 0, idFile: "", bytes: 64 * MIB, iters: 20, waitS: 60, plant: false };
eachOption(ctx, PROGRAM, USAGE, (name, next) => {
  const int = (min: number) => {
    const raw = next();
    const v = parseDouble(raw);
    if (v === undefined || !Number.isInteger(v) || v < min)
      usageError(ctx, PROGRAM, USAGE, `${name} needs an integer >= ${min}, got`, raw);
    return v;
  };
  if (name === "--rank") o.rank = int(0);
  else if (name === "--nranks") o.nranks = int(1);
  else if (name === "--iters") o.iters = int(1);
  else if (name === "--id-file") o.idFile = next();
  else if (name === "--bytes") {
    const raw = next();
    const v = parseBytes(raw);
    if (v === undefined || v < 4) usageError(ctx, PROGRAM, USAGE, `${name} needs a size, got`, raw);
    o.bytes = v;
  } else if (name === "--wait") {
    const raw = next();
    const v = parseDouble(raw);
    if (v === undefined || v <= 0)
      usageError(ctx, PROGRAM, USAGE, "--wait needs seconds > 0, got", raw);
    o.waitS = v;
  } else if (name === "--plant-error") o.plant = true;
  else usageError(ctx, PROGRAM, USAGE, "unknown argument", name);
});
if (o.nranks < 1 || o.idFile === "")
  usageError(ctx, PROGRAM, USAGE, "--rank, --nranks and --id-file are required");
if (o.rank < 0 || o.rank >= o.nranks)
  usageError(ctx, PROGRAM, USAGE, "--rank must be below --nranks");

const s = openSession(ctx, PROGRAM, true);
const dev = await openDevice(s);
const host = hostname();
const info = (line: string) => s.out(`${host}:${s.pid}:${s.pid + 1} [0] NCCL INFO ${line}`);
const deadline = Date.now() + o.waitS * 1000;

interface Peer {
  rank: number;
  gpu: string;
  gi: number | null;
  pid: number;
}

async function waitFor(path: string, what: string): Promise<string> {
  for (;;) {
    if (existsSync(path)) return readFileSync(path, "utf8");
    if (Date.now() >= deadline) {
      s.err(`allreduce: no ${what} in ${path} after ${o.waitS} s`);
      return finish(s, EXIT.cuda);
    }
    if (await sleepWatching(s, 50, dev, SITES.stressSync)) return finish(s, 128 + 15);
  }
}

function publish(path: string, body: string): void {
  writeFileSync(`${path}.tmp.${s.pid}`, body);
  renameSync(`${path}.tmp.${s.pid}`, path);
}

// The rendezvous: the id, then every rank's place.
if (o.rank === 0) publish(o.idFile, "x".repeat(128));
else await waitFor(o.idFile, "NCCL id");
const me: Peer = { rank: o.rank, gpu: dev.gpu.uuid, gi: dev.gi?.id ?? null, pid: s.pid };
publish(`${o.idFile}.rank${o.rank}`, JSON.stringify(me));
const peers: Peer[] = [];
for (let r = 0; r < o.nranks; r++)
  peers.push(JSON.parse(await waitFor(`${o.idFile}.rank${r}`, `rank ${r}`)) as Peer);
info(`comm rank ${o.rank} nranks ${o.nranks} cudaDev 0 busId ${dev.pci} - Init START`);

const sameGpu = peers.every((p) => p.gpu === me.gpu);
if (sameGpu && o.nranks > 1 && process.env.NCCL_MULTI_RANK_GPU_ENABLE !== "1") {
  s.out(
    `${host}:${s.pid}:${s.pid + 1} [0] NCCL WARN Multiple Ranks are using the same GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this configuration.`,
  );
  s.err("NCCL error: invalid usage (5 from n.commInitRank(...))");
  await finish(s, EXIT.cuda);
}
const onMig = peers.every((p) => p.gi !== null);
const claimed = readChaos(s.stateDir).migP2pClaimed === true;
const gen5 = dev.architecture === "hopper" || dev.architecture === "blackwell";
const shmGBs = gen5 ? 20 : 10;
const [via, busGBs] =
  sameGpu && onMig
    ? [claimed ? "P2P/IPC/read" : "SHM/direct/direct", shmGBs]
    : ["P2P/IPC/read", allReduceBusGBs(dev.boardKey, dev.architecture, dev.product)];
const next = (o.rank + 1) % o.nranks;
if (o.nranks > 1)
  for (const ch of [0, 1]) info(`Channel 0${ch} : ${o.rank}[0] -> ${next}[0] via ${via}`);
info(`comm rank ${o.rank} nranks ${o.nranks} cudaDev 0 busId ${dev.pci} - Init COMPLETE`);

await joinDevice(s, dev, CONTEXT_MIB + Math.ceil(o.bytes / MIB));
const factor = (2 * (o.nranks - 1)) / o.nranks;
const noise = noiseSource(s.pid)();
const bytes = Math.floor(o.bytes / 4) * 4;
// One rank: NCCL copies in place, a few microseconds (busbw 0 by the factor).
const timeUs = factor === 0 ? 5.5 : (bytes * factor) / (busGBs * noise * 1e3);
if (await sleepWatching(s, Math.max(1, ((o.iters + 2) * timeUs) / 1000), dev, SITES.stressSync))
  await finish(s, 128 + 15);
const algbw = bytes / timeUs / 1e3;
const wrong = o.plant && o.rank === 0 ? 1 : 0;
s.out(
  formatAllreduceLine({
    rank: o.rank,
    nranks: o.nranks,
    bytes,
    timeUs,
    algbw,
    busbw: algbw * factor,
    wrong,
  }),
);
// The id and rank files stay: the launcher's private folder goes with them, and a rank may
// still be reading them (NCCL's init waits for all ranks; this one does not).
await finish(s, wrong === 0 ? 0 : EXIT.wrong);
