import assert from "node:assert/strict";
import { isSlicecheckError } from "../../src/errors.js";
import { parseDcgmiDiag } from "../../src/workloads/parsers/dcgmi.js";
import { parseGpuBurn } from "../../src/workloads/parsers/gpu-burn.js";
import { WORKLOAD_PARSE_KINDS } from "../../src/workloads/parsers/kinds.js";
import { parseNcclTests } from "../../src/workloads/parsers/nccl-tests.js";
import { captureNames, readCapture } from "./captures.js";

const PREFIXES: Record<keyof typeof WORKLOAD_PARSE_KINDS, string[]> = {
  "nccl-tests": ["nccl-tests_", "nccl_"],
  "gpu-burn": ["gpu-burn_"],
  dcgmi: ["dcgmi-diag_"],
};

describe("workload parse kinds (slicecheck parse KIND FILE --json)", () => {
  it("offers exactly nccl-tests, gpu-burn and dcgmi, bound to their parsers", () => {
    assert.deepEqual(Object.keys(WORKLOAD_PARSE_KINDS).sort(), ["dcgmi", "gpu-burn", "nccl-tests"]);
    assert.equal(WORKLOAD_PARSE_KINDS["nccl-tests"], parseNcclTests);
    assert.equal(WORKLOAD_PARSE_KINDS["gpu-burn"], parseGpuBurn);
    assert.equal(WORKLOAD_PARSE_KINDS.dcgmi, parseDcgmiDiag);
  });

  for (const [kind, prefixes] of Object.entries(PREFIXES)) {
    const parse = WORKLOAD_PARSE_KINDS[kind as keyof typeof WORKLOAD_PARSE_KINDS];
    it(`${kind}: every capture gives JSON that survives a round trip, or a PARSE error`, () => {
      let parsed = 0;
      for (const name of captureNames(...prefixes)) {
        let result: unknown;
        try {
          result = parse(readCapture(name));
        } catch (err) {
          assert.ok(isSlicecheckError(err, "PARSE"), `${name}: ${String(err)}`);
          continue;
        }
        // NaN, undefined or Infinity would not come back from JSON.stringify unchanged.
        assert.deepEqual(JSON.parse(JSON.stringify(result)), result, name);
        parsed++;
      }
      assert.ok(parsed > 0);
    });
  }
});
