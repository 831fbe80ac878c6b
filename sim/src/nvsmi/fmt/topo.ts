// `nvidia-smi topo -m` and `nvidia-smi nvlink -s` / `-e` of the simulated node, in the real
// layouts (captures in fixtures/captures: the matrix tab-separated with ` X ` on the diagonal,
// then the legend; link lines indented with a tab and a space). What the links are comes from
// the catalogue (mig/catalog/nvlink.ts): a board wired without bridges (SXM, NVSwitch) has
// every link up at its rated speed and NV<links> to each peer; bridged PCIe boards are
// simulated without a bridge fitted (every link inactive, a PCIe path), the conservative case;
// `sim fault nvlink-down` takes one GPU's links down. Paths without NVLink: GPUs of the first
// half of the node on NUMA node 0 (CPUs 0-47), the rest on node 1 (48-95); a pair on one node
// is NODE, across nodes SYS. A GPU whose board has no NVLink prints no link lines (the
// references hold no capture of that case).
import { nvlinkOf } from "../../../../src/mig/catalog/nvlink.js";
import type { SimGpu, SimState } from "../state.js";
import type { GpuView } from "../view.js";

const LEGEND = [
  "",
  "Legend:",
  "",
  "  X    = Self",
  "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)",
  "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node",
  "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
  "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
  "  PIX  = Connection traversing at most a single PCIe bridge",
  "  NV#  = Connection traversing a bonded set of # NVLinks",
];

/** The GPU's active NVLinks: the board's links unless bridged (no bridge fitted) or down. */
export function activeNvlinks(gpu: SimGpu): number {
  const spec = nvlinkOf(gpu.product, gpu.board);
  return spec && !spec.bridge && !gpu.nvlinkDown ? spec.links : 0;
}

export function formatTopo(state: SimState): string[] {
  const gpus = state.gpus;
  const half = Math.ceil(gpus.length / 2);
  const numa = (g: SimGpu) => (gpus.indexOf(g) < half ? 0 : 1);
  const cell = (a: SimGpu, b: SimGpu) => {
    if (a === b) return " X ";
    const nv = Math.min(activeNvlinks(a), activeNvlinks(b));
    if (nv > 0) return `NV${nv}`;
    return numa(a) === numa(b) ? "NODE" : "SYS";
  };
  const header = [
    "",
    ...gpus.map((g) => `GPU${g.index}`),
    "CPU Affinity",
    "NUMA Affinity",
    "GPU NUMA ID",
  ];
  const rows = gpus.map((a) =>
    [
      `GPU${a.index}`,
      ...gpus.map((b) => cell(a, b)),
      numa(a) ? "48-95" : "0-47",
      String(numa(a)),
      "",
      "N/A",
    ].join("\t"),
  );
  return [header.join("\t"), ...rows, ...LEGEND];
}

const gpuLine = (v: GpuView) => `GPU ${v.gpu.index}: ${v.smiName} (UUID: ${v.gpu.uuid})`;

export function formatNvlinkStatus(vs: GpuView[]): string[] {
  return vs.flatMap((v) => {
    const spec = nvlinkOf(v.gpu.product, v.gpu.board);
    if (!spec) return [];
    const up = activeNvlinks(v.gpu) > 0;
    const links = Array.from({ length: spec.links }, (_, l) =>
      up ? `\t Link ${l}: ${spec.linkGBs} GB/s` : `\t Link ${l}: <inactive>`,
    );
    return [gpuLine(v), ...links];
  });
}

export function formatNvlinkErrors(vs: GpuView[]): string[] {
  return vs.flatMap((v) => {
    const spec = nvlinkOf(v.gpu.product, v.gpu.board);
    if (!spec) return [];
    const links = Array.from({ length: spec.links }, (_, l) => [
      `\t Link ${l}: Replay Errors: 0`,
      `\t Link ${l}: Recovery Errors: 0`,
      `\t Link ${l}: CRC Errors: 0`,
      "",
    ]).flat();
    return [gpuLine(v), ...links];
  });
}
