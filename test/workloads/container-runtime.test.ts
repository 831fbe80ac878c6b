// The simulated container runtime's refusals and images (sim/src/containers), in-process on a
// node state of its own: the images `sim fault NODE image` adds (and --clear takes back), what
// `image inspect` shows of them, and the refusals that come before any command runs (an image
// the driver's CUDA cannot run, with nvidia-container-cli's words; a CDI name the layout lacks).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readStarts } from "../../sim/src/containers/images.js";
import { runtimeMain } from "../../sim/src/containers/runtime.js";
import { clearFaults, plantFault } from "../../sim/src/faults.js";
import { initState } from "../../sim/src/nvsmi/state.js";
import { compatArgv, compatOf, imageCudaOf } from "../../src/workloads/containers.js";
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

  it("lists an image's compat folder with no GPU; starts the compat image on the older driver, not the bare one", async () => {
    const dir = node();
    const COMPAT = "nvidia/cuda:13.0.0-compat-ubuntu24.04";
    /** The listing the suite runs, through the simulated podman as a node runs it (a child
     * process: the container's command writes to its stdout). */
    const list = (image: string) => {
      const argv = [...compatArgv("podman", image)];
      argv[0] = "sim/src/containers/podman.ts";
      const out = execFileSync(process.execPath, ["--import", "tsx", ...argv], {
        env: { ...process.env, SLICECHECK_SIM_STATE: dir },
        encoding: "utf8",
      });
      return compatOf(out);
    };
    // The container's own paths, as `ls` inside it prints them.
    assert.deepEqual(list(COMPAT), {
      files: ["/usr/local/cuda/compat/libcuda.so.1", "/usr/local/cuda/compat/libcuda.so.580.65.06"],
      driver: "580.65.06",
    });
    assert.deepEqual(list("nvidia/cuda:13.0.0-base-ubuntu24.04"), {
      files: [],
      driver: null,
    });
    // Given a GPU: the compat image's NVIDIA_REQUIRE_CUDA lists the 550 branch, the bare one not.
    const gpu = (image: string) =>
      call(dir, "docker", "run", "--rm", "--gpus", "all", image, "true");
    assert.equal((await gpu(COMPAT)).code, 0);
    assert.equal((await gpu("nvidia/cuda:13.0.0-base-ubuntu24.04")).code, 126);
    // `sim fault image …+compat` adds such an image; without +compat the same name is refused.
    await plantFault(dir, "image", { name: "site/train:2=12.8.0+compat" });
    const inspect = await call(dir, "docker", "image", "inspect", "site/train:2");
    assert.match(inspect.out, /NVIDIA_REQUIRE_CUDA=cuda>=12\.8 brand=tesla,driver>=470,driver<471/);
    assert.equal((await gpu("site/train:2")).code, 0);
    await plantFault(dir, "image", { name: "site/train:2=12.8.0" });
    assert.equal((await gpu("site/train:2")).code, 126);
    assert.deepEqual(
      readStarts(dir).map((s) => [s.outcome, s.devices.length > 0]),
      [
        ["started", false],
        ["started", false],
        ["started", true],
        ["refused", true],
        ["started", true],
        ["refused", true],
      ],
    );
  });
});
