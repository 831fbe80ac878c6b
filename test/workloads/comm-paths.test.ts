// The nccl suite's communication paths on simulated nodes over real sshd: an all_reduce with one
// rank per MIG instance (separate processes, each seeing only its instance) on an A100 with two
// 3g.40gb goes through host memory (SHM) below the whole card, a documented constraint with its
// busbw and transport, and fails MIG_P2P_CLAIMED once the planted mig-p2p-claimed fault makes it
// claim P2P; each profile's P2P column is reported; and a whole-card 2-GPU node gets an
// all_reduce across its GPUs with its bus bandwidth, from nccl-tests and from the same built-in
// program. The pure judgements are shown failing or undecided on outputs that break them.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { CheckRecord } from "../../src/verdicts/checks.js";
import { crossInstance, multiGpu, p2pOfProfiles } from "../../src/verdicts/comm.js";
import { cli } from "../helpers/cli.js";
import { startCluster, type TestCluster } from "../helpers/cluster.js";

const LAYOUT = join(import.meta.dirname, "..", "fixtures", "isolation-layout.yaml");
const CAPTURES = join(import.meta.dirname, "..", "..", "..", "shared", "reference", "captures");

const checksOf = (out: string) =>
  readFileSync(join(out, "checks.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as CheckRecord);
const CROSS =
  "all_reduce with one rank per MIG instance goes through host memory, below the whole card";

describe("nccl communication paths (simulated MIG A100 and whole-card 2x H100, real sshd)", function () {
  this.timeout(120_000);
  let c: TestCluster;
  before(async () => {
    c = await startCluster([
      { name: "mig01", gpu: "A100-80GB", driver: "580.65.06" },
      { name: "whole01", gpu: "H100-80GB", driver: "580.65.06", gpus: 2 },
    ]);
    const r = await cli(
      ...["apply", "-i", c.inventoryPath, "--nodes", "mig01", LAYOUT, "-c", "two-3g"],
      ...["--allow-reset", "--journal-dir", join(c.dir, "journal")],
    );
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => {
    await c?.stop();
  });

  it("measures one rank per instance over SHM and the P2P column, and the 2-GPU bus bandwidth", async () => {
    const out = join(c.dir, "nccl");
    const r = await cli(
      ...["run", "-i", c.inventoryPath, "--suites", "nccl", "--duration", "2", "--out", out],
    );
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const checks = checksOf(out);
    const cross = checks.find((x) => x.title === CROSS)!;
    assert.equal(cross.node, "mig01");
    assert.equal(cross.status, "passed", cross.message);
    assert.equal(cross.code, "DOCUMENTED_CONSTRAINT");
    assert.equal(cross.kind, "documented-constraint");
    assert.equal(cross.figures.ranks, 2);
    assert.equal(cross.figures.transport, "SHM");
    assert.equal(cross.figures.via, "SHM/direct/direct");
    const busbw0 = cross.figures["busbw GB/s"] as number;
    // The simulator's SHM figure on an A100 (PCIe Gen4): 10 GB/s ±1 %, below the 235 expected.
    assert.ok(busbw0 > 9 && busbw0 < 11, `busbw ${busbw0}`);
    assert.equal(cross.figures["whole-card busbw GB/s"], 235);
    console.log(`      one rank per 3g.40gb (x2, A100): ${cross.message}`);
    const p2p = checks.find((x) => x.title === "P2P capability of each profile")!;
    assert.equal(p2p.figures["MIG 3g.40gb P2P"] ?? p2p.figures["3g.40gb P2P"], "No");
    const multi = checks.find(
      (x) => x.title === "all_reduce across 2 whole GPUs (-g 2) completes without wrong results",
    )!;
    assert.equal(multi.node, "whole01");
    assert.equal(multi.status, "passed", multi.message);
    assert.equal(multi.kind, "measured");
    assert.equal(multi.figures.ranks, 2);
    const busbw = multi.figures["busbw GB/s"] as number;
    // NVLink4 H100 SXM in the model levels off at 352 GB/s; the average over sizes is lower.
    assert.ok(busbw > 50 && busbw < 400, `busbw ${busbw}`);
    const ranks = checks.find((x) =>
      x.title.startsWith("all_reduce with one rank per whole GPU (2 processes)"),
    )!;
    assert.equal(ranks.status, "passed", ranks.message);
    assert.equal(ranks.figures.transport, "P2P");
    assert.ok((ranks.figures["busbw GB/s"] as number) > 300, ranks.message);
    console.log(`      whole card, one rank per H100 (x2): ${ranks.message}`);
  });

  it("fails MIG_P2P_CLAIMED when the cross-instance path claims P2P (planted mig-p2p-claimed)", async () => {
    const f = await cli("sim", "fault", "mig01", "mig-p2p-claimed", "-i", c.inventoryPath);
    assert.equal(f.code, 0, f.stderr);
    const out = join(c.dir, "nccl-p2p");
    const r = await cli(
      ...["run", "-i", c.inventoryPath, "--nodes", "mig01", "--suites", "nccl"],
      ...["--duration", "2", "--out", out],
    );
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    const cross = checksOf(out).find((x) => x.title === CROSS)!;
    assert.equal(cross.status, "failed");
    assert.equal(cross.code, "MIG_P2P_CLAIMED");
    assert.equal(cross.figures.transport, "P2P");
    assert.match(cross.message, /claims P2P \(P2P\/IPC\/read\)/);
  });
});

describe("communication verdicts on outputs that break them", () => {
  it("a cross-instance run that neither refuses nor runs is undecided, never passed", () => {
    assert.equal(crossInstance({ exitCode: null, stdout: "", stderr: "" }).status, "broken");
    const cuda = crossInstance({
      exitCode: 2,
      stdout: "h: Test CUDA failure common.cu:941 'out of memory'",
      stderr: "",
    });
    assert.equal(cuda.status, "broken");
    const nccl = readFileSync(
      join(CAPTURES, "nccl_duplicate-gpu-detected_pytorch-invalid-usage.txt"),
      "utf8",
    );
    const dup = crossInstance({ exitCode: 3, stdout: nccl, stderr: "" });
    assert.equal(dup.status, "passed");
    assert.equal(dup.kind, "documented-constraint");
  });

  it("a multi-GPU all_reduce with wrong results fails; one rank short is undecided", () => {
    const ok = [
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
      "#",
      "# Using devices",
      "#  Rank  0 Group  0 Pid   1234 on      host device  0 [0000:07:00] NVIDIA H100 80GB HBM3",
      "#  Rank  1 Group  0 Pid   1234 on      host device  1 [0000:08:00] NVIDIA H100 80GB HBM3",
      "#",
      "#                                                              out-of-place                       in-place          ",
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ",
      "           8             2     float     sum      -1    35.00    0.00    0.00      0    35.00    0.00    0.00      0",
      "# Out of bounds values : 0 OK",
      "# Avg bus bandwidth    : 0.00 ",
      "#",
    ];
    assert.equal(multiGpu({ exitCode: 0, stdout: ok.join("\n"), stderr: "" }, 2).status, "passed");
    const wrong = ok.map((l) =>
      l.replace(
        / {6}0 {4}35\.00 {4}0\.00 {4}0\.00 {6}0$/,
        "      3    35.00    0.00    0.00      0",
      ),
    );
    assert.equal(
      multiGpu({ exitCode: 1, stdout: wrong.join("\n"), stderr: "" }, 2).status,
      "failed",
    );
    assert.equal(multiGpu({ exitCode: 0, stdout: ok.join("\n"), stderr: "" }, 3).status, "broken");
  });

  it("reads the P2P column of a real -lgip capture", () => {
    const lgip = readFileSync(
      join(CAPTURES, "nvidia-smi_mig-lgip_H100-PCIe-80GB_525.125.06.txt"),
      "utf8",
    );
    const v = p2pOfProfiles(
      lgip
        .split("\n")
        .filter((l) => !l.startsWith("# source"))
        .join("\n"),
      0,
    );
    assert.equal(v.status, "passed");
    assert.match(v.summary, /no profile offers P2P/);
    assert.equal(p2pOfProfiles("garbage", 0).status, "broken");
  });
});
