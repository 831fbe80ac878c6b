// The containers suite's pure part (src/workloads/containers.ts): the image an instance runs,
// the runtime's argv giving it that instance only, an image's CUDA from `image inspect`, the
// driver check that refuses a too-new image, and what a container's `nvidia-smi -L` shows,
// read from a real capture (an H100 on 580.173.02 with three MIG devices).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  containerizedSpec,
  cudaInside,
  imageCudaOf,
  imageFor,
  migIndexOf,
  openedDevice,
  pickRuntime,
  runArgv,
  seesOthers,
} from "../../src/workloads/containers.js";
import { tempDir } from "../helpers/tmp.js";
import { readCapture } from "./captures.js";

const H100 = readCapture("nvidia-smi_-L_H100-80GB-HBM3_580.173.02_mixed.txt");
const GPU = "GPU-0d0831da-0c98-2717-6446-8acd91d39b65";
const MIG0 = "MIG-5ff0d535-9a82-5af6-80df-768b9d3ac092";
const MIG2 = "MIG-ee6996fb-86fb-5405-83f0-b20887da1bb3";
/** What a container given MIG device 2 lists: its GPU and that device only. */
const ONLY_MIG2 = H100.split("\n")
  .filter((l) => !l.includes("Device  0") && !l.includes("Device  1"))
  .join("\n");

