// One rank per device in separate processes (workloads/allreduce.cu, src/workloads/ranks.ts,
// src/verdicts/comm-ranks.ts), without a cluster: the allreduce line and NCCL's transport lines
// read from real-format text (fixtures cite the NCCL INFO output they come from), the launch
// script run for real by sh with stand-in ranks (each sees only its own device, all start
// together, a hung one is killed and reported), and the verdict shown passing, failing and
// undecided on outputs that call for each.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ERROR_CODES } from "../../src/errors.js";
import {
  crossInstanceFailCode,
  crossInstanceRanks,
  wholeCardExpectation,
  wholeGpuRanks,
} from "../../src/verdicts/comm.js";
import { formatAllreduceLine, parseBuiltinOutput } from "../../src/workloads/parsers/builtin.js";
import { parseNcclTransports } from "../../src/workloads/parsers/nccl-transport.js";
import { stripSourceHeader } from "../../src/workloads/parsers/text.js";
import { type RankOutput, ranksScript, splitRanks } from "../../src/workloads/ranks.js";
import { tempDir } from "../helpers/tmp.js";

const FIXTURES = join(import.meta.dirname, "..", "fixtures", "nccl-transport");
const fixture = (name: string) => stripSourceHeader(readFileSync(join(FIXTURES, name), "utf8"));

const line = (rank: number, busbw: number, wrong = 0) =>
  formatAllreduceLine({
    rank,
    nranks: 2,
    bytes: 67108864,
    timeUs: 6710.89,
    algbw: busbw,
    busbw,
    wrong,
  });
const rankOf = (rank: number, via: string | null, busbw = 10, exitCode = 0, wrong = 0) => ({
  rank,
  device: `MIG-${rank}`,
  exitCode,
  output: [
    `h:1:2 [0] NCCL INFO comm 0x1 rank ${rank} nranks 2 cudaDev 0 busId 7000 - Init START`,
    ...(via ? [`h:1:2 [0] NCCL INFO Channel 00 : ${rank}[0] -> ${1 - rank}[0] via ${via}`] : []),
    line(rank, busbw, wrong),
  ].join("\n"),
});
const A100 = wholeCardExpectation("NVIDIA A100-SXM4-80GB");

describe("allreduce ranks: output lines", () => {
  it("reads the allreduce line and refuses a malformed one", () => {
    const a = parseBuiltinOutput(`noise\n${line(1, 9.5, 3)}\n`).allreduce;
    assert.deepEqual(a, {
      rank: 1,
      nranks: 2,
      bytes: 67108864,
      timeUs: 6710.89,
      algbw: 9.5,
      busbw: 9.5,
      wrong: 3,
    });
    assert.throws(() => parseBuiltinOutput("SLICECHECK allreduce rank=1 busbw=2\n"), /allreduce/);
    assert.throws(() => parseBuiltinOutput(`${line(0, 1)}\n${line(0, 1)}\n`), /one 'allreduce'/);
  });

  it("names the transport of real NCCL INFO connection lines", () => {
    const shm = parseNcclTransports(fixture("shm.txt"));
    assert.deepEqual(shm.transports, ["SHM"]);
    assert.equal(shm.connections.length, 4);
    assert.deepEqual(shm.connections[2], {
      channel: 0,
      fromRank: 3,
      toRank: 2,
      transport: "SHM",
      via: "SHM/direct/direct",
    });
    assert.deepEqual(parseNcclTransports(fixture("p2p.txt")).transports, ["P2P"]);
    const direct = parseNcclTransports(fixture("p2p-direct.txt"));
    assert.deepEqual(direct.transports, ["P2P"]);
    assert.equal(direct.connections[0]?.via, "P2P/direct pointer");
    const net = parseNcclTransports(fixture("net.txt"));
    assert.deepEqual(net.transports, ["NET", "SHM"]);
    assert.equal(net.connections[0]?.via, "NET/Socket/0");
    assert.deepEqual(parseNcclTransports("NCCL INFO Connected all rings\n").transports, []);
  });
});

