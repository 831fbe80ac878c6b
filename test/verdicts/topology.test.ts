// The topology/NVLink judgement and the multi-GPU all_reduce floor and transport, on real
// captures (fixtures/captures) and on outputs that break them: every way they fail is shown
// failing, with its code.
import assert from "node:assert/strict";
import { nvlinkOf } from "../../src/mig/catalog/nvlink.js";
import {
  allReduceOverNvlink,
  expectedNvlink,
  floorFor,
  nvlinkBetweenAll,
  nvlinkTopology,
} from "../../src/verdicts/topology.js";
import { parseNcclTransport } from "../../src/workloads/parsers/nccl-transport.js";
import { readCapture } from "../nvsmi/captures.js";

const TOPO_PCIE = readCapture("nvidia-smi_topo-m_H100-PCIe-x2_555.42.02_NV12-bridged.txt");
const LINKS_PCIE = readCapture("nvidia-smi_nvlink-s_H100-PCIe-x2_555.42.02_12-of-18-bridged.txt");
const TOPO_PHB = readCapture("nvidia-smi_topo-m_RTX-5090-x2_unknown_PHB-no-nvlink.txt");

const h100sxm = expectedNvlink("NVIDIA H100 80GB HBM3")!;
const links = (n: number, gbs: string, down: number[] = []) =>
  [0, 1]
    .map((g) =>
      [
        `GPU ${g}: NVIDIA H100 80GB HBM3 (UUID: GPU-0000000${g}-0000-0000-0000-000000000000)`,
        ...Array.from(
          { length: n },
          (_, l) => `\t Link ${l}: ${down.includes(l) && g === 1 ? "<inactive>" : `${gbs} GB/s`}`,
        ),
      ].join("\n"),
    )
    .join("\n");
const topo = (cell: string) =>
  `\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t${cell}\t0-47\t0\t\tN/A\nGPU1\t${cell}\t X \t48-95\t1\t\tN/A\n`;