describe("containers: image per instance, runtime argv, image CUDA, what a container sees", () => {
  it("picks the instance's own image first, then its profile's, the inventory's over the config's", () => {
    const inst = { gpu: 0, placement: "0:4", profile: "3g.40gb" };
    const config = { "3g.40gb": "cfg:12.2", "gpu0:0:4": "own:12.4" };
    assert.equal(imageFor(inst, config, {}), "own:12.4");
    assert.equal(imageFor({ ...inst, placement: "4:4" }, config, {}), "cfg:12.2");
    assert.equal(
      imageFor({ ...inst, placement: "4:4" }, config, { "3g.40gb": "inv:12.8" }),
      "inv:12.8",
    );
    // A compute instance runs its GPU instance's image; an unnamed profile runs none.
    assert.equal(
      imageFor({ ...inst, placement: "4:4", profile: "1c.3g.40gb" }, config, {}),
      "cfg:12.2",
    );
    assert.equal(imageFor({ ...inst, profile: "1g.10gb", placement: "6:1" }, config, {}), null);
  });

  it("detects podman before docker, and nothing from an empty PATH", () => {
    assert.equal(pickRuntime(["docker", "podman"]), "podman");
    assert.equal(pickRuntime(["docker"]), "docker");
    assert.equal(pickRuntime([]), null);
  });

  it("gives the instance as the toolkit documents: CDI G:M for podman, --gpus device=UUID for docker", () => {
    const inst = { gpu: 0, uuid: MIG2 };
    assert.equal(migIndexOf(H100, inst), 2);
    assert.equal(migIndexOf(H100, { gpu: 1, uuid: MIG2 }), null);
    assert.deepEqual(
      runArgv("podman", inst, 2, "img", ["stress", "--duration", "5"], ["/opt/sc"]),
      [
        "podman",
        "run",
        "--rm",
        "--device",
        "nvidia.com/gpu=0:2",
        "-v",
        "/opt/sc:/opt/sc:ro",
        "img",
        "stress",
        "--duration",
        "5",
      ],
    );
    // Without an index (not in the listing), the CDI name is the UUID.
    assert.equal(runArgv("podman", inst, null, "img", ["x"])[4], `nvidia.com/gpu=${MIG2}`);
    assert.deepEqual(runArgv("docker", inst, 2, "img", ["x"]).slice(0, 5), [
      "docker",
      "run",
      "--rm",
      "--gpus",
      `device=${MIG2}`,
    ]);
  });

  it("reads the image's CUDA from image inspect's env; none for a non-CUDA image or bad JSON", () => {
    const inspect = (env: string[]) => JSON.stringify([{ Id: "sha256:1", Config: { Env: env } }]);
    assert.equal(imageCudaOf(inspect(["PATH=/bin", "CUDA_VERSION=12.4.1"])), "12.4.1");
    assert.equal(imageCudaOf(inspect(["PATH=/bin"])), null);
    assert.equal(imageCudaOf("[]"), null);
    assert.equal(imageCudaOf("Error: not json"), null);
  });

  it("a container that lists only its instance passes; one that lists others says which", () => {
    assert.equal(seesOthers(`CUDA_VERSION=12.4.1\n${ONLY_MIG2}`, MIG2, GPU), null);
    assert.match(
      seesOthers(H100, MIG2, GPU) ?? "",
      /sees 3 MIG devices \(MIG-5ff0d535.*MIG-8443519f/,
    );
    assert.match(
      seesOthers(ONLY_MIG2, MIG0, GPU) ?? "",
      new RegExp(`sees ${MIG2} and not its own instance ${MIG0}`),
    );
    const otherGpu = `${ONLY_MIG2}\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-11111111-2222-3333-4444-555555555555)`;
    assert.match(seesOthers(otherGpu, MIG2, GPU) ?? "", /other GPUs \(GPU-11111111/);
    assert.equal(cudaInside("CUDA_VERSION=12.2.0\nGPU 0: x"), "12.2.0");
    assert.equal(openedDevice(`slicecheck-device program=stress uuid=${MIG2} sms=16`), MIG2);
  });
});

describe("containers: the isolation aggressor wrapped in its container (real sh, stand-in runtime)", () => {
  const dir = tempDir("aggr");
  const bin = join(dir, "bin");
  mkdirSync(bin);
  const log = join(dir, "runtime-args");
  // A stand-in runtime: records its argv one per line, then runs what follows the image, as a
  // container's command, with the image's CUDA_VERSION and the -e variables only.
  const runtime = (name: string) =>
    writeFileSync(
      join(bin, name),
      `#!/bin/sh\nprintf '%s\\n' "$@" > ${log}\nenv=; while [ "$1" != img:1 ]; do [ "$1" = -e ] && env="$env $2"; shift; done; shift\nexec env -i PATH="$PATH" CUDA_VERSION=12.4.1 $env "$@"\n`,
      { mode: 0o755 },
    );
  writeFileSync(
    join(bin, "slicecheck-crasher"),
    '#!/bin/sh\necho "crasher $* tag=$SLICECHECK_CMD"\nexit 3\n',
    {
      mode: 0o755,
    },
  );
  const inst = { gpu: 0, uuid: MIG2 };
  const spec = {
    name: "crasher" as const,
    program: "slicecheck-crasher",
    args: ["--mode", "illegal-address"],
    durationS: 5,
  };
  const runIt = (argv: string[], path: string) =>
    spawnSync(argv[0]!, argv.slice(1), {
      encoding: "utf8",
      env: { PATH: path, SLICECHECK_RUN: "r1@sim01", SLICECHECK_CMD: "c7" },
    });

  it("starts the same program in podman on its MIG device, its folder mounted, the tags passed, and the fault's exit kept", () => {
    runtime("podman");
    const w = containerizedSpec(spec, inst, "img:1", null);
    assert.deepEqual([w.name, w.durationS], ["crasher", 5]);
    const r = runIt([w.program, ...w.args], `${bin}:/usr/bin:/bin`);
    assert.equal(r.status, 3, r.stderr);
    const args = readFileSync(log, "utf8").trim().split("\n");
    assert.deepEqual(args.slice(0, 5), [
      "run",
      "-e",
      "SLICECHECK_RUN=r1@sim01",
      "-e",
      "SLICECHECK_CMD=c7",
    ]);
    assert.ok(args.includes("--rm"));
    assert.ok(args.includes(`nvidia.com/gpu=${MIG2}`), args.join(" "));
    assert.ok(args.includes(`${bin}:${bin}:ro`), args.join(" "));
    assert.deepEqual(args.slice(-3), [
      join(bin, "slicecheck-crasher"),
      "--mode",
      "illegal-address",
    ]);
    // Its first line comes from inside (the image's CUDA), then the fault program's own output.
    assert.match(
      r.stdout,
      /^slicecheck-container runtime=podman image=img:1 cuda=12\.4\.1 devices=none\ncrasher --mode illegal-address tag=c7\n$/,
    );
  });

  it("names docker's --gpus device when the inventory names docker; without a runtime it fails, never runs bare", () => {
    runtime("docker");
    const w = containerizedSpec(spec, inst, "img:1", "docker");
    assert.equal(runIt([w.program, ...w.args], `${bin}:/usr/bin:/bin`).status, 3);
    assert.ok(readFileSync(log, "utf8").split("\n").includes(`device=${MIG2}`));
    // A PATH with a shell and nothing else (this machine's own docker or podman stays out).
    const bare = join(dir, "bare");
    mkdirSync(bare, { recursive: true });
    if (!existsSync(join(bare, "sh"))) symlinkSync("/bin/sh", join(bare, "sh"));
    const w0 = containerizedSpec(spec, inst, "img:1", null);
    const none = runIt([w0.program, ...w0.args], bare);
    assert.equal(none.status, 125);
    assert.match(none.stderr, /no container runtime \(podman, docker\) to run the aggressor/);
    assert.doesNotMatch(none.stdout, /crasher/);
  });
});
