// The simulated container runtime's refusals and images (sim/src/containers), in-process on a
// node state of its own: the images `sim fault NODE image` adds (and --clear takes back), what
// `image inspect` shows of them, and the refusals that come before any command runs (an image
// the driver's CUDA cannot run, with nvidia-container-cli's words; a CDI name the layout lacks).
import assert from "node:assert/strict";
import { readStarts } from "../../sim/src/containers/images.js";
import { runtimeMain } from "../../sim/src/containers/runtime.js";
import { clearFaults, plantFault } from "../../sim/src/faults.js";
import { initState } from "../../sim/src/nvsmi/state.js";
import { imageCudaOf } from "../../src/workloads/containers.js";
import { tempDir } from "../helpers/tmp.js";

async function call(stateDir: string, flavor: "podman" | "docker", ...argv: string[]) {
  let out = "";
  let err = "";
  const saved = process.env.SLICECHECK_SIM_STATE;
  process.env.SLICECHECK_SIM_STATE = stateDir;
  try {
    const code = await runtimeMain(flavor, argv, {
      out: (s) => {
        out += s;
      },
      err: (s) => {
        err += s;
      },
    });
    return { code, out, err };
  } finally {
    if (saved === undefined) delete process.env.SLICECHECK_SIM_STATE;
    else process.env.SLICECHECK_SIM_STATE = saved;
  }
}

describe("simulated container runtime: images and refusals before the start", () => {
  const node = () => {
    const dir = tempDir("container-runtime");
    initState(dir, {
      node: "n1",
      product: "H100-80GB",
      gpus: 1,
      driver: "550.127.05",
      migEnabled: true,
    });
    return dir;
  };

  it("lists the default images; `image` adds one with its CUDA, --clear takes it back", async () => {
    const dir = node();
    assert.match(
      (await call(dir, "podman", "images")).out,
      /nvidia\/cuda\s+12\.2\.0-base-ubuntu22\.04/,
    );
    await plantFault(dir, "image", { name: "site/train:1=12.3.2" });
    const got = await call(dir, "podman", "image", "inspect", "site/train:1");
    assert.equal(got.code, 0, got.err);
    assert.equal(imageCudaOf(got.out), "12.3.2");
    await clearFaults(dir);
    const gone = await call(dir, "podman", "image", "inspect", "site/train:1");
    assert.deepEqual([gone.code, gone.err.trim()], [125, "Error: site/train:1: image not known"]);
    await assert.rejects(plantFault(dir, "image", { name: "no-version" }), /--name NAME=CUDA/);
  });

  it("refuses a CUDA 13.0 image on a CUDA 12.4 driver as the toolkit hook does, recording no start", async () => {
    const dir = node();
    const r = await call(
      dir,
      "docker",
      "run",
      "--rm",
      "--gpus",
      "all",
      "nvidia/cuda:13.0.0-base-ubuntu24.04",
      "true",
    );
    assert.equal(r.code, 126);
    assert.match(
      r.err,
      /nvidia-container-cli: requirement error: unsatisfied condition: cuda>=13\.0, please update your driver/,
    );
    assert.deepEqual(
      readStarts(dir).map((s) => s.outcome),
      ["refused"],
    );
  });

  it("refuses a CDI name the live layout does not have (no MIG device 0:5 without instances)", async () => {
    const dir = node();
    const r = await call(
      dir,
      "podman",
      "run",
      "--rm",
      "--device",
      "nvidia.com/gpu=0:5",
      "nvidia/cuda:12.2.0-base-ubuntu22.04",
      "true",
    );
    assert.equal(r.code, 125);
    assert.match(r.err, /unresolvable CDI devices nvidia\.com\/gpu=0:5/);
    const flag = await call(dir, "podman", "run", "--gpus", "all", "img", "true");
    assert.match(flag.err, /unknown flag: --gpus/, "podman has no --gpus");
  });
});
