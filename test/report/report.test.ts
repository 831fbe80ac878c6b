// Allure results, JUnit, `slicecheck report` and the compliance PDF end to end: a real run on
// simulated nodes with a passing node, a node whose isolation is broken (failed) and a node
// that is down (broken), then the generated reports opened in Debian's Chromium.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Browser, Locator } from "playwright-core";
import { CHROMIUM, launchChromium } from "../../src/report/browser.js";
import { type RunContext, readRunContext } from "../../src/report/context.js";
import { cli } from "../helpers/cli.js";
import { startCluster, type TestCluster } from "../helpers/cluster.js";

interface AllureResult {
  name: string;
  fullName: string;
  start: number;
  stop: number;
  status: string;
  labels: { name: string; value: string }[];
  parameters: { name: string; value: string }[];
  statusDetails?: { message?: string };
  steps: {
    name: string;
    status?: string;
    attachments: { name: string; source: string; type: string }[];
  }[];
  attachments: { name: string; source: string }[];
}

// What the page shows (innerText: rendered text, no scripts); a Playwright call, not the DOM's.
// biome-ignore lint/performance/useDomNodeTextContent: a Playwright locator, not a DOM node
const shown = (l: Locator) => l.innerText();
const label = (r: AllureResult, name: string) => r.labels.find((l) => l.name === name)?.value;
const attachmentNames = (r: AllureResult) => [
  ...r.attachments.map((a) => a.name),
  ...r.steps.flatMap((s) => s.attachments.map((a) => a.name)),
];

