// `npm run demo` end to end, as a user runs it after setup: the whole upgrade story on the
// simulated cluster must finish, find the planted regression, and leave a report and a PDF
// whose compliance page tells the isolation story: an OOM and a crash in one instance of each
// H100 with the neighbours measured (sim03 clean), and sim04's planted violation caught.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";

describe("npm run demo (end to end)", function () {
  this.timeout(900_000);

  it("runs every step, finds the planted regression, writes the report and the PDF, and stops the cluster", () => {
    const t0 = Date.now();
    const r = spawnSync(process.execPath, ["scripts/demo.mjs"], {
      encoding: "utf8",
      timeout: 890_000,
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
    const html = readFileSync("reports/allure-report/compliance.html", "utf8");
    assert.match(html, /id="verdict">NOT COMPLIANT</);
    const cells = (gpu: string) => {
      const from = html.indexOf(`id="${gpu}"`);
      const part = html.slice(from, html.indexOf("</div>", from));
      return [...part.matchAll(/<rect class="cell" data-fault="(\w+)"[^>]*data-status="(\w+)"/g)];
    };
    // sim03: both faults, every neighbour measured and unaffected.
    const clean = cells("gpu-sim03-0");
    assert.deepEqual([...new Set(clean.map((m) => m[1]))].sort(), ["crash", "oom"]);
    assert.ok(clean.length >= 6 && clean.every((m) => m[2] === "passed"), String(clean.length));
    // sim04: the planted violation is caught, in the matrix and in the requirements.
    assert.ok(cells("gpu-sim04-0").some((m) => m[2] === "failed"));
    assert.match(html, /data-key="isolation:oom"><td>[^<]*<\/td><td class="res">FAIL/);
  });
});
