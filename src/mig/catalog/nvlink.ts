// NVLink per board: how many links the board has, and the per-link speed `nvidia-smi nvlink -s`
// reports on a healthy link. The topology check fails a board's expected link that is inactive
// or slower than this; the multi-GPU all_reduce floor is derived from it (verdicts/topology.ts).
//
// Sources (NVIDIA datasheets, as summarised in the issue and checked with public pages):
// - A100 SXM4: 12 NVLink3 links, 600 GB/s total; A100 PCIe with NVLink bridges (3 bridges) the
//   same 600 GB/s; A800 400 GB/s (8 links). A30: NVLink bridge, 200 GB/s (4 links).
// - H100 SXM5 / H200 SXM / GH200: 18 NVLink4 links, 900 GB/s; H800 400 GB/s (8 links). H100 PCIe
//   and H100 NVL: NVLink bridges, 600 GB/s (12 links: the real 2x H100 PCIe capture shows 12 of
//   18 links active, topo NV12; HPE-Japan-Presales/e-learning gpu/h100/mgmt_gpu_on_dl380agen11.md).
//   H200 NVL: 2- or 4-way bridge, 900 GB/s (18 links).
// - B200: 18 NVLink5 links, 1.8 TB/s.
// - RTX PRO 6000 Blackwell: no NVLink.
// Per-link speed as nvidia-smi prints it: NVLink3 `25 GB/s` (8x A100-SXM4-40GB capture, driver
// 535.161.08), NVLink4 `26.562 GB/s` (H100 SXM and H100 PCIe captures), NVLink5 `53.125 GB/s`
// (GB200 capture, NVIDIA/k8s-test-infra#371). Each is one direction of one link (hwloc#574:
// NVLink3/4 carry 25 GB/s per direction per link).

import type { ProductKey } from "./types.js";

export interface NvlinkSpec {
  /** Links the board has (and that a healthy, fully wired board shows active). */
  links: number;
  /** What `nvidia-smi nvlink -s` prints for a healthy link, GB/s (one direction). */
  linkGBs: number;
  /** Links go through optional bridges: a card without a bridge shows every link inactive. */
  bridge: boolean;
}

const NV3 = 25;
const NV4 = 26.562;
const NV5 = 53.125;
const sxm = (links: number, linkGBs: number): NvlinkSpec => ({ links, linkGBs, bridge: false });
const bridged = (links: number, linkGBs: number): NvlinkSpec => ({ links, linkGBs, bridge: true });

/** Product → board key → its NVLink, or null for a board without any. */
const NVLINK: Readonly<Record<ProductKey, Readonly<Record<string, NvlinkSpec | null>>>> = {
  A30: { PCIe: bridged(4, NV3) },
  "A100-40GB": {
    SXM4: sxm(12, NV3),
    PCIe: bridged(12, NV3),
    "SXM4-alt": sxm(12, NV3),
    "A800-40GB": bridged(8, NV3),
  },
  "A100-80GB": {
    SXM4: sxm(12, NV3),
    PCIe: bridged(12, NV3),
    "A800-SXM4": sxm(8, NV3),
    "A800-PCIe": bridged(8, NV3),
  },
  "H100-80GB": { SXM5: sxm(18, NV4), H800: sxm(8, NV4) },
  "H100-PCIE": { PCIe: bridged(12, NV4), "H800-PCIe": bridged(8, NV4) },
  "H100-NVL": { NVL: bridged(12, NV4), "H800-NVL": bridged(8, NV4) },
  "GH200-96GB": { GH200: sxm(18, NV4) },
  H200: { SXM: sxm(18, NV4), NVL: bridged(18, NV4) },
  B200: { SXM6: sxm(18, NV5) },
  "RTX-PRO-6000": { Server: null, "Max-Q": null, Workstation: null },
};

/** The board's NVLink; null where it has none or the product/board is not catalogued. */
export function nvlinkOf(product: string, board: string): NvlinkSpec | null {
  return NVLINK[product as ProductKey]?.[board] ?? null;
}

/**
 * The default bus-bandwidth floor (GB/s) of an all_reduce across whole GPUs joined by this
 * NVLink, judged at the sweep's largest size. NCCL's maintainers put application-level NVLink
 * bandwidth at about 80 % of the links' peak (NVIDIA/nccl#1054); the floor is half of that,
 * 40 % of one direction's total (links x per-link speed), because a 128 MiB message does not
 * reach the plateau and a floor must never fail a healthy node. A link trained down to PCIe
 * (tens of GB/s) is far below it on every product. 2x H100 SXM: 18 x 26.562 x 0.4 = 191 GB/s.
 */
export function defaultBusbwFloorGBs(spec: NvlinkSpec): number {
  return Math.round(spec.links * spec.linkGBs * 0.4);
}
