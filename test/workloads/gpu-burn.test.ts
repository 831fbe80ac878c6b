import assert from "node:assert/strict";
import { gpuBurnExitMeaning } from "../../src/workloads/parsers/exit-codes.js";
import { parseGpuBurn } from "../../src/workloads/parsers/gpu-burn.js";
import { assertParseError, captureNames, lineOf, readCapture, readFetched } from "./captures.js";

const ALL_DIED = "gpu-burn_8gpu_all-died_no-clients-alive.txt";
const MIG_OTHER = "gpu-burn_a100x4_mig-enabled-on-other-gpu.txt";
const CUINIT = "gpu-burn_a100x8_cuinit-system-not-initialized_no-cuda-devices.txt";
const NEW_FORMAT = "gpu-burn_a500-a2000_new-format_ok-and-no-progress.txt";
const TERMINATE = "gpu-burn_h100x8_terminate-uncaught-runtime-error.txt";
const K40M = "gpu-burn_k40m-m4000_doubles_old-format.txt";
const K80 = "gpu-burn_k80_default-10s_old-format.txt";
const READ_LOOP = "gpu-burn_k80x4_load-module-error_read-error-loop.txt";
const STD_STRING = "gpu-burn_rtx3080tix2_terminate-std-string_no-cuda-devices.txt";
const V100 = "gpu-burn_v100x8_-i0_init-fail_cuda-error-unknown.txt";

/**
 * Captures whose stored excerpt was cut inside a record, with the line the parser must name.
 * The V100 excerpt ends in `GPU 4:`: four of the eight announced results are missing.
 */
const TRUNCATED: Record<string, number> = { [V100]: 23 };

