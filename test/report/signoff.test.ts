// The sign-off page end to end (real sshd, simulated nodes, Debian's Chromium): a stress-only run
// is PARTIAL (isolation not assessed); a healthy run with one aggressor and two fault kinds is
// PARTIAL ("tested 2 of 8"), none of its instances verified, on the page, the terminal, --json
// and the numbered PDF; a full-coverage run under a site policy is COMPLIANT and names it; after a driver upgrade with a planted regression the page lists
// the regression and the 1g instances below their share and says NOT COMPLIANT; the isolation
// matrix of a node with broken isolation carries the broken pair's ratio in the failed colour;
// the slice map shows the placements `plan` gives for the applied layout; junit.xml validates.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Browser, Locator, Page } from "playwright-core";
import { main } from "../../src/cli/main.js";
import { launchChromium } from "../../src/report/browser.js";
import { type RunContext, readRunContext } from "../../src/report/context.js";
import { ANALYTICS } from "../../src/report/generate.js";
import { FILL } from "../../src/report/svg/common.js";
import { cli } from "../helpers/cli.js";
import { startCluster, type TestCluster } from "../helpers/cluster.js";
import { xsdErrors } from "../helpers/junit-xsd.js";

// biome-ignore lint/performance/useDomNodeTextContent: a Playwright locator, not a DOM node
const shown = (l: Locator) => l.innerText();
const LAYOUT = ["--layout", "fixtures/layouts/default.yaml", "-c", "all-balanced"];

/** The CLI in-process in folder `cwd` (where its slicecheck.config.yaml is found). */
async function cliIn(cwd: string, ...args: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await main(
    ["node", "slicecheck", ...args],
    {
      out: (l) => {
        stdout += `${l}\n`;
      },
      err: (l) => {
        stderr += `${l}\n`;
      },
    },
    { cwd, env: process.env },
  );
  return { code, stdout, stderr };
}

/** Every file under `dir` whose text holds an analytics address. */
function analyticsIn(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const p = join(e.parentPath, e.name);
    if (statSync(p).size < 50_000_000 && ANALYTICS.test(readFileSync(p, "latin1"))) out.push(p);
  }
  return out;
}

const pdfText = (file: string) => {
  const r = spawnSync("pdftotext", ["-layout", file, "-"], { encoding: "utf8" });
  assert.equal(r.status, 0, `pdftotext (poppler-utils, npm test installs it): ${r.stderr}`);
  return r.stdout;
};

