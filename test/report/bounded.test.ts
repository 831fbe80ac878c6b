// Report writers never wait without a bound: a child process (allure generate) that does not
// finish is killed after its timeout and the report says so.
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isSlicecheckError } from "../../src/errors.js";
import { printPdf } from "../../src/report/browser.js";
import { runBounded } from "../../src/report/generate.js";
import { tempDir } from "../helpers/tmp.js";

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

  it("Chromium printing past its bound is a REPORT error, the browser closed, no PDF claimed", async function () {
    this.timeout(60_000);
    const dir = tempDir("pdf");
    const html = join(dir, "page.html");
    // A page whose load never ends (a script that spins), as a wedged renderer would.
    writeFileSync(html, "<html><body>x<script>for(;;){}</script></body></html>");
    const pdf = join(dir, "page.pdf");
    await assert.rejects(printPdf(html, pdf, "", 2000), (e: unknown) => {
      assert.ok(isSlicecheckError(e, "REPORT"), String(e));
      assert.match((e as Error).message, /Chromium did not print .*page\.pdf within 2 s/);
      return true;
    });
    assert.equal(existsSync(pdf), false);
  });
});