/** The issue threads rendered each "\r" as a line break; gpu-burn really prints "\r" and no "\n". */
function asPrinted(text: string): string {
  return text.replace(/\n(?=\d+\.\d% {2}proc'd:)/g, "\r");
}

describe("gpu-burn parser", () => {
  describe("every gpu-burn capture", () => {
    const names = captureNames("gpu-burn_");

    it("finds the gpu-burn captures", () => {
      assert.ok(names.length >= 10, `only ${names.length} gpu-burn captures found`);
    });

    for (const name of names) {
      const line = TRUNCATED[name];
      if (line !== undefined) {
        it(`refuses ${name}, cut inside a record, at line ${line}`, () => {
          assertParseError(() => parseGpuBurn(readCapture(name)), "gpu-burn", line);
        });
      } else {
        it(`parses ${name} into a verdict, a progress report or an error`, () => {
          const result = parseGpuBurn(readCapture(name));
          assert.ok(result.gpus.length > 0 || result.progress !== null || result.errors.length > 0);
          const p = result.progress;
          if (p)
            assert.ok(p.gflops.length === p.errors.length && p.errors.length === p.temps.length);
        });
      }
    }
  });

  it("all clients DIED: died and aborted, garbage error counters dropped", () => {
    const result = parseGpuBurn(readCapture(ALL_DIED));
    assert.equal(result.died, true);
    assert.equal(result.aborted, true);
    assert.deepEqual(result.progress, {
      percent: 30,
      gflops: [0, 0, 0, 0, 0, 0, 0, 0],
      errors: [null, null, null, null, null, null, null, null],
      temps: [30, 30, 30, 30, 29, 31, 30, 30],
    });
    assert.deepEqual(result.gpus, []);
  });

  it("old layout, two GPUs, doubles", () => {
    const result = parseGpuBurn(readCapture(K40M));
    assert.deepEqual(result.progress, {
      percent: 10.4,
      gflops: [74, 423],
      errors: [0, 0],
      temps: [93, 57],
    });
    assert.equal(result.died, false);
  });

  it("keeps the last of several progress reports", () => {
    const result = parseGpuBurn(readCapture(K80));
    assert.deepEqual(result.progress, { percent: 100, gflops: [2273], errors: [0], temps: [66] });
  });

  it("new layout: OK summary; a second run without progress keeps the first run's report", () => {
    const result = parseGpuBurn(readCapture(NEW_FORMAT));
    assert.deepEqual(result.gpus, [{ index: 0, status: "OK" }]);
    assert.deepEqual(result.progress, { percent: 100, gflops: [3519], errors: [0], temps: [53] });
    assert.deepEqual(result.errors, []);
  });

  it("a GPU that made errors is FAULTY although gpu-burn exits 0", () => {
    let text = readCapture(NEW_FORMAT);
    text = text.replace(
      "100.0%  proc'd: 30 (3519 Gflop/s)   errors: 0   temps: 53 C",
      "100.0%  proc'd: 30 (3519 Gflop/s)   errors: 12  (WARNING!)  temps: 53 C",
    );
    text = text.replace("GPU 0: OK", "GPU 0: FAULTY");
    const result = parseGpuBurn(text);
    assert.deepEqual(result.gpus, [{ index: 0, status: "FAULTY" }]);
    assert.deepEqual(result.progress?.errors, [12]);
    assert.equal(result.died, false);
    assert.equal(gpuBurnExitMeaning(0).kind, "ok");
  });

  it("the V100 summary completed: eight results, GPU 5 FAULTY, the init failure kept", () => {
    const text = readCapture(V100).replace(
      /\n\s+GPU 4:$/,
      "\n\tGPU 4: OK\n\tGPU 5: FAULTY\n\tGPU 6: OK\n\tGPU 7: OK\n",
    );
    const result = parseGpuBurn(text);
    assert.deepEqual(
      result.gpus.map((g) => g.status),
      ["OK", "OK", "OK", "OK", "OK", "FAULTY", "OK", "OK"],
    );
    assert.deepEqual(
      result.gpus.filter((g) => g.status === "FAULTY").map((g) => g.index),
      [5],
    );
    assert.deepEqual(result.errors, ["Couldn't init a GPU test: Error: CUDA_ERROR_UNKNOWN"]);
    assert.deepEqual(result.progress?.gflops, [0, 0, 0, 0, 0, 0, 0, 0]);
  });

  it("one client died of a module load error; the read-error loop collapses to one entry", () => {
    const result = parseGpuBurn(readCapture(READ_LOOP));
    assert.equal(result.died, true);
    assert.equal(result.aborted, false);
    assert.deepEqual(result.progress, {
      percent: 50,
      gflops: [0, 0, 0, 0],
      errors: [null, 0, 0, 0],
      temps: [33, 29, 37, 31],
    });
    assert.deepEqual(result.errors, [
      'Couldn\'t init a GPU test: Error in "load module":',
      "read[0] error 0",
    ]);
  });

  it("init failures: cuInit, uncaught exceptions, no CUDA devices", () => {
    assert.deepEqual(parseGpuBurn(readCapture(CUINIT)).errors, [
      "Couldn't init CUDA: Error (gpu_burn-drv.cpp:304): system not yet initialized",
      "Couldn't init a GPU test: Error (gpu_burn-drv.cpp:112): initialization error",
      "No CUDA devices",
    ]);
    const terminate = parseGpuBurn(readCapture(TERMINATE));
    assert.equal(terminate.errors.length, 5);
    assert.equal(
      terminate.errors[0],
      "terminate called after throwing an instance of 'std::runtime_error' what(): Error (gpu_burn-drv.cpp:298): system not yet initialized",
    );
    assert.equal(terminate.progress, null);
    const stdString = parseGpuBurn(readCapture(STD_STRING));
    assert.equal(stdString.errors.length, 2);
    assert.match(
      stdString.errors[0] ?? "",
      /^terminate called after throwing an instance of 'std::__cxx11::basic_string/,
    );
    assert.equal(stdString.errors[1], "No CUDA devices");
  });

  it("strips the terminal's ^C and skips a cut nvidia-smi -L line", () => {
    const result = parseGpuBurn(readCapture(MIG_OTHER));
    assert.deepEqual(result.progress, { percent: 8.3, gflops: [15881], errors: [0], temps: [35] });
    assert.deepEqual(result.errors, []);
  });

  it("reads progress separated by \\r exactly as by the rendered newlines", () => {
    for (const name of [K80, READ_LOOP, NEW_FORMAT, K40M]) {
      const text = readCapture(name);
      assert.notEqual(asPrinted(text), text, `${name}: nothing to convert`);
      assert.deepEqual(parseGpuBurn(asPrinted(text)), parseGpuBurn(text), name);
    }
  });

  it("splits stderr glued to an unterminated progress line", () => {
    const text = readCapture(K40M).replace(
      "temps: 93 C - 57 C ",
      'temps: 93 C - 57 C Failure during compute: Error in "Read faultyelemdata": CUDA_ERROR_UNKNOWN',
    );
    const result = parseGpuBurn(text);
    assert.deepEqual(result.errors, [
      'Failure during compute: Error in "Read faultyelemdata": CUDA_ERROR_UNKNOWN',
    ]);
    assert.deepEqual(result.progress?.temps, [93, 57]);
  });

  it("reads `--` temperatures and the power section of recent builds", () => {
    const result = parseGpuBurn(
      "\r10.0%  proc'd: 4 (100 Gflop/s) - 4 (200 Gflop/s)   errors: 0 - 0   temps: -- - 71 C   power: 250 W - -- ",
    );
    assert.deepEqual(result.progress, {
      percent: 10,
      gflops: [100, 200],
      errors: [0, 0],
      temps: [null, 71],
    });
  });

  describe("refuses truncated or garbled records", () => {
    it("a progress line cut in the middle", () => {
      const text = readCapture(K40M);
      const isProgress = (l: string) => l.startsWith("10.4%");
      const corrupt = text.replace(/10\.4%.*/, "10.4%  proc'd: 446 (74 Gflop/s) - 6636 (42");
      assertParseError(() => parseGpuBurn(corrupt), "gpu-burn", lineOf(text, isProgress));
    });

    it("a progress line with one temperature too few", () => {
      const text = readCapture(K40M);
      const corrupt = text.replace("temps: 93 C - 57 C", "temps: 93 C");
      assertParseError(
        () => parseGpuBurn(corrupt),
        "gpu-burn",
        lineOf(text, (l) => l.startsWith("10.4%")),
      );
    });

    it("a summary that ends before every announced GPU", () => {
      const text = readCapture(NEW_FORMAT).replace(/\n\s+GPU 0: OK\s*$/, "\n");
      assertParseError(() => parseGpuBurn(text), "gpu-burn", text.split("\n").length);
    });

    it("a summary line with the wrong ordinal", () => {
      const text = readCapture(NEW_FORMAT);
      const corrupt = text.replace("GPU 0: OK", "GPU 1: OK");
      assertParseError(
        () => parseGpuBurn(corrupt),
        "gpu-burn",
        lineOf(text, (l) => l.trim() === "GPU 0: OK"),
      );
    });
  });

  describe("byte-exact superbench fixture in ../shared (tests exist only where the file is)", () => {
    const superbench = readFetched("gpu-burn_a100x8_doubles_tc_superbench_fixture.txt");
    if (superbench !== undefined) {
      it("raw \\r progress, late child lines after 'Killing processes..', 8 GPUs OK", () => {
        const result = parseGpuBurn(superbench);
        assert.deepEqual(
          result.gpus.map((g) => g.status),
          Array(8).fill("OK"),
        );
        assert.equal(result.progress?.percent, 100);
        assert.equal(result.progress?.gflops[0], 16942);
        assert.deepEqual(result.progress?.temps, [62, 59, 58, 60, 60, 59, 58, 61]);
        assert.equal(result.died, false);
      });

      it("a FAULTY GPU 3 in the same run", () => {
        const result = parseGpuBurn(superbench.replace("GPU 3: OK", "GPU 3: FAULTY"));
        assert.deepEqual(
          result.gpus.filter((g) => g.status === "FAULTY").map((g) => g.index),
          [3],
        );
      });
    }
  });

  it("maps gpu-burn exit statuses", () => {
    assert.equal(gpuBurnExitMeaning(123).kind, "all-clients-died");
    assert.equal(gpuBurnExitMeaning(19).kind, "no-device");
    assert.equal(gpuBurnExitMeaning(124).kind, "child-init-failed");
    assert.equal(gpuBurnExitMeaning(143).meaning, "killed by signal 15 (SIGTERM)");
    assert.equal(gpuBurnExitMeaning(3).kind, "unknown");
  });
});
