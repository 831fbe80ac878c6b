import assert from "node:assert/strict";
import { parseDcgmiDiag } from "../../src/workloads/parsers/dcgmi.js";
import { assertParseError, captureNames, lineOf, readCapture } from "./captures.js";

const DCGM304 = "dcgmi-diag_dcgm3.0.4_r3_most-tests-skipped_excerpt.txt";
const DCGM423 = "dcgmi-diag_devid26b9x4_dcgm4.2.3_per-gpu-results_excerpt.txt";
const GB10_JSON = "dcgmi-diag_gb10_dcgm4.2.3_r1_json_software-fail_exit226.txt";
const RTX2060 = "dcgmi-diag_rtx2060s_r4_dcgm3.x_persistence-fail_memtest-pass.txt";
const T4 = "dcgmi-diag_t4-devid1eb8_dcgm3.3.1_r2_remote-host_excerpt.txt";

/** The three excerpts were cut by their collector in the middle of a table row. */
const TRUNCATED: Record<string, number> = { [DCGM304]: 18, [DCGM423]: 18, [T4]: 18 };

const FOOTER = "+---------------------------+------------------------------------------------+";

/** A row as dcgmi's DIAG_DATA stencil prints it: name in 25 columns, info in 46. */
function row(name: string, info: string): string {
  return `| ${name.padEnd(25)} | ${info.padEnd(46)} |`;
}

/** The excerpt without its cut last line, closed as dcgmi closes every table. */
function closed(name: string): string {
  const lines = readCapture(name).split("\n");
  return [...lines.slice(0, -1), FOOTER].join("\n");
}

