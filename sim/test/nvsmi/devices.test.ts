// `-L` against real captures. The GPU UUID and the MIG UUIDs are what the capture's hardware had
// (real MIG UUIDs come from an unpublished hash); the device order, names, indices and, before
// R470, the MIG-GPU-<uuid>/<gi>/<ci> names are the simulator's.

import assert from "node:assert/strict";
import { capture, cleanupNodes, SimNode } from "./helpers.js";
import { a30Three, h100Mixed, h100TwoSmall, sevenSmall } from "./scenarios.js";

after(cleanupNodes);

function named(n: SimNode, gpuUuid: string, migUuids: [gi: number, uuid: string][]): void {
  n.gpu((g) => {
    g.uuid = gpuUuid;
  });
  for (const [gi, uuid] of migUuids) n.setCiUuid(gi, 0, uuid);
}

async function expectList(n: SimNode, file: string): Promise<void> {
  const r = await n.run("-L");
  assert.equal(r.out, capture(file));
  assert.equal(r.code, 0);
}

const H100_PRICKLE = "GPU-0d0831da-0c98-2717-6446-8acd91d39b65";
const H100_CND = "GPU-b4895dbf-9350-2524-a89b-98161ddd9fe4";

describe("simulated nvidia-smi -L", () => {
  it("R450: bare product name and MIG-GPU-<uuid>/<gi>/<ci> device names", async () => {
    const seven = await sevenSmall("A100-40GB", "450.80.02");
    named(seven, "GPU-4200ccc0-2667-d4cb-9137-f932c716232a", []);
    await expectList(seven, "nvidia-smi_-L_A100-SXM4-40GB_450.80.02_7x1g.5gb.txt");

    const mixed = new SimNode({ product: "A100-40GB", driver: "450.80.02", migEnabled: true });
    await mixed.setup("mig -cgi 9,14,19 -C");
    named(mixed, "GPU-4200ccc0-2667-d4cb-9137-f932c716232a", []);
    await expectList(mixed, "nvidia-smi_-L_A100-SXM4-40GB_450.80.02_mixed.txt");
  });

  it("R535 A30: devices by GI ID, so the later 2g.12gb (GI 2) comes first", async () => {
    const n = new SimNode({ product: "A30", driver: "535.183.01", migEnabled: true });
    await n.setup("mig -cgi 14 -C", "mig -cgi 14 -C");
    const gpu = "GPU-1e44b340-5807-0dbe-62e6-343a6b8b8bcd";
    const one: [number, string][] = [
      [3, "MIG-41b9eab5-8d48-5c52-9f07-82bc59af3901"],
      [4, "MIG-55dcd9bd-e6b1-549a-bcb4-0b0496bfee9c"],
    ];
    named(n, gpu, one);
    await expectList(n, "nvidia-smi_-L_A30-24GB_535.183.01_2dev.txt");
    await n.setup("mig -cgi 5 -C");
    named(n, gpu, [[2, "MIG-1b8509c0-e60d-502d-8263-d434867998aa"]]);
    await expectList(n, "nvidia-smi_-L_A30-24GB_535.183.01_3dev.txt");
    const same = await a30Three();
    assert.deepEqual(
      same.state().gpus[0]?.gis.map((g) => g.id),
      n.state().gpus[0]?.gis.map((g) => g.id),
    );
  });

  it("R580 H100 and H200: per-CI MIG UUIDs; +me is not printed", async () => {
    const two = await h100TwoSmall();
    const prickle: [number, string][] = [
      [11, "MIG-8443519f-66f7-5962-8955-60dba0866f3a"],
      [13, "MIG-ee6996fb-86fb-5405-83f0-b20887da1bb3"],
    ];
    named(two, H100_PRICKLE, prickle);
    await expectList(two, "nvidia-smi_-L_H100-80GB-HBM3_580.173.02_2x1g.10gb.txt");

    const mixed = await h100Mixed();
    named(mixed, H100_PRICKLE, [...prickle, [1, "MIG-5ff0d535-9a82-5af6-80df-768b9d3ac092"]]);
    await expectList(mixed, "nvidia-smi_-L_H100-80GB-HBM3_580.173.02_mixed.txt");

    const h200 = new SimNode({ product: "H200", driver: "580.173.02", migEnabled: true });
    await h200.setup("mig -cgi 19,19 -C");
    named(h200, "GPU-2af1c335-11fb-c9d3-4de3-27a25697fc35", [
      [11, "MIG-30366fdf-6105-5648-968d-679e250aa830"],
      [13, "MIG-7138b2c5-cb05-5700-b65a-5fdec910f0f4"],
    ]);
    await expectList(h200, "nvidia-smi_-L_H200-141GB_580.173.02_2x1g.18gb.txt");
  });

  it("numbers GIs so that two captures of one GPU agree on which UUID is which GI", async () => {
    // CND shows the same GPU as 7×1g.10gb and as all-balanced; MIG UUIDs are stable per
    // (GPU, GI, CI), so the two 1g devices of all-balanced must be GIs 9 and 10 of the 7×1g run.
    const cnd7: [number, string][] = [
      [7, "MIG-3f6f389f-b0cc-5e5c-8e32-eaa8fd067902"],
      [8, "MIG-35f93699-4b53-5a19-8289-80b8418eec60"],
      [9, "MIG-9d14fb21-4ae1-546f-a636-011582899c39"],
      [10, "MIG-0f709664-740c-52b0-ae79-3e4c9ede6d3b"],
      [11, "MIG-5d23f73a-d378-50ac-a6f5-3bf5184773bb"],
      [12, "MIG-6cea15c7-8a56-578c-b965-0e73cb6dfc10"],
      [13, "MIG-981c86e9-3607-57d7-9426-295347e4b925"],
    ];
    const seven = await sevenSmall("H100-80GB", "550.127.06");
    named(seven, H100_CND, cnd7);
    await expectList(seven, "nvidia-smi_-L_H100-80GB-HBM3_unknown_7x1g.10gb.txt");

    // mig-parted's all-balanced on H100: 1×3g.40gb, 1×2g.20gb, 2×1g.10gb, largest first.
    const balanced = new SimNode({ product: "H100-80GB", driver: "550.127.06", migEnabled: true });
    await balanced.setup("mig -cgi 9,14,19,19 -C");
    const byGi = new Map(cnd7);
    named(balanced, H100_CND, [
      [2, "MIG-7089d0f3-293f-58c9-8f8c-5ea666eedbde"],
      [3, "MIG-56c30729-347f-5dd6-8da0-c3cc59e969e0"],
      [9, byGi.get(9) ?? ""],
      [10, byGi.get(10) ?? ""],
    ]);
    await expectList(balanced, "nvidia-smi_-L_H100-80GB-HBM3_unknown_all-balanced.txt");
  });

  it("R525 H100 PCIe: 3g then three 1g", async () => {
    const n = new SimNode({ product: "H100-PCIE", driver: "525.125.06", migEnabled: true });
    await n.setup("mig -cgi 9,19,19,19 -C");
    named(n, "GPU-7cd6d4d6-9fa8-13be-3c42-09a1b2280a02", [
      [2, "MIG-da06d78f-7534-56a0-a062-62fef012be91"],
      [7, "MIG-8aa1fc52-9818-58ec-bc64-8f0cae121bb4"],
      [8, "MIG-42fa9c93-1430-5ccc-b623-c02fb93b7f5a"],
      [9, "MIG-6d96b431-44ba-5360-80b0-9359561c927d"],
    ]);
    await expectList(n, "nvidia-smi_-L_H100-PCIe-80GB_525.125.06_3g+3x1g.txt");
  });

  it("derives name-based MIG UUIDs that survive re-creating a GI (PRICKLE observation)", async () => {
    const n = await h100TwoSmall();
    const before = n.state().gpus[0]?.gis.find((g) => g.id === 11)?.cis[0]?.uuid;
    await n.setup("mig -dci -gi 11", "mig -dgi -gi 11", "mig -cgi 20 -C");
    const after = n.state().gpus[0]?.gis.find((g) => g.id === 11)?.cis[0]?.uuid;
    assert.ok(before);
    assert.equal(after, before);
    assert.match(
      before,
      /^MIG-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    const other = new SimNode({ product: "H100-80GB", driver: "580.173.02", node: "sim02" });
    assert.notEqual(other.state().gpus[0]?.uuid, n.state().gpus[0]?.uuid);
    assert.match(
      other.state().gpus[0]?.uuid ?? "",
      /^GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$/,
    );
  });
});
