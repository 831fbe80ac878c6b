// Forward compatibility in container images (issue 23): the compat folder's listing read, whether
// the toolkit would use what it holds on this driver, the suite's judgement of a too-new image
// from it (an unread folder never taken for one that has the libraries), and the simulated
// toolkit's requirement check that lets such an image start (sim/src/containers/require.ts).
import assert from "node:assert/strict";
import { requirementError, unsatisfied } from "../../sim/src/containers/require.js";
import { COMPAT_SCRIPT, compatArgv, compatOf, compatUsed } from "../../src/workloads/compat.js";
import { enrootImageCuda } from "../../src/workloads/enroot.js";
import { judged } from "../../suites/lib/containers-node.js";

const LIB = "/usr/local/cuda/compat/libcuda.so.580.65.06";
const LISTING = `compat=/usr/local/cuda/compat/libcuda.so.1\ncompat=${LIB}\ncompat-read=done\n`;
const IMG = "site/cuda:13.0-compat";

describe("forward compatibility in an image (unit)", () => {
  it("reads the compat listing: its libcuda and driver, an empty folder, a read that did not finish", () => {
    assert.deepEqual(compatOf(LISTING), {
      files: ["/usr/local/cuda/compat/libcuda.so.1", LIB],
      driver: "580.65.06",
    });
    assert.deepEqual(compatOf("compat-read=done\n"), { files: [], driver: null });
    // No end mark (the container died, or the entrypoint ran something else): unknown, not none.
    assert.equal(compatOf(`compat=${LIB}\n`), null);
    assert.equal(compatOf(""), null);
  });

  it("the toolkit uses the compat libcuda only when its branch is above the node's driver", () => {
    const c = compatOf(LISTING)!;
    assert.deepEqual(compatUsed(c, "550.127.05"), { libcuda: LIB, driver: "580.65.06" });
    assert.match(
      (compatUsed(c, "580.95.05") as { why: string }).why,
      /not of a newer branch than the node's driver 580\.95\.05/,
    );
    assert.match((compatUsed(c, null) as { why: string }).why, /driver version is unknown/);
    const none = compatUsed({ files: [], driver: null }, "550.127.05") as { why: string };
    assert.match(none.why, /carries none in \/usr\/local\/cuda\/compat/);
    const unversioned = { files: ["/usr/local/cuda/compat/libcuda.so.1"], driver: null };
    assert.match((compatUsed(unversioned, "550.1") as { why: string }).why, /no versioned libcuda/);
  });

  it("lists the folder in a GPU-less container with the image's entrypoint bypassed", () => {
    assert.deepEqual(compatArgv("podman", IMG), [
      "podman",
      "run",
      "--rm",
      "--entrypoint",
      "/bin/sh",
      "-e",
      "NVIDIA_VISIBLE_DEVICES=void",
      IMG,
      "-c",
      COMPAT_SCRIPT,
    ]);
  });

  it("enroot's CUDA read ignores the compat lines that follow it, version.json included", () => {
    assert.equal(enrootImageCuda(`CUDA_VERSION=13.0.0\n${LISTING}`), "13.0.0");
    const json = JSON.stringify({ cuda: { name: "CUDA SDK", version: "13.0.0" } });
    assert.equal(enrootImageCuda(`${json}\n${LISTING}`), "13.0.0");
  });

  it("judges a too-new image: forward-compat when used, refused without, not assessed when unread", () => {
    const node = { cuda: "12.4", driver: "550.127.05" };
    const read = (compat: ReturnType<typeof compatOf>, compatProblem: string | null = null) => ({
      cuda: "13.0.0",
      problem: null,
      compat,
      compatProblem,
    });
    const used = judged(IMG, read(compatOf(LISTING)), node);
    assert.deepEqual([used.tooNew, used.problem], [null, null]);
    assert.equal(used.forwardCompat?.libcuda, LIB);
    assert.match(
      used.forwardCompat?.message ?? "",
      /forward-compatibility libraries .*data-center/,
    );
    // The planted fault: the same image without the libraries is refused before any start.
    const bare = judged(IMG, read(compatOf("compat-read=done\n")), node);
    assert.equal(bare.forwardCompat, null);
    assert.match(
      bare.tooNew ?? "",
      /newer than the driver's CUDA 12\.4, and it carries none in \/usr\/local\/cuda\/compat: the container runtime refuses/,
    );
    // The listing could not be read: neither refused as too new nor run, the reason kept.
    const unread = judged(IMG, read(null, "podman run …: exit 127"), node);
    assert.deepEqual([unread.tooNew, unread.forwardCompat], [null, null]);
    assert.match(unread.problem ?? "", /could not be read: podman run …: exit 127/);
    // An image the driver runs needs no listing at all.
    const ok = judged(IMG, { cuda: "12.2.0", problem: null, compat: null }, node);
    assert.deepEqual(ok, { tooNew: null, forwardCompat: null, problem: null });
  });
});

describe("simulated toolkit: NVIDIA_REQUIRE_CUDA as nvidia-container-cli evaluates it (unit)", () => {
  const h100 = { cuda: "12.4", driver: "550.127.05", brand: "nvidia" };
  it("spaces are alternatives, commas all-of; a failure names the first term", () => {
    assert.equal(unsatisfied("cuda>=12.2", h100), null);
    assert.equal(unsatisfied("cuda>=13.0", h100), "cuda>=13.0");
    const compat =
      "cuda>=13.0 brand=tesla,driver>=550,driver<551 brand=nvidia,driver>=550,driver<551";
    assert.equal(
      unsatisfied(compat, h100),
      null,
      "the 550 branch is listed for a data-center brand",
    );
    assert.equal(unsatisfied(compat, { ...h100, brand: "geforce" }), "cuda>=13.0");
    assert.equal(unsatisfied(compat, { ...h100, driver: "560.35.03" }), "cuda>=13.0");
    assert.match(
      requirementError("cuda>=13.0"),
      /requirement error: unsatisfied condition: cuda>=13\.0, please update your driver/,
    );
  });
});