describe("allreduce ranks: the launch script, run by sh", () => {
  const dir = tempDir("ranks");
  // A stand-in rank: prints what it sees, waits for the id file like the real one, or hangs.
  const fake = join(dir, "fake-rank");
  writeFileSync(
    fake,
    [
      "#!/bin/sh",
      'rank=$2; id=$6; echo "rank $rank sees $CUDA_VISIBLE_DEVICES debug $NCCL_DEBUG"',
      '[ "$CUDA_VISIBLE_DEVICES" = hang ] && exec sleep 30',
      '[ "$rank" = 0 ] && echo id > "$id"',
      'i=0; while [ ! -f "$id" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done',
      '[ -f "$id" ] || exit 2',
      'echo "SLICECHECK allreduce rank=$rank"',
    ].join("\n"),
  );
  chmodSync(fake, 0o755);

  it("starts every rank at once with only its device, and splits their outputs", () => {
    const script = ranksScript({
      program: fake,
      devices: ["MIG-aaa", "MIG-bbb"],
      bytes: "1M",
      iters: 2,
      timeoutS: 20,
    });
    const r = spawnSync("sh", ["-c", script], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    const ranks = splitRanks(r.stdout);
    assert.deepEqual(
      ranks.map((x) => [x.rank, x.device, x.exitCode]),
      [
        [0, "MIG-aaa", 0],
        [1, "MIG-bbb", 0],
      ],
    );
    // Rank 1 found the id rank 0 wrote: they ran together, in one private folder.
    assert.match(ranks[1]!.output, /^rank 1 sees MIG-bbb debug INFO\nSLICECHECK allreduce rank=1$/);
  });

  it("a rank that hangs is killed at its deadline and reported, the other's output kept", () => {
    const script = ranksScript({
      program: fake,
      devices: ["MIG-aaa", "hang"],
      bytes: "1M",
      iters: 2,
      timeoutS: 1,
    });
    const ranks = splitRanks(spawnSync("sh", ["-c", script], { encoding: "utf8" }).stdout);
    assert.equal(ranks[1]?.exitCode, 124);
    assert.equal(crossInstanceRanks(ranks, 2, A100).status, "broken");
  });
});

describe("allreduce ranks: the cross-instance verdict", () => {
  it("SHM below the whole card is a documented constraint, with busbw and transport", () => {
    const v = crossInstanceRanks(
      [rankOf(0, "SHM/direct/direct", 9.9), rankOf(1, "SHM/direct/direct", 10.1)],
      2,
      A100,
    );
    assert.equal(v.status, "passed", v.summary);
    assert.equal(v.kind, "documented-constraint");
    assert.equal(v.evidence.figures.transport, "SHM");
    assert.equal(v.evidence.figures["busbw GB/s"], 9.9);
    assert.equal(v.evidence.figures["whole-card busbw GB/s"], 235);
    const net = crossInstanceRanks([rankOf(0, "NET/Socket/0"), rankOf(1, "NET/Socket/0")], 2, A100);
    assert.equal(net.status, "passed");
    // No whole-card figure (a PCIe board): recorded, characterised, not compared.
    const pcie = wholeCardExpectation("NVIDIA A100 80GB PCIe");
    assert.equal(pcie, null);
    const alone = crossInstanceRanks([rankOf(0, "SHM/x"), rankOf(1, "SHM/x")], 2, pcie);
    assert.equal(alone.kind, "characterised");
  });

  it("a claimed P2P path across instances fails MIG_P2P_CLAIMED", () => {
    const v = crossInstanceRanks([rankOf(0, "P2P/IPC/read"), rankOf(1, "P2P/IPC/read")], 2, A100);
    assert.equal(v.status, "failed");
    assert.equal(crossInstanceFailCode(v), "MIG_P2P_CLAIMED");
    assert.equal(ERROR_CODES.MIG_P2P_CLAIMED, "check-failed");
    assert.match(v.summary, /claims P2P/);
    // Even with an SHM channel beside it.
    const mixed = crossInstanceRanks([rankOf(0, "SHM/d"), rankOf(1, "P2P/IPC")], 2, A100);
    assert.equal(mixed.status, "failed");
  });

  it("wrong results fail NCCL_FAILED; no transport, a faster-than-card figure or a missing rank is undecided", () => {
    const wrong = crossInstanceRanks([rankOf(0, "SHM/d", 10, 1, 1), rankOf(1, "SHM/d")], 2, A100);
    assert.equal(wrong.status, "failed");
    assert.equal(crossInstanceFailCode(wrong), "NCCL_FAILED");
    const silent = crossInstanceRanks([rankOf(0, null), rankOf(1, null)], 2, A100);
    assert.equal(silent.status, "broken");
    assert.match(silent.summary, /no transport line/);
    const fast = crossInstanceRanks([rankOf(0, "SHM/d", 300), rankOf(1, "SHM/d", 300)], 2, A100);
    assert.equal(fast.status, "broken");
    assert.equal(crossInstanceRanks([rankOf(0, "SHM/d")], 2, A100).status, "broken");
    const odd = crossInstanceRanks([rankOf(0, "XYZ/q"), rankOf(1, "XYZ/q")], 2, A100);
    assert.equal(odd.status, "broken");
    const cuda: RankOutput = { rank: 1, device: "MIG-1", exitCode: 2, output: "CUDA error: x" };
    assert.equal(crossInstanceRanks([rankOf(0, "SHM/d"), cuda], 2, A100).status, "broken");
  });

  it("NCCL's documented refusal of several ranks on one GPU is the constraint, not a failure", () => {
    const refused: RankOutput = {
      rank: 1,
      device: "MIG-1",
      exitCode: 2,
      output:
        "h:1:2 [0] NCCL WARN Multiple Ranks are using the same GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this configuration.",
    };
    const v = crossInstanceRanks([{ ...refused, rank: 0 }, refused], 2, A100);
    assert.equal(v.status, "passed");
    assert.equal(v.kind, "documented-constraint");
    assert.equal(v.evidence.figures.outcome, "refused");
    // On whole GPUs the same words are no documented constraint.
    assert.equal(wholeGpuRanks([{ ...refused, rank: 0 }, refused], 2).status, "broken");
  });

  it("the whole-GPU run passes with its figures and fails on a wrong result", () => {
    const ok = wholeGpuRanks([rankOf(0, "P2P/IPC/read", 350), rankOf(1, "P2P/IPC/read", 351)], 2);
    assert.equal(ok.status, "passed");
    assert.equal(ok.evidence.figures.transport, "P2P");
    assert.equal(ok.evidence.figures["busbw GB/s"], 350);
    const bad = wholeGpuRanks([rankOf(0, "P2P/IPC", 350, 1, 2), rankOf(1, "P2P/IPC")], 2);
    assert.equal(bad.status, "failed");
  });
});
