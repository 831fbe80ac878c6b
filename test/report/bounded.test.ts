// Report writers never wait without a bound: a child process (allure generate) that does not
// finish is killed after its timeout and the report says so.
import assert from "node:assert/strict";
import { isSlicecheckError } from "../../src/errors.js";
import { runBounded } from "../../src/report/generate.js";

describe("report: bounded child processes", () => {
  it("a tool that does not finish is killed after its timeout, with a REPORT error naming it", () => {
    assert.throws(
      () => runBounded("/bin/sleep", ["30"], 300),
      (e: unknown) => {
        assert.ok(isSlicecheckError(e, "REPORT"), String(e));
        assert.match((e as Error).message, /^sleep 30 did not finish within 0\.3 s and was killed/);
        return true;
      },
    );
  });

  it("a tool that finishes in time passes; one that fails says its exit", () => {
    runBounded("/bin/true", [], 10_000);
    assert.throws(() => runBounded("/bin/false", [], 10_000), /false exited 1/);
  });
});
