// The container toolkit's outputs, parsed from fixtures written in the shapes NVIDIA documents
// (each fixture's first line names its source).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  parseCdiList,
  parseCdiSpec,
  parseContainerCliInfo,
  parseCtkVersion,
} from "../../src/nvsmi/ctk.js";

const fixture = (f: string) => readFileSync(join("test/fixtures/toolkit", f), "utf8");

describe("container toolkit parsers", () => {
  it("nvidia-ctk --version: the release", () => {
    assert.equal(parseCtkVersion(fixture("nvidia-ctk-version.txt")), "1.17.8");
    assert.equal(parseCtkVersion("sh: 1: nvidia-ctk: not found"), null);
  });

  it("nvidia-ctk cdi list: the names, without the log line", () => {
    const names = parseCdiList(fixture("nvidia-ctk-cdi-list.txt"));
    assert.equal(names.length, 7);
    assert.equal(names[0], "nvidia.com/gpu=0");
    assert.ok(names.includes("nvidia.com/gpu=0:1"));
    assert.ok(names.includes("nvidia.com/gpu=MIG-a1c3e5f7-0b2d-5f4a-9c6e-8d0b2f4a6c8e"));
    assert.throws(
      () => parseCdiList("INFO[0000] Found 1 CDI devices\nnot a device"),
      /cdi-list: line 2/,
    );
  });

  it("nvidia-container-cli info: driver, CUDA, and each GPU", () => {
    const info = parseContainerCliInfo(fixture("nvidia-container-cli-info.txt"));
    assert.equal(info.nvrm, "535.183.01");
    assert.equal(info.cuda, "12.2");
    assert.equal(info.gpus.length, 2);
    assert.deepEqual(info.gpus[1], {
      index: "1",
      model: "NVIDIA A100-SXM4-80GB",
      uuid: "GPU-9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a",
      busId: "00000000:0F:00.0",
      arch: "8.0",
    });
    assert.throws(() => parseContainerCliInfo("garbage without a colon"), /container-cli-info/);
  });

  it("the CDI spec: kind, names (index ones as strings) and each device's nodes", () => {
    const spec = parseCdiSpec(fixture("cdi-spec-mig.yaml"));
    assert.equal(spec.kind, "nvidia.com/gpu");
    assert.equal(spec.cdiVersion, "0.5.0");
    assert.deepEqual(
      spec.devices.map((d) => d.name),
      [
        "0",
        "0:0",
        "0:1",
        "GPU-4b1f6d0e-2a9c-4e7b-9d3f-1c2b3a4d5e6f",
        "MIG-7e2d9c4a-1b3f-5a6e-8d0c-2f4e6a8b0c1d",
        "MIG-a1c3e5f7-0b2d-5f4a-9c6e-8d0b2f4a6c8e",
        "all",
      ],
    );
    assert.deepEqual(spec.devices[2]!.deviceNodes, [
      "/dev/nvidia0",
      "/dev/nvidia-caps/nvidia-cap30",
      "/dev/nvidia-caps/nvidia-cap31",
    ]);
    // An unquoted `0` is a YAML number: still the device named "0".
    assert.equal(
      parseCdiSpec("kind: nvidia.com/gpu\ndevices:\n  - name: 0\n").devices[0]!.name,
      "0",
    );
    assert.throws(() => parseCdiSpec("kind: [unclosed", "/etc/cdi/x.yaml"), /cdi-spec/);
    assert.throws(
      () => parseCdiSpec("just: text\n", "/etc/cdi/x.yaml"),
      /cdiVersion, kind and devices/,
    );
  });
});
