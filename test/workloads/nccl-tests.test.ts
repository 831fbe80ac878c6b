import assert from "node:assert/strict";
import { ncclTestsExitMeaning } from "../../src/workloads/parsers/exit-codes.js";
import { parseNcclTests } from "../../src/workloads/parsers/nccl-tests.js";
import {
  assertParseError,
  captureNames,
  fetchedNames,
  lineOf,
  readCapture,
  readFetched,
  replaceLine,
} from "./captures.js";

const RTX5090 = "nccl-tests_all_reduce_perf_rtx5090_1gpu_busbw-zero.txt";
const H100X16 = "nccl-tests_all_reduce_perf_h100x16_2node-mpi_header.txt";
const L40S = "nccl-tests_all_reduce_perf_l40sx8_ncu_domain-bus-dev-field_header.txt";
const CUDA_FAILURE =
  "nccl-tests_all_reduce_perf_h100x8_cuda-failure_system-not-yet-initialized.txt";
const NON_MPI = "nccl-tests_all_reduce_perf_v100_non-mpi-binary-under-mpirun_duplicated-header.txt";
const LEGACY = "nccl-tests_legacy-format_2gpu_no-op-column_likely-all_gather_error-0e+00.txt";
const DUPLICATE_GPU = "nccl_duplicate-gpu-detected_pytorch-invalid-usage.txt";