describe("dcgmi diag parser", () => {
  describe("every dcgmi capture", () => {
    const names = captureNames("dcgmi-diag_");

    it("finds the dcgmi captures", () => {
      assert.ok(names.length >= 5, `only ${names.length} dcgmi captures found`);
    });

    for (const name of names) {
      const line = TRUNCATED[name];
      if (line !== undefined) {
        it(`refuses ${name}, cut inside a row, at line ${line}`, () => {
          assertParseError(() => parseDcgmiDiag(readCapture(name)), "dcgmi", line);
        });
      } else {
        it(`parses ${name} into tests with results`, () => {
          const diag = parseDcgmiDiag(readCapture(name));
          assert.ok(diag.tests.length > 0);
          assert.ok(diag.tests.every((t) => t.category !== "" && t.name !== ""));
        });
      }
    }
  });

  it("DCGM 3 table: a Fail with its wrapped Error text, and `- All` results", () => {
    const diag = parseDcgmiDiag(readCapture(RTX2060));
    assert.equal(diag.version, null);
    assert.equal(diag.driver, null);
    assert.equal(diag.error, null);
    assert.equal(diag.tests.length, 16);
    assert.deepEqual(diag.tests[4], {
      category: "Deployment",
      name: "Persistence Mode",
      result: "Fail",
      gpus: [],
      info: [
        "Persistence mode for GPU 0 is currently disabled. The DCGM diagnostic requires peristence mode " +
          'to be enabled. Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " as root.',
      ],
    });
    assert.deepEqual(
      diag.tests
        .filter((t) => t.category !== "Deployment")
        .map((t) => [t.category, t.name, t.result, t.gpus]),
      [
        ["Integration", "PCIe", "Skip", "all"],
        ["Hardware", "GPU Memory", "Skip", "all"],
        ["Hardware", "Pulse Test", "Skip", "all"],
        ["Stress", "Targeted Stress", "Skip", "all"],
        ["Stress", "Targeted Power", "Skip", "all"],
        ["Stress", "Memory Bandwidth", "Skip", "all"],
        ["Stress", "Memtest", "Pass", "all"],
      ],
    );
    assert.equal(diag.tests.filter((t) => t.result === "Fail").length, 1);
  });

  it("DCGM 4 JSON: version, driver, per-GPU status and the warning texts", () => {
    const diag = parseDcgmiDiag(readCapture(GB10_JSON));
    assert.equal(diag.version, "4.2.3");
    assert.equal(diag.driver, "580.82.09");
    assert.equal(diag.error, null);
    assert.equal(diag.tests.length, 1);
    const [software] = diag.tests;
    assert.equal(software?.category, "Deployment");
    assert.equal(software?.name, "software");
    assert.equal(software?.result, "Fail");
    assert.deepEqual(software?.gpus, [{ id: 0, result: "Fail" }]);
    assert.ok(
      software?.info.some((i) =>
        i.startsWith("Persistence Mode: Persistence mode for GPU 0 is disabled."),
      ),
    );
    assert.ok(
      software?.info.some((i) => i.startsWith("Error getting the SRAM Threshold Count for GPU 0.")),
    );
  });

  it("the cut excerpts read up to their cut once the table is closed", () => {
    const t4 = parseDcgmiDiag(closed(T4));
    assert.equal(t4.version, "3.3.1");
    assert.equal(t4.driver, "535.129.03");
    assert.deepEqual(
      t4.tests.map((t) => [t.name, t.result]),
      [
        ["Denylist", "Pass"],
        ["NVML Library", "Pass"],
        ["CUDA Main Library", "Pass"],
        ["Permissions and OS Blocks", "Pass"],
        ["Persistence Mode", "Pass"],
        ["Environment Variables", "Pass"],
      ],
    );
    const dcgm4 = parseDcgmiDiag(closed(DCGM423));
    assert.equal(dcgm4.version, "4.2.3");
    assert.equal(dcgm4.driver, "570.148.08");
    assert.deepEqual(dcgm4.tests, [
      {
        category: "Deployment",
        name: "software",
        result: "Pass",
        gpus: [0, 1, 2, 3].map((id) => ({ id, result: "Pass" })),
        info: [],
      },
    ]);
    const dcgm304 = parseDcgmiDiag(closed(DCGM304));
    assert.equal(dcgm304.version, null);
    assert.equal(dcgm304.tests.length, 9);
    assert.ok(dcgm304.tests.every((t) => t.category === "Deployment" && t.result === "Pass"));
  });

  it("DCGM 4 per-GPU failure with a wrapped `Warning: GPU1` message", () => {
    const message =
      "Error using the memory test: the allocated memory did not match the pattern written at offset 0x1000";
    const lines = closed(DCGM423).split("\n");
    const at = lines.findIndex((l) => l.includes("GPU1: Pass"));
    lines.splice(
      at,
      1,
      row("", "GPU1: Fail"),
      row("Warning: GPU1", message.slice(0, 45)),
      row("", message.slice(45, 90)),
      row("", message.slice(90)),
    );
    lines[lines.findIndex((l) => l.startsWith("| software"))] = row("software", "Fail");
    const [software] = parseDcgmiDiag(lines.join("\n")).tests;
    assert.equal(software?.result, "Fail");
    assert.deepEqual(software?.gpus, [
      { id: 0, result: "Pass" },
      { id: 1, result: "Fail" },
      { id: 2, result: "Pass" },
      { id: 3, result: "Pass" },
    ]);
    assert.deepEqual(software?.info, [message]);
  });

  it("DCGM 3 mixed per-GPU results: `Pass - GPUs: 0, 1` then `Fail - GPU: 2`, worst wins", () => {
    const text = readCapture(RTX2060).replace(
      row("PCIe", "Skip - All"),
      [
        row("PCIe", "Pass - GPUs: 0, 1   "),
        row("", "Fail - GPU: 2   "),
        row("Warning", "GPU 2 PCIe link is x8"),
      ].join("\n"),
    );
    const pcie = parseDcgmiDiag(text).tests.find((t) => t.name === "PCIe");
    assert.deepEqual(pcie, {
      category: "Integration",
      name: "PCIe",
      result: "Fail",
      gpus: [
        { id: 0, result: "Pass" },
        { id: 1, result: "Pass" },
        { id: 2, result: "Fail" },
      ],
      info: ["GPU 2 PCIe link is x8"],
    });
  });

  it("dcgmi's own failure instead of a table, with DCGM's system error below it", () => {
    const diag = parseDcgmiDiag(
      [
        "$ dcgmi diag -r 1",
        "Error: Unable to complete diagnostic for group 0. Return: (-30) : The NVVS reported an error",
        "GPU 0's MIG configuration is incompatible with the diagnostic because it prevents access to the entire GPU.",
        "",
      ].join("\n"),
    );
    assert.equal(diag.tests.length, 0);
    assert.match(
      diag.error ?? "",
      /^Unable to complete diagnostic.*\nGPU 0's MIG configuration is incompatible/s,
    );
  });

  it("a JSON runtime_error document", () => {
    const diag = parseDcgmiDiag(
      '{\n  "DCGM Diagnostic": { "runtime_error": "Error: MIG is enabled", "version": "4.2.3" }\n}\n',
    );
    assert.equal(diag.error, "Error: MIG is enabled");
    assert.equal(diag.version, "4.2.3");
    assert.deepEqual(diag.tests, []);
  });

  describe("refuses truncated or garbled records", () => {
    it("a row without its closing border", () => {
      const text = readCapture(RTX2060);
      const isPcie = (l: string) => l.startsWith("| PCIe");
      const corrupt = text.replace(
        row("PCIe", "Skip - All"),
        "| PCIe                      | Skip - A",
      );
      assertParseError(() => parseDcgmiDiag(corrupt), "dcgmi", lineOf(text, isPcie));
    });

    it("a result cell that is no result", () => {
      const text = readCapture(RTX2060);
      const isPcie = (l: string) => l.startsWith("| PCIe");
      const corrupt = text.replace(row("PCIe", "Skip - All"), row("PCIe", "Sk"));
      assertParseError(() => parseDcgmiDiag(corrupt), "dcgmi", lineOf(text, isPcie));
    });

    it("a table without its closing border", () => {
      const text = readCapture(RTX2060).replace(/\n\+-+\+-+\+\s*$/, "\n");
      assertParseError(() => parseDcgmiDiag(text), "dcgmi", text.split("\n").length);
    });

    it("a JSON document cut short", () => {
      const text = readCapture(GB10_JSON);
      const cut = text.split("\n").slice(0, 30).join("\n");
      assertParseError(() => parseDcgmiDiag(cut), "dcgmi", 30);
    });

    it("output that holds neither a table, JSON nor an error", () => {
      assertParseError(
        () => parseDcgmiDiag("$ dcgmi diag -r 1\nbash: dcgmi: command not found\n"),
        "dcgmi",
        1,
      );
    });
  });
});