describe("sign-off page: headline, requirements, pictures (real sshd, Chromium)", function () {
  // Six runs and their reports (two with isolation scenarios) on a shared, loaded machine.
  this.timeout(900_000);
  let c: TestCluster;
  let browser: Browser;
  const runs: Record<
    string,
    {
      out: string;
      code: number;
      report: string;
      ctx: RunContext;
      stdout: string;
      reportOut: string;
    }
  > = {};

  async function runAndReport(name: string, nodes: string, ...args: string[]) {
    return runAndReportIn(process.cwd(), name, nodes, ...args);
  }

  async function runAndReportIn(cwd: string, name: string, nodes: string, ...args: string[]) {
    const out = join(c.dir, name);
    const r = await cliIn(
      cwd,
      "run",
      "-i",
      c.inventoryPath,
      "--nodes",
      nodes,
      "--duration",
      "1",
      "--db",
      join(c.dir, "records.db"),
      "--journal-dir",
      join(c.dir, "journal"),
      "--out",
      out,
      "--layout",
      resolve("fixtures/layouts/default.yaml"),
      ...(args.includes("-c") ? [] : LAYOUT.slice(2)),
      ...args,
    );
    const report = join(c.dir, `${name}-report`);
    const rep = await cliIn(
      cwd,
      "report",
      "--results",
      join(out, "allure-results"),
      "--out",
      report,
      "--exit-code",
      ...(name === "one" ? ["--pdf"] : []),
    );
    assert.equal(rep.code, r.code, `report --exit-code gives the run's verdict\n${rep.stderr}`);
    const ctx = readRunContext(out);
    runs[name] = { out, code: r.code, report, ctx, stdout: r.stdout, reportOut: rep.stdout };
    return r;
  }

  async function page(name: string): Promise<Page> {
    const p = await browser.newPage();
    await p.goto(pathToFileURL(join(runs[name]!.report, "compliance.html")).href);
    return p;
  }

  before(async () => {
    c = await startCluster([
      { gpu: "A100-80GB", driver: "550.54.15" },
      { gpu: "H100-80GB", driver: "580.65.06" },
      { gpu: "H100-80GB", driver: "580.65.06" },
    ]);
    const inv = c.inventoryPath;
    const before = await runAndReport("before", "sim01", "--suites", "stress");
    assert.equal(before.code, 0, before.stderr + before.stdout);
    const up = await cli(
      "sim",
      "upgrade-driver",
      "sim01",
      "--to",
      "580.65.06",
      "--regress",
      "1g.10gb:tflops=0.8",
      "--inventory",
      inv,
    );
    assert.equal(up.code, 0, up.stderr);
    const after = await runAndReport("after", "sim01", "--suites", "stress,regression,health");
    assert.equal(after.code, 1, after.stderr + after.stdout);
    const planted = await cli("sim", "fault", "sim02", "isolation-broken", "--inventory", inv);
    assert.equal(planted.code, 0, planted.stderr);
    const iso = await runAndReport(
      "iso",
      "sim02",
      "--suites",
      "isolation",
      "--faults",
      "oom",
      "--aggressors",
      "1",
    );
    assert.equal(iso.code, 1, iso.stderr + iso.stdout);
    // Healthy, but one aggressor of four and two fault kinds of five, no health suite.
    const one = await runAndReport(
      "one",
      "sim03",
      "--suites",
      "stress,isolation,layout",
      "--faults",
      "crash,oom",
      "--aggressors",
      "1",
    );
    assert.equal(one.code, 0, one.stderr + one.stdout);
    // Everything a site policy asks (every instance the aggressor for every fault kind,
    // health and layout, 1 s windows), on two 3g.40gb instances, from a project folder.
    const project = join(c.dir, "project");
    mkdirSync(join(project, ".git"), { recursive: true });
    writeFileSync(
      join(project, "slicecheck.config.yaml"),
      "# the site's sign-off policy\nsignoff:\n  name: staging smoke\n  min_window: 1s\n  confinement: false\n",
    );
    const all = await runAndReportIn(
      project,
      "full",
      "sim03",
      "-c",
      "all-3g.40gb",
      "--suites",
      "layout,stress,isolation,health",
    );
    assert.equal(all.code, 0, all.stderr + all.stdout);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await c?.stop();
  });

  it("the stress checks fail STRESS_SHARE on exactly the slowed 1g.10gb instances", () => {
    const stress = runs.after!.ctx.allChecks!.filter((x) => x.suite === "stress");
    assert.equal(stress.length, 4);
    for (const s of stress) {
      const slowed = s.instance?.profile === "1g.10gb";
      assert.equal(s.status, slowed ? "failed" : "passed", `${s.instance?.profile}: ${s.message}`);
      if (slowed) {
        assert.equal(s.code, "STRESS_SHARE");
        const { perSm, gpuMedianPerSm, ratio } = s.figures as Record<string, number> & {
          perSm: number;
          gpuMedianPerSm: number;
          ratio: number;
        };
        assert.ok(Math.abs(ratio - 0.8) < 0.03, `ratio ${ratio}`);
        assert.ok(Math.abs(perSm / gpuMedianPerSm - ratio) < 0.001);
      }
    }
    // Before the upgrade every instance had its share.
    const was = runs.before!.ctx.allChecks!.filter((x) => x.suite === "stress");
    assert.ok(was.every((x) => x.status === "passed" && typeof x.figures.ratio === "number"));
  });

  it("stress only: PARTIAL, naming the GPU isolation was not assessed on", async () => {
    const p = await page("before");
    assert.equal(await shown(p.locator("#verdict")), "PARTIAL");
    assert.match(await shown(p.locator("#reasons")), /isolation not assessed on sim01 GPU 0/);
    const iso = p.locator('#requirements tr[data-key="isolation"] .res');
    assert.equal(await shown(iso), "NOT ASSESSED");
    assert.equal(await shown(p.locator('#requirements tr[data-key="stress"] .res')), "PASS");
    const gpu = p.locator('#gpus tr[data-node="sim01"]');
    assert.equal(await shown(gpu.locator(".route")), "MIG");
    assert.equal(await shown(gpu.locator(".tenants")), "4");
    assert.equal(await shown(gpu.locator(".verified")), "0 of 4");
    await p.close();
  });

  it("planted regression: NOT COMPLIANT, the regression row failed, every check listed with evidence", async () => {
    const p = await page("after");
    assert.equal(await shown(p.locator("#verdict")), "NOT COMPLIANT");
    assert.equal(await shown(p.locator('#requirements tr[data-key="regression"] .res')), "FAIL");
    assert.equal(await shown(p.locator('#requirements tr[data-key="stress"] .res')), "FAIL");
    assert.equal(await shown(p.locator('#requirements tr[data-key="health"] .res')), "PASS");
    const all = runs.after!.ctx.allChecks!;
    const rows = p.locator("table.checks tbody tr");
    assert.equal(await rows.count(), all.length, "every check of the run has a row");
    const reg = all.find((x) => x.suite === "regression" && x.status === "failed");
    assert.ok(reg, all.map((x) => `${x.suite} ${x.title} ${x.status}`).join("\n"));
    // The regression compares products across nodes: a run-wide check, in its own section.
    const row = p.locator("#node-run table.checks tr", { hasText: reg.title });
    assert.equal(await shown(row.locator(".res")), "FAIL");
    // Each row's evidence link lands on a block of the same page.
    const hrefs = await p
      .locator("table.checks a")
      .evaluateAll((as) => as.map((a) => a.getAttribute("href")));
    assert.equal(new Set(hrefs).size, all.length);
    for (const h of hrefs.slice(0, 5)) assert.equal(await p.locator(h!).count(), 1);
    await p.close();
  });

  it("the slice map shows the placements plan gives for the applied layout", async () => {
    const plan = await cli(
      "plan",
      "fixtures/layouts/default.yaml",
      "-c",
      "all-balanced",
      "--gpu",
      "A100-80GB",
      "--driver",
      "580.65.06",
      "--json",
    );
    assert.equal(plan.code, 0, plan.stderr);
    const planned = (
      JSON.parse(plan.stdout) as {
        devices: { instances: { profile: string; start: number; size: number }[] }[];
      }
    ).devices[0]!.instances.map((i) => `${i.profile} ${i.start} ${i.size}`);
    assert.equal(planned.length, 4, plan.stdout.slice(0, 500));
    const p = await page("after");
    const drawn = await p
      .locator("#gpu-sim01-0 .slice-map rect.gi")
      .evaluateAll((rs) =>
        rs.map((r) => `${r.dataset.profile} ${r.dataset.start} ${r.dataset.size}`),
      );
    assert.deepEqual(drawn.sort(), planned.sort());
    await p.close();
  });

  it("isolation-broken: the matrix cell of the broken pair holds its ratio in the failed colour", async () => {
    const v = runs.iso!.ctx.allChecks!.find(
      (x) => x.suite === "isolation" && x.parameters.verdict === "victimsUnaffected",
    )!;
    assert.equal(v.status, "failed");
    const aggressor = v.parameters.aggressor!;
    // The victim the planted fault hit hardest (it halves throughput from the fault on).
    const ratios = Object.keys(v.figures)
      .map((k) => /^(.+) baseline TFLOP\/s$/.exec(k)?.[1])
      .filter((l): l is string => !!l)
      .map((l) => ({
        victim: l,
        ratio:
          (v.figures[`${l} under fault TFLOP/s`] as number) /
          (v.figures[`${l} baseline TFLOP/s`] as number),
      }))
      .sort((x, y) => x.ratio - y.ratio);
    const { victim, ratio } = ratios[0]!;
    assert.ok(ratio < 0.95, `the planted fault slows the victim beyond the tolerance: ${ratio}`);
    const p = await page("iso");
    assert.equal(await shown(p.locator("#verdict")), "NOT COMPLIANT");
    // An isolation-only run still names the GPU and driver.
    assert.match(await shown(p.locator("#node-sim02")), /NVIDIA H100.*driver 580\.65\.06/s);
    const cell = p.locator(
      `#gpu-sim02-0 .matrix rect.cell[data-fault="oom"][data-aggressor="${aggressor}"][data-victim="${victim}"]`,
    );
    assert.equal(await cell.count(), 1);
    assert.equal(Number(await cell.getAttribute("data-ratio")).toFixed(2), ratio.toFixed(2));
    assert.equal(await cell.getAttribute("fill"), FILL.failed);
    const label = cell.locator("xpath=following-sibling::*[1]");
    assert.equal(await label.textContent(), ratio.toFixed(2));
    assert.equal(await shown(p.locator('#gpus tr[data-node="sim02"] .verified')), "0 of 4");
    await p.close();
  });

  it("junit.xml validates against junit-10.xsd, with properties and the stress logs' tails", () => {
    const file = join(runs.after!.out, "junit.xml");
    assert.equal(xsdErrors(file), null);
    const xml = readFileSync(file, "utf8");
    assert.match(xml, /<property name="sim01\.route" value="GPU 0: MIG, 4 instance\(s\)"\/>/);
    assert.match(xml, /<property name="sim01\.driver" value="580\.65\.06"\/>/);
    assert.equal((xml.match(/<system-out>/g) ?? []).length, 4, "one per stress check");
    assert.match(xml, /<system-out>[^<]*SLICECHECK stress /);
    assert.equal(xsdErrors(join(runs.iso!.out, "junit.xml")), null);
  });

  it("Allure: figures as an HTML table and the GPU's pictures beside each check; nodes counted", () => {
    const dir = join(runs.after!.out, "allure-results");
    const results = readdirSync(dir)
      .filter((f) => f.endsWith("-result.json"))
      .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")))
      .filter((r) => r.labels.some((l: { value: string }) => l.value === "Stress"));
    assert.equal(results.length, 4);
    for (const r of results) {
      const by = Object.fromEntries(
        r.attachments.map((a: { name: string; source: string }) => [a.name, a.source]),
      );
      const html = readFileSync(join(dir, by["figures.html"]), "utf8");
      assert.match(html, /<th>perSm<\/th><td>0\.\d+<\/td>/);
      assert.match(readFileSync(join(dir, by["slice map.svg"]), "utf8"), /^<svg /);
      assert.ok(by["throughput against share.svg"]);
    }
    const env = readFileSync(join(dir, "environment.properties"), "utf8");
    assert.match(env, /^run\.nodes=1$/m);
    assert.match(env, /^run\.instances=4$/m);
    assert.match(env, /^sim01\.route=GPU 0: MIG \(4 tenant\(s\)\)$/m);
  });

  it("--aggressors 1, two fault kinds, no health: PARTIAL everywhere, 0 of 4 verified isolated", async () => {
    const p = await page("one");
    assert.equal(await shown(p.locator("#verdict")), "PARTIAL");
    assert.match(await shown(p.locator("#tagline")), /^tested 2 of 20 fault scenarios/);
    const reasons = await shown(p.locator("#reasons"));
    assert.match(
      reasons,
      /sim03 GPU 0: aggressors 1 of 4, fault kinds 2 of 5 \(not run: kill, hang, noisy\)/,
    );
    assert.match(reasons, /health not run/);
    // No slurm suite: tenant confinement was not assessed, and the page says why and how.
    assert.match(
      reasons,
      /tenant confinement: NOT ASSESSED — sim03: slurm suite not run; how to assess: --suites slurm/,
    );
    assert.equal(
      await shown(p.locator('#requirements tr[data-key="confinement"] .res')),
      "NOT ASSESSED",
    );
    assert.match(reasons, /windows of 1 s, the policy asks at least 30 s/);
    const gpu = p.locator('#gpus tr[data-node="sim03"]');
    assert.equal(await shown(gpu.locator(".aggressors")), "1 of 4");
    // The aggressor never was a victim, the victims never faulted: none is verified.
    assert.equal(await shown(gpu.locator(".verified")), "0 of 4");
    // The scope comes first: date, run, driver, duration, what ran, what did not, the policy.
    const scope = await shown(p.locator("#scope"));
    for (const k of ["date", "run", "driver", "duration", "what ran", "what did not", "policy"])
      assert.match(scope, new RegExp(`${k}\\s`), scope);
    assert.match(
      await shown(p.locator('#scope tr[data-key="what did not"]')),
      /health \(not run\).*kill, hang, noisy.*3 instance\(s\) never an aggressor/,
    );
    assert.match(
      await shown(p.locator('#scope tr[data-key="policy"]')),
      /^policy\s+default: every instance an aggressor once/,
    );
    // The page ends with the block a reviewer signs.
    const last = await p.locator("body > *").last().getAttribute("id");
    assert.equal(last, "signoff");
    assert.match(await shown(p.locator("#signoff")), /reviewer[\s\S]*date[\s\S]*signature/);
    // Every link is relative to the report folder, none an absolute path of this machine.
    const hrefs = await p
      .locator("a[href]")
      .evaluateAll((as) => as.map((a) => a.getAttribute("href")!));
    assert.ok(
      hrefs.some((h) => h.endsWith(".log")),
      "the stress logs are linked",
    );
    for (const h of hrefs) assert.doesNotMatch(h, /^(file:|\/)/, h);
    // The terminal and `report` say the same headline.
    assert.match(
      runs.one!.stdout,
      /^sign-off: PARTIAL: tested 2 of 20 fault scenarios .*\(policy: default\)$/m,
    );
    assert.match(runs.one!.reportOut, /^sign-off: PARTIAL: tested 2 of 20/m);
    assert.match(runs.one!.stdout, /^ {2}not covered: tenant confinement: NOT ASSESSED — sim03/m);
    await p.close();
  });

  it("the PDF opens with the scope, ends with the sign-off block, numbers its pages, links no file://", () => {
    const pdf = join(runs.one!.report, "compliance.pdf");
    const text = pdfText(pdf);
    const pages = text.split("\f").filter((x) => x.trim());
    assert.ok(pages.length >= 2, `${pages.length} page(s)`);
    for (const [i, pg] of pages.entries())
      assert.match(pg, new RegExp(`page ${i + 1} of ${pages.length}`));
    assert.match(pages[0]!, /date\s+2\d{3}-\d\d-\d\d[\s\S]*what did[\s\S]*PARTIAL/);
    assert.match(pages.at(-1)!, /Sign-off[\s\S]*reviewer[\s\S]*signature/);
    assert.match(
      text,
      /tenant\s+confinement:?\s+NOT\s+ASSESSED/,
      "the PDF says confinement was not assessed",
    );
    assert.doesNotMatch(readFileSync(pdf, "latin1"), /file:\/\//);
  });

  it("full coverage under a site policy (slicecheck.config.yaml): COMPLIANT, naming the policy", async () => {
    const p = await page("full");
    assert.equal(await shown(p.locator("#verdict")), "COMPLIANT", await shown(p.locator("body")));
    assert.match(await shown(p.locator("#tagline")), /^tested 10 of 10 fault scenarios/);
    assert.match(
      await shown(p.locator('#scope tr[data-key="policy"]')),
      /staging smoke \(slicecheck\.config\.yaml:2\): every instance an aggressor once; fault kinds oom, crash, kill, hang, noisy; health and layout assessed; tenant confinement waived; windows of at least 1 s/,
    );
    assert.equal(await shown(p.locator('#gpus tr[data-node="sim03"] .verified')), "2 of 2");
    // Waived, not hidden: the confinement row still says NOT ASSESSED and names the waiver.
    const conf = p.locator('#requirements tr[data-key="confinement"]');
    assert.equal(await shown(conf.locator(".res")), "NOT ASSESSED");
    assert.match(
      await shown(conf.locator(".coverage")),
      /waived by the policy \(slicecheck\.config\.yaml:2\)/,
    );
    assert.equal(runs.full!.ctx.scope?.policy.minWindowS, 1);
    assert.match(
      runs.full!.stdout,
      /^sign-off: COMPLIANT: .*\(policy: staging smoke, slicecheck\.config\.yaml:2\)$/m,
    );
    await p.close();
  });

  it("no file of any report it wrote names an analytics address (Allure's is switched off)", () => {
    for (const name of ["before", "after", "iso", "one", "full"]) {
      const found = analyticsIn(runs[name]!.report);
      assert.deepEqual(found, [], `${name}: ${found.join(", ")}`);
      assert.ok(readdirSync(runs[name]!.report).includes("index.html"));
    }
  });

  it("report --open with nothing to open is refused before any server starts", async () => {
    const r = await cli("report", "--results", join(c.dir, "no-such-run"), "--open");
    assert.equal(r.code, 3, r.stderr + r.stdout);
    assert.match(r.stderr, /cannot read .*run\.json.*\[USAGE\]/);
    assert.doesNotMatch(r.stdout, /serving/);
  });
});