describe("nccl-tests parser", () => {
  describe("every nccl capture", () => {
    const names = captureNames("nccl-tests_", "nccl_");

    it("finds the nccl captures", () => {
      assert.ok(names.length >= 7, `only ${names.length} nccl captures found`);
    });

    for (const name of names) {
      it(`parses ${name} into at least one record`, () => {
        const result = parseNcclTests(readCapture(name));
        const records = result.ranks.length + result.rows.length + result.failures.length;
        assert.ok(records > 0, "nothing recognised in a real capture");
        for (const row of result.rows) {
          assert.ok(Number.isInteger(row.size) && Number.isInteger(row.count));
          assert.ok(row.outOfPlace.timeUs >= 0 && row.inPlace.timeUs >= 0);
        }
      });
    }
  });

  it("reads the v2.13+ table of a single GPU, where busbw is 0", () => {
    const result = parseNcclTests(readCapture(RTX5090));
    assert.deepEqual(result.ranks, [
      {
        rank: 0,
        group: 0,
        pid: 5092,
        host: "GENOA-06",
        device: 0,
        busId: "0x21",
        name: "NVIDIA GeForce RTX 5090",
      },
    ]);
    assert.deepEqual(
      result.rows.map((r) => r.size),
      [8, 16, 32, 64],
    );
    assert.deepEqual(
      result.rows.map((r) => r.inPlace.algbw),
      [0.04, 0.08, 0.17, 0.44],
    );
    assert.deepEqual(
      result.rows.map((r) => r.outOfPlace.timeUs),
      [5.63, 5.6, 5.3, 5.37],
    );
    for (const row of result.rows) {
      assert.equal(row.outOfPlace.busbw, 0);
      assert.equal(row.inPlace.busbw, 0);
      assert.equal(row.outOfPlace.wrong, 0);
      assert.equal(row.redop, "sum");
      assert.equal(row.root, -1);
      assert.equal(row.type, "float");
    }
    // The stored excerpt ends after the last complete row: no footer, which is not a truncated record.
    assert.equal(result.outOfBounds, null);
    assert.equal(result.avgBusBandwidth, null);
    assert.deepEqual(result.failures, []);
  });

  it("reads 12 ranks over two hosts with bus-only device ids", () => {
    const { ranks } = parseNcclTests(readCapture(H100X16));
    assert.equal(ranks.length, 12);
    assert.deepEqual(
      ranks.map((r) => r.rank),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
    );
    assert.deepEqual(
      ranks.slice(0, 8).map((r) => r.busId),
      ["0x8d", "0x91", "0x95", "0x99", "0xab", "0xaf", "0xb3", "0xb7"],
    );
    assert.deepEqual(
      ranks.map((r) => r.host),
      [...Array(8).fill("worker-1"), ...Array(4).fill("worker-0")],
    );
    assert.equal(ranks[8]?.pid, 1885);
    assert.equal(ranks[11]?.name, "NVIDIA H100 80GB HBM3");
  });

  it("reads the [domain:bus:dev] device field and skips NCCL INFO and profiler lines", () => {
    const result = parseNcclTests(readCapture(L40S));
    assert.deepEqual(
      result.ranks.map((r) => r.busId),
      [
        "0000:2d:00",
        "0000:3a:00",
        "0000:3b:00",
        "0000:3c:00",
        "0000:ad:00",
        "0000:ae:00",
        "0000:bd:00",
        "0000:be:00",
      ],
    );
    assert.ok(
      result.ranks.every((r) => r.pid === 254671 && r.name === "NVIDIA L40S" && r.group === 0),
    );
    assert.deepEqual(result.rows, []);
    assert.deepEqual(result.failures, []);
  });

  it("reports a CUDA failure with host, file and line, once per host", () => {
    const result = parseNcclTests(readCapture(CUDA_FAILURE));
    assert.deepEqual(result.failures, [
      {
        host: "test",
        kind: "cuda",
        message: "system not yet initialized",
        file: "common.cu",
        line: 941,
      },
    ]);
    assert.deepEqual(result.ranks, []);
  });

  it("flags a non-MPI binary under mpirun: duplicated headers, every rank 0", () => {
    const result = parseNcclTests(readCapture(NON_MPI));
    assert.deepEqual(
      result.ranks.map((r) => [r.rank, r.group, r.host]),
      [
        [0, null, "ip-172-31-20-228"],
        [0, null, "ip-172-31-22-230"],
      ],
    );
    assert.equal(result.failures.length, 1);
    assert.equal(result.failures[0]?.kind, "duplicate-header");
    assert.match(result.failures[0]?.message ?? "", /2 independent 1-rank runs/);
  });

  it("reads a legacy headerless table without redop/root and its footer", () => {
    const result = parseNcclTests(readCapture(LEGACY));
    assert.equal(result.rows.length, 12);
    assert.equal(result.rows[0]?.size, 65536);
    assert.equal(result.rows[11]?.size, 134217728);
    assert.deepEqual(result.rows[11], {
      size: 134217728,
      count: 16777216,
      type: "float",
      redop: null,
      root: null,
      outOfPlace: { timeUs: 3298.6, algbw: 20.34, busbw: 20.34, wrong: 0 },
      inPlace: { timeUs: 3070.3, algbw: 21.86, busbw: 21.86, wrong: 0 },
    });
    assert.equal(result.outOfBounds, 0);
    assert.equal(result.avgBusBandwidth, 6.6972);
    // The broadcast header after the footer is a new run, not a duplicated one.
    assert.deepEqual(result.failures, []);
  });

  it("reports NCCL's 'Duplicate GPU detected' (two ranks on one GPU, e.g. two MIG slices)", () => {
    const result = parseNcclTests(readCapture(DUPLICATE_GPU));
    assert.deepEqual(
      result.failures.map((f) => [f.kind, f.message]),
      [
        ["duplicate-gpu", "Duplicate GPU detected : rank 3 and rank 0 both on CUDA device f000"],
        ["duplicate-gpu", "Duplicate GPU detected : rank 7 and rank 0 both on CUDA device f000"],
      ],
    );
  });

  it("counts wrong elements and reads FAILED footers (corruption, NCCL_TESTS_MIN_BW)", () => {
    let text = readCapture(LEGACY);
    text = text.replace(
      "    16777216       2097152   float    418.5   20.05   20.05  0e+00",
      "    16777216       2097152   float    418.5   20.05   20.05      3",
    );
    text = text.replace("# Out of bounds values : 0 OK", "# Out of bounds values : 3 FAILED");
    text = text.replace(
      "# Avg bus bandwidth    : 6.6972 ",
      "# Avg bus bandwidth    : 6.6972 FAILED",
    );
    const result = parseNcclTests(text);
    assert.equal(result.rows.find((r) => r.size === 16777216)?.outOfPlace.wrong, 3);
    assert.equal(result.outOfBounds, 3);
    assert.equal(result.avgBusBandwidth, 6.6972);
    assert.deepEqual(
      result.failures.map((f) => f.kind),
      ["min-bandwidth"],
    );
  });

  it("reads lines tagged by mpirun --tag-output like untagged ones", () => {
    const text = readCapture(RTX5090);
    const tagged = text
      .split("\n")
      .map((l) => `[1,0]<stdout>:${l}`)
      .join("\n");
    assert.deepEqual(parseNcclTests(tagged), parseNcclTests(text));
  });

  it("skips an NCCL INFO line inside the table even when the hostname starts with a digit", () => {
    const text = readCapture(RTX5090);
    const noisy = text.replace(
      "          16             4",
      "10-0-0-7:5092:5092 [0] NCCL INFO Launch mode Parallel\n          16             4",
    );
    assert.deepEqual(parseNcclTests(noisy).rows, parseNcclTests(text).rows);
  });

  describe("refuses truncated or garbled records", () => {
    const text = readCapture(RTX5090);
    const isRow32 = (l: string) => l.startsWith("          32             8");

    it("a row with a missing column", () => {
      const row = text.split("\n")[lineOf(text, isRow32) - 1] ?? "";
      const corrupt = replaceLine(text, isRow32, row.replace(/\s+0$/, ""));
      assertParseError(() => parseNcclTests(corrupt), "nccl-tests", lineOf(text, isRow32));
    });

    it("a row cut in the middle", () => {
      const corrupt = replaceLine(
        text,
        isRow32,
        "          32             8     float     sum      -1     5.30",
      );
      assertParseError(() => parseNcclTests(corrupt), "nccl-tests", lineOf(text, isRow32));
    });

    it("two rows run together (a lost newline)", () => {
      const corrupt = text.replace(/(\n {10}32 [^\n]*)\n/, "$1");
      assertParseError(() => parseNcclTests(corrupt), "nccl-tests", lineOf(text, isRow32));
    });

    it("a garbled number", () => {
      const corrupt = text.replace("5.30    0.01", "5.3x    0.01");
      assertParseError(() => parseNcclTests(corrupt), "nccl-tests", lineOf(text, isRow32));
    });

    it("a row of only its first cell inside the table", () => {
      const corrupt = `${text.trimEnd()}\n         128`;
      assertParseError(
        () => parseNcclTests(corrupt),
        "nccl-tests",
        text.trimEnd().split("\n").length + 1,
      );
    });

    it("a device line cut short", () => {
      const h100 = readCapture(H100X16);
      const isRank3 = (l: string) => l.startsWith("#  Rank  3 ");
      const corrupt = replaceLine(
        h100,
        isRank3,
        "#  Rank  3 Group  0 Pid   1890 on   worker-1 dev",
      );
      assertParseError(() => parseNcclTests(corrupt), "nccl-tests", lineOf(h100, isRank3));
    });

    it("a failure line cut before its closing quote", () => {
      const failure = readCapture(CUDA_FAILURE);
      const isFailure = (l: string) => l.includes("Test CUDA failure");
      const corrupt = replaceLine(
        failure,
        isFailure,
        "test: Test CUDA failure common.cu:941 'system not ye",
      );
      assertParseError(() => parseNcclTests(corrupt), "nccl-tests", lineOf(failure, isFailure));
    });

    it("a column header cut short", () => {
      const isHeader = (l: string) => l.startsWith("#       size");
      const corrupt = replaceLine(
        text,
        isHeader,
        "#       size         count      type   redop    root     time   algbw",
      );
      assertParseError(() => parseNcclTests(corrupt), "nccl-tests", lineOf(text, isHeader));
    });

    it("a footer without its value", () => {
      const legacy = readCapture(LEGACY);
      const isAvg = (l: string) => l.startsWith("# Avg bus bandwidth");
      const corrupt = replaceLine(legacy, isAvg, "# Avg bus bandwidth    : ");
      assertParseError(() => parseNcclTests(corrupt), "nccl-tests", lineOf(legacy, isAvg));
    });
  });

  describe("byte-exact superbench fixtures in ../shared (tests exist only where the files do)", () => {
    const allReduce = readFetched("nccl-tests_all_reduce_perf_a100-40gb_x8_old-format_nocheck.txt");
    if (allReduce !== undefined) {
      it("all_reduce, v2.0 era: redop but no root, N/A validation, NCCL INFO inside the table", () => {
        const result = parseNcclTests(allReduce);
        assert.equal(result.ranks.length, 8);
        assert.ok(result.ranks.every((r) => r.group === null && r.host === "localhost"));
        assert.ok(result.rows.every((r) => r.redop === "sum" && r.root === null));
        assert.ok(
          result.rows.every((r) => r.outOfPlace.wrong === null && r.inPlace.wrong === null),
        );
        assert.deepEqual(result.rows.at(-1)?.outOfPlace, {
          timeUs: 63896,
          algbw: 134.44,
          busbw: 235.26,
          wrong: null,
        });
        assert.equal(result.outOfBounds, 0);
        assert.equal(result.avgBusBandwidth, 68.4048);
      });
    }
    const broadcast = readFetched("nccl-tests_broadcast_perf_a100-40gb_x8_old-format_nocheck.txt");
    if (broadcast !== undefined) {
      it("broadcast, v2.0 era: root but no redop", () => {
        const result = parseNcclTests(broadcast);
        assert.ok(result.rows.length > 30);
        assert.ok(result.rows.every((r) => r.redop === null && r.root === 0));
        assert.equal(result.avgBusBandwidth, 64.8653);
      });
    }
    for (const name of fetchedNames("nccl-tests_")) {
      it(`parses ${name} with a footer`, () => {
        const result = parseNcclTests(readFetched(name) ?? "");
        assert.ok(result.rows.length > 0 && result.avgBusBandwidth !== null);
      });
    }
  });

  it("maps nccl-tests exit statuses", () => {
    assert.equal(ncclTestsExitMeaning(0).kind, "ok");
    assert.equal(ncclTestsExitMeaning(2).kind, "cuda-error");
    assert.equal(ncclTestsExitMeaning(3).kind, "nccl-error");
    assert.equal(ncclTestsExitMeaning(4).kind, "timeout");
    assert.equal(ncclTestsExitMeaning(5).kind, "not-implemented");
    assert.equal(ncclTestsExitMeaning(7).kind, "check-failed");
    assert.equal(ncclTestsExitMeaning(124).kind, "deadline");
    assert.deepEqual(ncclTestsExitMeaning(137), {
      code: 137,
      kind: "signal",
      meaning: "killed by signal 9 (SIGKILL)",
    });
    assert.equal(ncclTestsExitMeaning(42).kind, "unknown");
  });
});
