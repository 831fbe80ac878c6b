import assert from "node:assert/strict";
import { classifyCudaError, parseCudaErrors } from "../../src/workloads/parsers/cuda-errors.js";
import { assertParseError, captureNames, readCapture } from "./captures.js";

const GiB = 2 ** 30;
const MiB = 2 ** 20;

describe("CUDA error classifier", () => {
  describe("every cuda-error capture", () => {
    const names = captureNames("cuda-error_");

    it("finds the cuda-error captures", () => {
      assert.ok(names.length >= 4, `only ${names.length} cuda-error captures found`);
    });

    for (const name of names) {
      it(`classifies ${name}`, () => {
        const errors = parseCudaErrors(readCapture(name));
        assert.ok(errors.length > 0);
        const expected = name.includes("oom") ? "oom" : "illegal-address";
        assert.equal(errors[0]?.kind, expected);
      });
    }
  });

  it("PyTorch 2.2+ OOM: requested, total and free bytes of the GPU", () => {
    const error = classifyCudaError(
      readCapture("cuda-error_pytorch-oom_expandable-segments-hint-format.txt"),
    );
    assert.equal(error?.kind, "oom");
    assert.equal(error?.gpu, 0);
    assert.equal(error?.requestedBytes, 22 * MiB);
    assert.equal(error?.totalBytes, Math.round(23.65 * GiB));
    assert.equal(error?.freeBytes, Math.round(11.06 * MiB));
    assert.equal(error?.line, 2); // line 1 was the blanked `# source:` line
    assert.match(error?.message ?? "", /^torch\.cuda\.OutOfMemoryError: CUDA out of memory\./);
  });

  it("PyTorch 2.1 OOM with the 'capacty' typo and '0 bytes is free'", () => {
    const error = classifyCudaError(
      readCapture("cuda-error_pytorch-oom_capacty-typo-max-split-hint-format.txt"),
    );
    assert.equal(error?.requestedBytes, Math.round(1.7 * GiB));
    assert.equal(error?.totalBytes, 6 * GiB);
    assert.equal(error?.freeBytes, 0);
  });

  it("pre-2.1 parenthesised OOM layout", () => {
    const error = classifyCudaError(
      readCapture("cuda-error_pytorch-oom_legacy-parenthesized-format.txt"),
    );
    assert.equal(error?.requestedBytes, Math.round(1.69 * GiB));
    assert.equal(error?.totalBytes, Math.round(14.56 * GiB));
    assert.equal(error?.freeBytes, Math.round(1.31 * GiB));
    assert.equal(error?.gpu, 0);
  });

  it("an illegal address reported by the NCCL watchdog, not the asynchronous-report hints", () => {
    const errors = parseCudaErrors(
      readCapture("cuda-error_illegal-address_vllm-nccl-watchdog.txt"),
    );
    assert.equal(errors.length, 1);
    assert.equal(errors[0]?.kind, "illegal-address");
    assert.match(errors[0]?.message ?? "", /Process group watchdog thread terminated/);
    assert.equal(errors[0]?.requestedBytes, undefined);
  });

  it("classifies the CUDA texts relayed by nccl-tests and gpu-burn", () => {
    const nccl = readCapture(
      "nccl-tests_all_reduce_perf_h100x8_cuda-failure_system-not-yet-initialized.txt",
    );
    assert.equal(classifyCudaError(nccl)?.kind, "system-not-ready");
    const burn = readCapture("gpu-burn_v100x8_-i0_init-fail_cuda-error-unknown.txt");
    assert.equal(classifyCudaError(burn)?.kind, "unknown");
    const noDevice = readCapture("gpu-burn_rtx3080tix2_terminate-std-string_no-cuda-devices.txt");
    assert.equal(classifyCudaError(noDevice)?.kind, "no-device");
    assert.deepEqual(
      parseCudaErrors(
        [
          "test: Test CUDA failure common.cu:1007 'out of memory'",
          "RuntimeError: CUDA error: unspecified launch failure",
          "RuntimeError: CUDA error: device-side assert triggered",
          "CUDA error: uncorrectable ECC error encountered",
        ].join("\n"),
      ).map((e) => [e.kind, e.line]),
      [
        ["oom", 1],
        ["launch-failure", 2],
        ["device-assert", 3],
        ["ecc-uncorrectable", 4],
      ],
    );
  });

  it("ignores the kernel OOM killer and lines without a CUDA error", () => {
    const text = "[12345.6] Out of memory: Killed process 4242 (python3)\nall good\n";
    assert.equal(classifyCudaError(text), null);
    assert.deepEqual(parseCudaErrors(text), []);
  });

  it("refuses a PyTorch OOM message cut before its size", () => {
    const cut = readCapture("cuda-error_pytorch-oom_expandable-segments-hint-format.txt").replace(
      /Tried to allocate .*/,
      "Tried to alloc",
    );
    assertParseError(() => parseCudaErrors(cut), "cuda-error", 2);
  });
});