describe("allure results, junit, report and compliance PDF (real sshd, Chromium)", function () {
  const stressOf = (node: string) =>
    results.find(
      (r) => r.fullName.includes(`stress > ${node} > `) && label(r, "feature") === "Stress",
    );
  this.timeout(180_000);
  let c: TestCluster;
  let out: string;
  let reportDir: string;
  let results: AllureResult[];
  let ctx: RunContext;
  let reportOut: string;
  let runCode: number;

  before(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(
        `no Chromium at ${CHROMIUM}: run \`npm test\` (its set-up step, scripts/setup.mjs, installs Debian's chromium)`,
      );
    c = await startCluster([
      { gpu: "H100-80GB", driver: "580.173.02" },
      { gpu: "H100-80GB", driver: "580.173.02" },
      { gpu: "H100-80GB", driver: "580.173.02" },
    ]);
    const inv = c.inventoryPath;
    const applied = await cli(
      "apply",
      "-i",
      inv,
      "--nodes",
      "sim01,sim02",
      "fixtures/layouts/default.yaml",
      "-c",
      "all-balanced",
      "--journal-dir",
      join(c.dir, "journal"),
    );
    assert.equal(applied.code, 0, applied.stderr);
    const planted = await cli("sim", "fault", "sim02", "isolation-broken", "--inventory", inv);
    assert.equal(planted.code, 0, planted.stderr);
    // sim03 goes down: its sshd is stopped, so the run cannot reach it.
    const st = JSON.parse((await cli("sim", "status", "--inventory", inv, "--json")).stdout) as {
      nodes: { name: string; pid: number }[];
    };
    process.kill(st.nodes.find((n) => n.name === "sim03")!.pid, "SIGTERM");
    await new Promise((r) => setTimeout(r, 300));
    out = join(c.dir, "run");
    const r = await cli(
      "run",
      "-i",
      inv,
      "--suites",
      "stress,isolation",
      "--faults",
      "oom",
      "--aggressors",
      "1",
      "--duration",
      "1",
      "--out",
      out,
      "--db",
      join(c.dir, "records.db"),
    );
    runCode = r.code;
    const dir = join(out, "allure-results");
    results = readdirSync(dir)
      .filter((f) => f.endsWith("-result.json"))
      .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as AllureResult);
    ctx = readRunContext(out);
    reportDir = join(c.dir, "reports", "allure-report");
    const rep = await cli("report", "--results", dir, "--out", reportDir, "--single-file", "--pdf");
    assert.equal(rep.code, 0, rep.stderr);
    reportOut = rep.stdout;
  });
  after(async () => {
    await c?.stop();
  });

  it("the run fails (a check failed) and writes one Allure result per check", () => {
    assert.equal(runCode, 1, "an isolation violation is a failed check");
    assert.equal(results.length, ctx.allChecks?.length, "every check of the run is an Allure test");
    for (const f of ["categories.json", "environment.properties", "executor.json"])
      assert.ok(existsSync(join(out, "allure-results", f)), f);
    const cats = JSON.parse(readFileSync(join(out, "allure-results", "categories.json"), "utf8"));
    assert.deepEqual(
      cats.map((x: { name: string }) => x.name),
      [
        "Isolation violation",
        "Driver regression",
        "Layout drift",
        "GPU health",
        "Node unreachable",
        "Refused by an interlock",
        "Harness error",
      ],
    );
    const env = readFileSync(join(out, "allure-results", "environment.properties"), "utf8");
    assert.match(env, /sim01\.driver\s*=\s*580\.173\.02/);
    const ex = JSON.parse(readFileSync(join(out, "allure-results", "executor.json"), "utf8"));
    assert.ok(ex.name && ex.type && ex.buildName, JSON.stringify(ex));
  });

  it("a passing stress test: labels, parameters and the instance's log attached", () => {
    const t = stressOf("sim01");
    assert.ok(t, results.map((r) => r.fullName).join("\n"));
    assert.equal(t.status, "passed");
    assert.equal(label(t, "parentSuite"), "sim01");
    assert.match(label(t, "suite") ?? "", /^GPU 0 \(NVIDIA H100/);
    // The instance by profile and placement: GI ids change when a layout is re-created.
    assert.match(label(t, "subSuite") ?? "", /^\dg\.\d+gb at \d:\d$/);
    assert.ok(
      t.stop - t.start >= 1000,
      `the Allure duration covers the 1 s workload: ${t.stop - t.start} ms`,
    );
    assert.equal(label(t, "epic"), "MIG partition validation");
    assert.equal(label(t, "feature"), "Stress");
    const params = Object.fromEntries(t.parameters.map((p) => [p.name, p.value]));
    assert.equal(params.driver, "580.173.02");
    assert.ok(params.CUDA && params.layout && params["instance UUID"]?.startsWith("MIG-"));
    assert.ok(attachmentNames(t).includes("workload log"), JSON.stringify(t.steps));
  });

  it("a failed isolation verdict: critical, an isolation violation, evidence attached", () => {
    // The first failed verdict (the GPU's "tenants verified isolated" roll-up fails with it).
    const t = results.find(
      (r) =>
        label(r, "parentSuite") === "sim02" &&
        r.status === "failed" &&
        r.name !== "tenants verified isolated",
    );
    assert.ok(t, results.map((r) => `${r.fullName}: ${r.status}`).join("\n"));
    assert.match(t.name, /^oom: \w+$/);
    assert.match(
      t.fullName,
      /isolation > sim02 > GPU 0 .* > aggressor \dg\.\d+gb at \d:\d > oom: /,
    );
    assert.equal(label(t, "severity"), "critical");
    assert.equal(label(t, "epic"), "Tenant isolation");
    assert.match(t.statusDetails?.message ?? "", /^\[ISOLATION_VIOLATION\] /);
    assert.ok(attachmentNames(t).includes("evidence.json"));
  });

  it("a failed isolation check's Allure steps carry their own statuses: the failing step fails", () => {
    const failed = results.filter(
      (r) =>
        label(r, "parentSuite") === "sim02" &&
        r.status === "failed" &&
        r.name !== "tenants verified isolated",
    );
    assert.ok(failed.length > 0);
    for (const t of failed)
      assert.ok(
        t.steps.some((s) => s.status === "failed"),
        `${t.name}: ${t.steps.map((s) => `${s.name} ${s.status}`).join(", ")}`,
      );
    // isolation-broken reaches the victims: the step that shows it is the victims' load.
    const v = results.find(
      (r) => label(r, "parentSuite") === "sim02" && r.name === "oom: victimsUnaffected",
    );
    assert.equal(v?.status, "failed");
    assert.equal(v?.steps.find((s) => s.name === "victims under load")?.status, "failed");
    // Where nothing failed, no step is shown failed.
    const ok = results.find(
      (r) => label(r, "parentSuite") === "sim01" && r.name === "oom: victimsUnaffected",
    );
    assert.equal(ok?.status, "passed");
    assert.ok(ok?.steps.length, "the passed check has its steps");
    // (allure-js keeps each attachment as a step of its own, without a status: not a phase.)
    const phases = ok.steps.filter((s) => s.status !== undefined);
    assert.ok(phases.some((s) => s.name === "victims under load"));
    assert.deepEqual(
      phases.filter((s) => s.status !== "passed").map((s) => `${s.name}: ${s.status}`),
      [],
    );
  });

  it("a broken check: the unreachable node is broken, not failed", () => {
    const t = results.find((r) => r.name === "the node can be checked");
    assert.ok(t, results.map((r) => r.fullName).join("\n"));
    assert.equal(label(t, "parentSuite"), "sim03");
    assert.equal(t.status, "broken");
    assert.match(t.statusDetails?.message ?? "", /^\[CONNECT\] /);
    assert.ok(!results.some((r) => r.name.includes("sim03") && r.status === "failed"));
  });

  it("junit.xml and results-summary.json count the same checks", () => {
    const xml = readFileSync(join(out, "junit.xml"), "utf8");
    const failed = results.filter((r) => r.status === "failed").length;
    const broken = results.filter((r) => r.status === "broken").length;
    assert.match(
      xml,
      new RegExp(
        `<testsuites [^>]*tests="${results.length}" failures="${failed}" errors="${broken}"`,
      ),
    );
    assert.equal((xml.match(/<testcase /g) ?? []).length, results.length);
    const s = JSON.parse(readFileSync(join(out, "results-summary.json"), "utf8"));
    assert.deepEqual(s.counts, {
      passed: results.length - failed - broken,
      failed,
      broken,
      skipped: 0,
    });
  });

  describe("in Chromium", () => {
    let browser: Browser;
    before(async () => {
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
    });

    it("the single-file Allure report shows the run's test count and the node's test titles", async () => {
      const page = await browser.newPage();
      const index = join(reportDir, "single-file", "index.html");
      await page.goto(pathToFileURL(index).href, { waitUntil: "load" });
      await page.waitForSelector(".widget__title", { timeout: 30_000 });
      const overview = await shown(page.locator("body"));
      assert.match(overview, new RegExp(`\\b${results.length}\\s+test cases`));
      await page.goto(`${pathToFileURL(index).href}#suites`);
      await page.getByText("sim01", { exact: true }).first().click();
      await page.getByText("GPU 0 (NVIDIA H100", { exact: false }).first().click();
      const t = stressOf("sim01")!;
      await page.getByText(label(t, "subSuite")!, { exact: true }).first().click();
      await page.getByText(t.name, { exact: true }).first().waitFor({ timeout: 10_000 });
      await page.close();
    });

    it("the compliance page shows the counts, each node and a TFLOP/s figure of the summary", async () => {
      const page = await browser.newPage();
      await page.goto(pathToFileURL(join(reportDir, "compliance.html")).href);
      const passed = results.filter((r) => r.status === "passed").length;
      const failed = results.filter((r) => r.status === "failed").length;
      const broken = results.filter((r) => r.status === "broken").length;
      assert.match(
        await shown(page.locator("#counts")),
        new RegExp(`^${passed} passed, ${failed} failed, ${broken} broken`),
      );
      assert.equal(await shown(page.locator("#verdict")), "NOT COMPLIANT");
      const tflops = Number(
        ctx.allChecks.find((x) => x.node === "sim01" && x.suite === "stress" && x.figures.tflops)!
          .figures.tflops,
      );
      const text = await shown(page.locator("#node-sim01"));
      assert.ok(text.includes(`${tflops.toFixed(2)} TFLOP/s`), text.slice(0, 400));
      assert.match(text, /driver 580\.173\.02/);
      assert.match(await shown(page.locator("#node-sim02")), /FAIL/);
      // every requirement links to its evidence on the same page
      const href = await page.locator("#node-sim02 a[href^='#ev-']").first().getAttribute("href");
      assert.equal(await page.locator(href!).count(), 1);
      await page.close();
    });
  });

  it("a second report carries the first one's history (trend of 2, local build #2)", async () => {
    // Another report folder beside the first: the history kept in reports/allure-history is used.
    const second = join(c.dir, "reports", "allure-report-2");
    const again = await cli("report", "--results", join(out, "allure-results"), "--out", second);
    assert.equal(again.code, 0, again.stderr);
    const trend = JSON.parse(
      readFileSync(join(c.dir, "reports", "allure-history", "history-trend.json"), "utf8"),
    ) as unknown[];
    assert.equal(trend.length, 2);
    const ex = JSON.parse(readFileSync(join(out, "allure-results", "executor.json"), "utf8"));
    assert.equal(ex.buildOrder, 2);
  });

  it("the compliance PDF exists and has at least one page; report says where everything is", () => {
    const pdf = join(reportDir, "compliance.pdf");
    const buf = readFileSync(pdf);
    assert.equal(buf.subarray(0, 5).toString(), "%PDF-");
    assert.ok(statSync(pdf).size > 5000);
    assert.ok((buf.toString("latin1").match(/\/Type\s*\/Page[^s]/g) ?? []).length >= 1);
    assert.match(reportOut, /compliance\.pdf/);
    assert.match(reportOut, /single-file\/index\.html/);
    assert.ok(existsSync(join(c.dir, "reports", "allure-history", "history.json")), "history kept");
  });
});
