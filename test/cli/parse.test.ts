import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

const cap = (name: string) => join("fixtures/captures", name);

describe("slicecheck parse", () => {
  it("prints the documented JSON for a real -L capture", async () => {
    const r = await cli(
      "parse",
      "gpus",
      cap("nvidia-smi_-L_H100-80GB-HBM3_580.173.02_mixed.txt"),
      "--json",
    );
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout);
    assert.equal(j.gpus[0].uuid, "GPU-0d0831da-0c98-2717-6446-8acd91d39b65");
    assert.equal(j.gpus[0].migDevices[0].name, "1c.3g.40gb");
    assert.equal(j.gpus[0].migDevices[0].uuid, "MIG-5ff0d535-9a82-5af6-80df-768b9d3ac092");
  });

  it("parses workload captures too (nccl-tests)", async () => {
    const r = await cli(
      "parse",
      "nccl-tests",
      cap("nccl-tests_all_reduce_perf_rtx5090_1gpu_busbw-zero.txt"),
      "--json",
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).ranks[0].name, "NVIDIA GeForce RTX 5090");
  });

  it("exits 3 on a truncated record, naming the file and the line of the file", async () => {
    const dir = tempDir("parse");
    const f = join(dir, "cut.txt");
    writeFileSync(
      f,
      "# source: test\nGPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0d0831da-0c98-2717-6446-8acd91d39b65)\n  MIG 1g.10gb     Device  0: (UUID: MIG-5ff0d5",
    );
    const r = await cli("parse", "gpus", f);
    assert.equal(r.code, 3);
    assert.match(r.stderr, new RegExp(`${f.replaceAll("/", "\\/")}: gpus: line 3: expected`));
  });

  it("exits 3 on an unknown kind, listing the kinds", async () => {
    const r = await cli("parse", "lspci", cap("nvidia-smi_-L_A30-24GB_535.183.01_2dev.txt"));
    assert.equal(r.code, 3);
    assert.match(
      r.stderr,
      /unknown parse kind 'lspci'; one of: gpus query lgip .* nccl-tests gpu-burn dcgmi/,
    );
  });
});
