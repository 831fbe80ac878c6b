// `npm run demo` end to end, as a user runs it after setup: the whole upgrade story on the
// simulated cluster must finish, find the planted regression, and leave a report and a PDF.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";

describe("npm run demo (end to end)", function () {
  this.timeout(600_000);

  it("runs every step, finds the planted regression, writes the report and the PDF, and stops the cluster", () => {
    const t0 = Date.now();
    const r = spawnSync(process.execPath, ["scripts/demo.mjs"], {
      encoding: "utf8",
      timeout: 590_000,
    });
    const out = r.stdout + r.stderr;
    assert.equal(r.status, 0, out.slice(-3000));
    assert.match(out, /REGRESSED +A100-80GB 1g\.10gb stress tflops: .* -(1[89]|2[0-2])\.\d%/);
    assert.match(out, /stopped 4 simulated node\(s\)/);
    assert.match(out, /demo finished/);
    const pdf = "reports/allure-report/compliance.pdf";
    assert.ok(existsSync(pdf) && statSync(pdf).mtimeMs >= t0, "the PDF was written by this demo");
    assert.equal(readFileSync(pdf).subarray(0, 5).toString(), "%PDF-");
    assert.ok(existsSync("reports/allure-report/single-file/index.html"));
  });
});