describe("verdicts: topology and NVLink", () => {
  it("the catalogue gives H100 SXM 18 NVLink4 links, H100 PCIe 12 bridged ones, RTX PRO 6000 none", () => {
    assert.deepEqual(h100sxm, { links: 18, linkGBs: 26.562, bridge: false });
    assert.deepEqual(expectedNvlink("NVIDIA H100 PCIe"), {
      links: 12,
      linkGBs: 26.562,
      bridge: true,
    });
    assert.equal(nvlinkOf("RTX-PRO-6000", "Server"), null);
  });

  it("passes the real bridged 2x H100 PCIe capture (12 of 18 links, NV12)", () => {
    const v = nvlinkTopology({
      topo: TOPO_PCIE,
      nvlinkStatus: LINKS_PCIE,
      gpus: [0, 1],
      spec: expectedNvlink("NVIDIA H100 PCIe"),
    });
    assert.equal(v.status, "passed", v.summary);
    assert.equal(v.evidence.figures.topology, "NV12");
    assert.equal(v.evidence.figures["GPU 1 NVLinks active"], "12/12");
  });

  it("fails NVLINK_DOWN when the same bridged capture is judged as an SXM board (18 expected)", () => {
    const v = nvlinkTopology({
      topo: TOPO_PCIE,
      nvlinkStatus: LINKS_PCIE,
      gpus: [0, 1],
      spec: h100sxm,
    });
    assert.equal(v.status, "failed");
    assert.equal(v.code, "NVLINK_DOWN");
    assert.match(v.summary, /GPU 0: 12 of 18 NVLinks active \(inactive: 4, 5, 10, 11, 16, 17\)/);
  });

  it("fails a down link, a slow link and a PCIe path where the board is wired for NVLink", () => {
    const down = nvlinkTopology({
      topo: topo("NV18"),
      nvlinkStatus: links(18, "26.562", [3]),
      gpus: [0, 1],
      spec: h100sxm,
    });
    assert.equal(down.code, "NVLINK_DOWN");
    assert.match(down.summary, /GPU 1: 17 of 18 NVLinks active \(inactive: 3\)/);
    const slow = nvlinkTopology({
      topo: topo("NV18"),
      nvlinkStatus: links(18, "13.281"),
      gpus: [0, 1],
      spec: h100sxm,
    });
    assert.equal(slow.code, "NVLINK_SLOW");
    const sys = nvlinkTopology({
      topo: topo("SYS"),
      nvlinkStatus: links(18, "26.562"),
      gpus: [0, 1],
      spec: h100sxm,
    });
    assert.equal(sys.code, "TOPOLOGY_NO_NVLINK");
    assert.match(sys.summary, /GPU 0 - GPU 1: SYS in topo -m, not NV#/);
    const ok = nvlinkTopology({
      topo: topo("NV18"),
      nvlinkStatus: links(18, "26.562"),
      gpus: [0, 1],
      spec: h100sxm,
    });
    assert.equal(ok.status, "passed", ok.summary);
  });

  it("passes a board without NVLink on a PCIe path (real PHB capture), and a bridged board without a bridge", () => {
    const none = nvlinkTopology({ topo: TOPO_PHB, nvlinkStatus: "", gpus: [0, 1], spec: null });
    assert.equal(none.status, "passed", none.summary);
    assert.match(none.summary, /no NVLink/);
    const noBridge = nvlinkTopology({
      topo: TOPO_PHB,
      nvlinkStatus: links(12, "0").replaceAll("0 GB/s", "<inactive>"),
      gpus: [0, 1],
      spec: expectedNvlink("NVIDIA H100 PCIe"),
    });
    assert.equal(noBridge.status, "passed", noBridge.summary);
  });

  it("is broken, not passed, when topo -m cannot be read", () => {
    const v = nvlinkTopology({
      topo: "garbage",
      nvlinkStatus: links(18, "26.562"),
      gpus: [0, 1],
      spec: h100sxm,
    });
    assert.equal(v.status, "broken");
  });
});

// all_reduce_perf -g 2 output with NCCL INFO lines; busbw of the largest row as given.
function allReduce(
  busbw: number,
  via: string,
): { exitCode: number; stdout: string; stderr: string } {
  const row = (size: number, bw: number) =>
    `${String(size).padStart(12)}  ${String(size / 4).padStart(12)}     float     sum      -1   100.00  ${bw.toFixed(2).padStart(6)}  ${bw.toFixed(2).padStart(6)}      0   100.00  ${bw.toFixed(2).padStart(6)}  ${bw.toFixed(2).padStart(6)}      0`;
  return {
    exitCode: 0,
    stderr: "",
    stdout: [
      "# nThread 1 nGpus 2 minBytes 8388608 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
      "#",
      "# Using devices",
      "#  Rank  0 Group  0 Pid   1234 on     node01 device  0 [0000:07:00] NVIDIA H100 80GB HBM3",
      "#  Rank  1 Group  0 Pid   1234 on     node01 device  1 [0000:08:00] NVIDIA H100 80GB HBM3",
      `node01:1234:1235 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via ${via}`,
      `node01:1234:1236 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via ${via}`,
      "#",
      "#                                                              out-of-place                       in-place          ",
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ",
      row(8388608, busbw / 2),
      row(134217728, busbw),
      "# Out of bounds values : 0 OK",
      `# Avg bus bandwidth    : ${(busbw * 0.75).toFixed(3)} `,
      "#",
      "",
    ].join("\n"),
  };
}

describe("verdicts: all_reduce across whole GPUs, floor and transport", () => {
  const floor = floorFor(h100sxm, true, null);

  it("the default floor is 40 % of one direction of the board's NVLink: 191 GB/s on H100 SXM", () => {
    assert.equal(floor.floorGBs, 191);
    assert.deepEqual(floorFor(h100sxm, true, 300).floorGBs, 300);
    assert.equal(floorFor(expectedNvlink("NVIDIA H100 PCIe"), false, null).floorGBs, null);
    assert.equal(floorFor(null, false, null).floorGBs, null);
  });

  it("reads the transport from NCCL INFO lines (real forms: P2P/CUMEM/read, P2P/direct pointer/read, SHM, NET)", () => {
    const t = parseNcclTransport(
      [
        "a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/direct pointer/read",
        "a:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
        "b:1:2 [2] NCCL INFO Channel 00 : 2[2] -> 1[1] via SHM/direct/direct",
        "b:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0",
      ].join("\n"),
    );
    assert.deepEqual(t.counts, { P2P: 2, SHM: 1, NET: 1 });
    assert.deepEqual(t.details, [
      "P2P/direct pointer/read",
      "P2P/CUMEM/read",
      "SHM/direct/direct",
      "NET/Socket/0",
    ]);
  });

  it("passes NVLink speed over P2P, fails a PCIe-speed run (BUSBW_BELOW_FLOOR) and SHM under NV# (NCCL_TRANSPORT_NOT_NVLINK)", () => {
    const ok = allReduceOverNvlink(allReduce(320, "P2P/CUMEM/read"), 2, {
      ...floor,
      nvlinkInTopology: true,
    });
    assert.equal(ok.status, "passed", ok.summary);
    assert.equal(ok.evidence.figures["largest size busbw GB/s"], 320);
    const slow = allReduceOverNvlink(allReduce(38, "SHM/direct/direct"), 2, {
      ...floor,
      nvlinkInTopology: false,
    });
    assert.equal(slow.status, "failed");
    assert.equal(slow.code, "BUSBW_BELOW_FLOOR");
    const shm = allReduceOverNvlink(allReduce(320, "SHM/direct/direct"), 2, {
      ...floor,
      nvlinkInTopology: true,
    });
    assert.equal(shm.code, "NCCL_TRANSPORT_NOT_NVLINK");
    // No NVLink expected and no floor: any bandwidth passes, with its transport recorded.
    const pcie = allReduceOverNvlink(allReduce(20, "SHM/direct/direct"), 2, {
      floorGBs: null,
      floorSource: "none",
      nvlinkInTopology: false,
    });
    assert.equal(pcie.status, "passed");
    assert.match(String(pcie.evidence.figures.transport), /^SHM/);
  });

  it("reads NV# between every pair from topo -m", () => {
    assert.equal(nvlinkBetweenAll(topo("NV18"), [0, 1]), true);
    assert.equal(nvlinkBetweenAll(topo("SYS"), [0, 1]), false);
    assert.equal(nvlinkBetweenAll(null, [0, 1]), false);
  });
});
