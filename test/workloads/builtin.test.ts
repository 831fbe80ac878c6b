import assert from "node:assert/strict";
import {
  BUILTIN_PRINTF,
  CRASHER_MODES,
  formatCrasherArmedLine,
  formatMemhogCheckLine,
  formatMemhogLine,
  formatStoppedLine,
  formatStressFinalLine,
  formatStressLine,
  parseBuiltinOutput,
} from "../../src/workloads/parsers/builtin.js";
import { classifyCudaError } from "../../src/workloads/parsers/cuda-errors.js";
import { assertParseError } from "./captures.js";

/** Just enough of C's printf for BUILTIN_PRINTF: %.Nf, %llu, %d, %s. */
function printf(format: string, ...args: (number | string)[]): string {
  let i = 0;
  return format.replace(/%(?:\.(\d)f|llu|d|s)/g, (_m, digits: string | undefined) => {
    const arg = args[i++];
    if (digits !== undefined) return Number(arg).toFixed(Number(digits));
    return String(arg);
  });
}

describe("built-in workload lines", () => {
  it("prints the documented lines", () => {
    assert.equal(
      formatStressLine({ t: 5, tflops: 12.34, errors: 0 }),
      "SLICECHECK stress t=5.0 tflops=12.34 errors=0",
    );
    assert.equal(
      formatStressFinalLine({ tflops: 11.5, errors: 2, iterations: 4096 }),
      "SLICECHECK stress-final tflops=11.50 errors=2 iterations=4096",
    );
    assert.equal(
      formatMemhogLine({
        allocatedBytes: 9_663_676_416,
        requestedBytes: 10_737_418_240,
        oom: true,
      }),
      "SLICECHECK memhog allocated_bytes=9663676416 requested_bytes=10737418240 oom=1",
    );
    assert.equal(
      formatMemhogCheckLine({ bytes: 1024, ok: true }),
      "SLICECHECK memhog-check bytes=1024 ok=1",
    );
    assert.equal(
      formatCrasherArmedLine("illegal-address"),
      "SLICECHECK crasher mode=illegal-address armed",
    );
  });

  it("knows exactly the crasher's modes", () => {
    assert.deepEqual([...CRASHER_MODES], ["illegal-address", "trap", "hang", "sigkill"]);
    for (const mode of CRASHER_MODES)
      assert.deepEqual(parseBuiltinOutput(`${formatCrasherArmedLine(mode)}\n`).crasher, { mode });
    for (const old of ["device-assert", "segfault"])
      assertParseError(
        () => parseBuiltinOutput(`SLICECHECK crasher mode=${old} armed`),
        "builtin",
        1,
      );
  });

  it("the C printf formats print exactly what the format functions print", () => {
    assert.equal(
      printf(BUILTIN_PRINTF.stress, 5, 12.34, 0),
      `${formatStressLine({ t: 5, tflops: 12.34, errors: 0 })}\n`,
    );
    assert.equal(
      printf(BUILTIN_PRINTF.stressFinal, 11.5, 2, 4096),
      `${formatStressFinalLine({ tflops: 11.5, errors: 2, iterations: 4096 })}\n`,
    );
    assert.equal(
      printf(BUILTIN_PRINTF.memhog, 100, 200, 0),
      `${formatMemhogLine({ allocatedBytes: 100, requestedBytes: 200, oom: false })}\n`,
    );
    assert.equal(
      printf(BUILTIN_PRINTF.memhogCheck, 100, 0),
      `${formatMemhogCheckLine({ bytes: 100, ok: false })}\n`,
    );
    for (const mode of CRASHER_MODES) {
      assert.equal(printf(BUILTIN_PRINTF.crasher, mode), `${formatCrasherArmedLine(mode)}\n`);
    }
    assert.equal(
      printf(BUILTIN_PRINTF.stopped, "stress", "SIGTERM", 3.25),
      `${formatStoppedLine({ program: "stress", signal: "SIGTERM", t: 3.25 })}\n`,
    );
  });

  it("reads the line of a run a signal cut short", () => {
    const text = `${formatStressFinalLine({ tflops: 9, errors: 0, iterations: 80 })}\n${formatStoppedLine({ program: "stress", signal: "SIGINT", t: 2 })}\n`;
    assert.deepEqual(parseBuiltinOutput(text).stopped, {
      program: "stress",
      signal: "SIGINT",
      t: 2,
    });
    assert.equal(parseBuiltinOutput(text.split("\n")[0]!).stopped, null);
  });

  it("reads back what it prints, with foreign lines in between", () => {
    const text = [
      "stress: 2g.20gb instance, 42 SMs",
      formatStressLine({ t: 5, tflops: 12.34, errors: 0 }),
      formatStressLine({ t: 10, tflops: 12.31, errors: 1 }),
      "some banner",
      formatStressFinalLine({ tflops: 12.3, errors: 1, iterations: 9000 }),
      formatMemhogLine({ allocatedBytes: 100, requestedBytes: 200, oom: true }),
      formatMemhogCheckLine({ bytes: 100, ok: true }),
      formatMemhogCheckLine({ bytes: 100, ok: false }),
      "",
    ].join("\r\n");
    assert.deepEqual(parseBuiltinOutput(text), {
      stress: [
        { t: 5, tflops: 12.34, errors: 0 },
        { t: 10, tflops: 12.31, errors: 1 },
      ],
      stressFinal: { tflops: 12.3, errors: 1, iterations: 9000 },
      memhog: { allocatedBytes: 100, requestedBytes: 200, oom: true },
      memhogChecks: [
        { bytes: 100, ok: true },
        { bytes: 100, ok: false },
      ],
      crasher: null,
      stopped: null,
      allreduce: null,
      serve: [],
      serveFinal: null,
    });
  });

  it("a crasher that armed and then faulted the expected way", () => {
    const text = [
      formatCrasherArmedLine("illegal-address"),
      "CUDA error: an illegal memory access was encountered",
    ].join("\n");
    assert.deepEqual(parseBuiltinOutput(text).crasher, { mode: "illegal-address" });
    assert.equal(classifyCudaError(text)?.kind, "illegal-address");
  });

  it("refuses values it could not print", () => {
    assert.throws(() => formatStressLine({ t: -1, tflops: 1, errors: 0 }), RangeError);
    assert.throws(
      () => formatMemhogLine({ allocatedBytes: 1.5, requestedBytes: 2, oom: false }),
      RangeError,
    );
  });

  describe("refuses truncated or garbled tagged lines", () => {
    const good = formatStressLine({ t: 5, tflops: 12.34, errors: 0 });

    it("a line cut before its last field", () => {
      assertParseError(
        () => parseBuiltinOutput(`${good}\nSLICECHECK stress t=10.0 tflops=12.3`),
        "builtin",
        2,
      );
    });

    it("an unknown record", () => {
      assertParseError(
        () => parseBuiltinOutput("SLICECHECK stresss t=1.0 tflops=1.00 errors=0"),
        "builtin",
        1,
      );
    });

    it("an unknown crasher mode", () => {
      assertParseError(
        () => parseBuiltinOutput("x\nSLICECHECK crasher mode=meltdown armed"),
        "builtin",
        2,
      );
    });

    it("a once-per-run line printed twice (two processes on one stream)", () => {
      const memhog = formatMemhogLine({ allocatedBytes: 1, requestedBytes: 1, oom: false });
      assertParseError(() => parseBuiltinOutput(`${memhog}\n${memhog}`), "builtin", 2);
    });
  });
});
