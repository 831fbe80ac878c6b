// The CDI spec against the live MIG devices, and an image's CUDA against the driver's: each
// verdict shown passing and failing on a planted difference.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseCdiSpec } from "../../src/nvsmi/ctk.js";
import type { GpuListing } from "../../src/nvsmi/types.js";
import { judgeCdi, judgeImageCuda } from "../../src/verdicts/cdi.js";

const FILE = "/etc/cdi/nvidia.yaml";
const spec = parseCdiSpec(readFileSync("test/fixtures/toolkit/cdi-spec-mig.yaml", "utf8"));
const MIG_A = "MIG-7e2d9c4a-1b3f-5a6e-8d0c-2f4e6a8b0c1d";
const MIG_B = "MIG-a1c3e5f7-0b2d-5f4a-9c6e-8d0b2f4a6c8e";
const MIG_NEW = "MIG-00000000-1111-5222-8333-444444444444";
const gpu = (migs: string[]): GpuListing[] => [
  {
    index: 0,
    name: "NVIDIA A100-SXM4-80GB",
    uuid: "GPU-4b1f6d0e-2a9c-4e7b-9d3f-1c2b3a4d5e6f",
    migDevices: migs.map((uuid, index) => ({
      name: "3g.40gb",
      index,
      uuid,
      gpuInstanceId: null,
      computeInstanceId: null,
    })),
  },
];

describe("CDI spec against the live layout", () => {
  it("fresh when it names every live MIG device and none that is gone", () => {
    const v = judgeCdi([{ file: FILE, spec }], gpu([MIG_A, MIG_B]));
    assert.equal(v.status, "fresh");
    assert.equal(v.fix, null);
  });

  it("stale after a relayout: the new device missing, the old one gone, with the fix", () => {
    const v = judgeCdi([{ file: FILE, spec }], gpu([MIG_A, MIG_NEW]));
    assert.equal(v.status, "stale");
    assert.deepEqual(v.missing, [MIG_NEW]);
    assert.deepEqual(v.gone, [MIG_B]);
    assert.equal(v.fix, `nvidia-ctk cdi generate --output=${FILE}`);
    assert.match(v.message, /\[CDI_STALE\]/);
  });

  it("stale by index too: one instance fewer leaves `0:1` naming nothing", () => {
    const v = judgeCdi([{ file: FILE, spec }], gpu([MIG_A]));
    assert.equal(v.status, "stale");
    assert.deepEqual(v.gone, [MIG_B, "0:1"]);
  });

  it("a spec of UUID names only is not held to index names", () => {
    const uuidOnly = { ...spec, devices: spec.devices.filter((d) => !/^\d/.test(d.name)) };
    assert.equal(judgeCdi([{ file: FILE, spec: uuidOnly }], gpu([MIG_A, MIG_B])).status, "fresh");
  });

  it("absent when no spec of kind nvidia.com/gpu exists (another vendor's does not count)", () => {
    assert.equal(judgeCdi([], gpu([MIG_A])).status, "absent");
    const other = { ...spec, kind: "example.com/fpga" };
    assert.equal(
      judgeCdi([{ file: "/etc/cdi/fpga.yaml", spec: other }], gpu([MIG_A])).status,
      "absent",
    );
  });
});

describe("an image's CUDA against the driver's", () => {
  it("older or equal runs; newer is refused without forward compatibility, reported with it", () => {
    assert.equal(judgeImageCuda("12.2", "12.2", false).verdict, "ok");
    assert.equal(judgeImageCuda("12.4", "11.8", false).verdict, "ok");
    const refused = judgeImageCuda("12.2", "12.4", false);
    assert.equal(refused.verdict, "refused");
    assert.match(refused.message, /cuda>=12\.4/);
    assert.match(refused.message, /cuda-compat-12-4/);
    assert.equal(judgeImageCuda("12.2", "13.0", false).verdict, "refused");
    assert.equal(judgeImageCuda("12.2", "13.0", true).verdict, "forward-compat");
    assert.equal(judgeImageCuda(null, "12.4", false).verdict, "unknown");
  });
});
