// The parse-kind table the CLI uses, the provenance stripper, and what counts as noise.

import assert from "node:assert/strict";
import {
  isNoiseLine,
  isNvsmiParseKind,
  NVSMI_PARSE_KINDS,
  parseLgi,
  stripSourceLines,
} from "../../src/nvsmi/index.js";
import { readCapture } from "./captures.js";

describe("nvsmi parse kinds", () => {
  it("offers exactly the kinds the CLI documents", () => {
    assert.deepEqual(Object.keys(NVSMI_PARSE_KINDS).sort(), [
      "apps",
      "gpus",
      "lci",
      "lcip",
      "lgi",
      "lgip",
      "lgipp",
      "mig-op",
      "nvlink-errors",
      "nvlink-status",
      "query",
      "table",
      "topo",
      "xid",
    ]);
    assert.ok(isNvsmiParseKind("lgi"));
    assert.ok(!isNvsmiParseKind("toString"));
  });

  it("maps each kind to its parser", () => {
    const text = readCapture("nvidia-smi_mig-lgi_A30-24GB_535.183.01_3gi.txt");
    assert.deepEqual(NVSMI_PARSE_KINDS.lgi(text), parseLgi(text));
  });

  it("strips leading source lines only, keeping the rest byte for byte", () => {
    const text = "# source: a\n# source: b\n+---+\n# source: kept\n";
    assert.equal(stripSourceLines(text), "+---+\n# source: kept\n");
    assert.equal(stripSourceLines("All done.\r\n"), "All done.\r\n");
  });

  it("treats prompts, blanks and NCCL lines as noise, and output as output", () => {
    for (const noise of [
      "",
      "   ",
      "$ nvidia-smi -L",
      "root@gpu01:~# nvidia-smi mig -lgi",
      "root@host:~#",
      "[root@node01 ~]# nvidia-smi",
      "(venv) user@host:~/x$ nvidia-smi",
      "node1:4711:4711 [0] NCCL INFO cudaDriverVersion 12040",
      "# source: somewhere",
    ]) {
      assert.ok(isNoiseLine(noise), noise);
    }
    for (const output of [
      "GPU 0: NVIDIA A30 (UUID: GPU-1e44b340-5807-0dbe-62e6-343a6b8b8bcd)",
      "|   0  MIG 1g.6gb          14        3          0:1     |",
      "All done.",
      "[14328.198504] NVRM: Xid (PCI:0000:0a:00): 31, pid=13332, name=x, Ch 00000010",
    ]) {
      assert.ok(!isNoiseLine(output), output);
    }
  });
});
