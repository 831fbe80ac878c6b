// The run's spine end to end (real sshd, simulated nodes): one Allure identity per test across
// a driver upgrade (and the History tab in Chromium showing both runs), real durations, the
// node lock between two controllers, and an interrupted run that keeps what it measured,
// restores the layout, writes its reports and exits 130.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import Database from "better-sqlite3";
import { simNodeRecord } from "../../sim/src/cluster.js";
import { readState } from "../../sim/src/nvsmi/state.js";
import { launchChromium } from "../../src/report/browser.js";
import { cli, runArgs } from "../helpers/cli.js";
import { sshdLogins, taggedPids, useCluster, waitFor } from "../helpers/cluster.js";

interface AllureResult {
  name: string;
  fullName: string;
  historyId: string;
  status: string;
  start: number;
  stop: number;
  steps: { name: string; start: number; stop: number }[];
  parameters: { name: string; value: string; excluded?: boolean }[];
}

function results(out: string): AllureResult[] {
  const dir = join(out, "allure-results");
  return readdirSync(dir)
    .filter((f) => f.endsWith("-result.json"))
    .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as AllureResult);
}

const LAYOUT = "test/fixtures/isolation-layout.yaml";

describe("the run's spine: history ids, durations, the node lock, interrupts (real sshd)", function () {
  this.timeout(480_000);
  const c = useCluster([{ gpu: "H100-80GB", driver: "580.65.06" }]);
  const journal = () => join(c.dir, "journal");
  const gis = (node = "sim01") =>
    readState(join(simNodeRecord(c.inventoryPath, node).dir, "state")).gpus[0]!;

  it("a run over 7 instances (layout applied, stress, restore) opens one SSH connection to the node", async () => {
    const before = sshdLogins(c);
    const r = await cli(
      ...runArgs(c, "one-connection", {
        layout: ["fixtures/layouts/default.yaml", "all-1g.10gb"],
        journal: journal(),
        json: true,
      }),
    );
    assert.equal(r.code, 0, r.stderr);
    const s = JSON.parse(r.stdout) as {
      nodes: { connections: number; extraConnections: string[] }[];
      checks: { suite: string; status: string }[];
    };
    assert.equal(s.checks.filter((x) => x.suite === "stress" && x.status === "passed").length, 7);
    // Counted by sshd itself, not by what slicecheck says of itself: logins, since a handshake
    // retried after a timeout on a loaded machine is a second TCP connection but no second login.
    assert.equal(
      sshdLogins(c) - before,
      1,
      `logins accepted by the node's sshd (the run counted ${s.nodes[0]?.connections} connection(s); extra ones opened for: ${s.nodes[0]?.extraConnections.join("; ")})`,
    );
    assert.equal(s.nodes[0]?.connections, 1);
    assert.equal(gis().gis.length, 0, "the layout was restored");
  });

  it("one test keeps one Allure history id across a driver upgrade; its duration covers the workload", async () => {
    const runOnce = async (name: string) => {
      const out = join(c.dir, name);
      const r = await cli(
        "run",
        "-i",
        c.inventoryPath,
        "--layout",
        LAYOUT,
        "-c",
        "two-3g",
        "--duration",
        "2",
        "--out",
        out,
        "--db",
        join(c.dir, "h.db"),
        "--journal-dir",
        journal(),
      );
      assert.equal(r.code, 0, r.stderr + r.stdout);
      return results(out).filter((x) => x.fullName.includes("suites/stress.ts"));
    };
    const before = await runOnce("hist1");
    const up = await cli(
      "sim",
      "upgrade-driver",
      "sim01",
      "--to",
      "580.173.02",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(up.code, 0, up.stderr);
    const after = await runOnce("hist2");
    assert.equal(before.length, 2);
    const key = (x: AllureResult) => x.fullName;
    for (const b of before) {
      const a = after.find((x) => key(x) === key(b));
      assert.ok(a, `${key(b)} ran after the upgrade too`);
      assert.equal(a.historyId, b.historyId, `${key(b)}: same history id on both drivers`);
      const drv = (x: AllureResult) => x.parameters.find((p) => p.name === "driver");
      assert.notEqual(drv(a)?.value, drv(b)?.value, "the driver is shown, and differs");
      assert.equal(drv(a)?.excluded, true, "…but kept out of the history id");
      for (const x of [a, b]) {
        assert.ok(
          x.stop - x.start >= 2000,
          `${x.fullName}: ${x.stop - x.start} ms for a 2 s stress`,
        );
        assert.ok(
          x.steps.some((s) => s.name === "stress" && s.stop - s.start >= 2000),
          JSON.stringify(x.steps),
        );
      }
    }
    // Two reports in a row: the second one's History tab shows the first run as well.
    const rep = join(c.dir, "reports");
    for (const run of ["hist1", "hist2"]) {
      const r = await cli(
        "report",
        "--results",
        join(c.dir, run, "allure-results"),
        "--out",
        join(rep, "allure-report"),
        "--single-file",
      );
      assert.equal(r.code, 0, r.stderr);
    }
    const history = JSON.parse(
      readFileSync(join(rep, "allure-history", "history.json"), "utf8"),
    ) as Record<string, { items: unknown[] }>;
    const b0 = before[0]!;
    assert.equal(
      Object.values(history).filter((h) => h.items.length === 2).length,
      before.length,
      "each stress test has both runs in its history",
    );
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.goto(pathToFileURL(join(rep, "allure-report", "single-file", "index.html")).href);
      await page.waitForSelector(".widget__title", { timeout: 30_000 });
      await page.goto(
        `${pathToFileURL(join(rep, "allure-report", "single-file", "index.html")).href}#suites`,
      );
      await page.getByText("sim01", { exact: true }).first().click();
      await page.getByText("GPU 0 (NVIDIA H100", { exact: false }).first().click();
      await page.getByText("3g.40gb at 0:4", { exact: true }).first().click();
      await page.getByText(b0.name, { exact: true }).first().click();
      await page.getByText("History", { exact: true }).first().click();
      // Allure 2's History tab: the success rate over both runs and the earlier run's row.
      const rate = page.locator(".test-result-history__success-rate");
      await rate.waitFor({ timeout: 10_000 });
      // biome-ignore lint/performance/useDomNodeTextContent: a Playwright locator, not a DOM node
      assert.match(await rate.innerText(), /\(2 of 2\)/);
      assert.ok((await page.locator(".test-result-history__row").count()) >= 1);
      await page.close();
    } finally {
      await browser.close();
    }
  });

  it("two controllers apply at once: one gets NODE_LOCKED and touches nothing; the node ends in the other's layout", async () => {
    const apply = (config: string) =>
      cli(
        "apply",
        "-i",
        c.inventoryPath,
        "fixtures/layouts/default.yaml",
        "-c",
        config,
        "--journal-dir",
        journal(),
        "--json",
      );
    const [a, b] = await Promise.all([apply("all-1g.10gb"), apply("all-balanced")]);
    const locked = [a, b].filter((r) => r.stdout.includes("NODE_LOCKED"));
    assert.equal(locked.length, 1, `${a.code} ${a.stdout}\n${b.code} ${b.stdout}`);
    const [loser, winner, wanted] =
      a === locked[0] ? [a, b, "all-balanced"] : [b, a, "all-1g.10gb"];
    assert.equal(loser.code, 2);
    assert.equal(winner.code, 0, winner.stdout);
    assert.match(loser.stdout, /the node is locked by run sc-\S+ \(`slicecheck apply/);
    const asserted = await cli(
      "assert",
      "-i",
      c.inventoryPath,
      "fixtures/layouts/default.yaml",
      "-c",
      wanted,
    );
    assert.equal(asserted.code, 0, asserted.stdout);
    const restored = await cli("restore", "-i", c.inventoryPath, "--journal-dir", journal());
    assert.equal(restored.code, 0, restored.stdout + restored.stderr);
  });

  it("SIGINT mid-run: the figures printed so far are kept, the layout restored, the reports written, exit 130", async () => {
    const out = join(c.dir, "interrupted");
    const db = join(c.dir, "int.db");
    const child = spawn(
      process.execPath,
      [
        "bin/slicecheck.js",
        "run",
        "-i",
        c.inventoryPath,
        "--layout",
        LAYOUT,
        "-c",
        "two-3g",
        "--duration",
        "30",
        "--out",
        out,
        "--db",
        db,
        "--journal-dir",
        journal(),
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stderr = "";
    let stdout = "";
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    // Wait until both instances printed at least two interval lines into their live logs (the
    // terminal shows a line per node, not the workloads' own lines), then interrupt.
    const intervals = () => {
      const dir = join(out, "sim01");
      if (!existsSync(dir)) return 0;
      return readdirSync(dir)
        .filter((f) => f.endsWith(".stress.1.log"))
        .map((f) => (readFileSync(join(dir, f), "utf8").match(/stress t=/g) ?? []).length)
        .filter((k) => k >= 2).length;
    };
    assert.ok(await waitFor(() => intervals() >= 2, 60_000, 100), stderr);
    assert.ok(gis().gis.length === 2, "the run's layout is in place");
    child.kill("SIGINT");
    const code = await exited;
    assert.equal(code, 130, stderr + stdout);
    assert.match(stderr, /SIGINT: stopping the workloads/);
    const lines = readFileSync(join(out, "measurements.jsonl"), "utf8").trim().split("\n");
    assert.ok(
      lines.some((l) => /"metric":"tflops"/.test(l)),
      "partial throughput was kept",
    );
    const d = new Database(db, { readonly: true });
    const run = d.prepare("SELECT id, status FROM runs").get() as { id: string; status: string };
    const n = (d.prepare("SELECT count(*) AS n FROM measurements").get() as { n: number }).n;
    const checks = d.prepare("SELECT status FROM checks WHERE suite = 'stress'").all() as {
      status: string;
    }[];
    d.close();
    assert.equal(run.status, "interrupted");
    assert.ok(n >= 2, `${n} measurements recorded`);
    assert.ok(
      checks.length === 2 && checks.every((x) => x.status === "broken"),
      JSON.stringify(checks),
    );
    for (const f of ["junit.xml", "checks.jsonl", "run.json", "results-summary.json"])
      assert.ok(existsSync(join(out, f)), f);
    // The workloads' checks say they were interrupted, never a timeout or a bare "cancelled".
    const stopped = readFileSync(join(out, "checks.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { suite: string; message: string })
      .filter((x) => x.suite === "stress");
    assert.equal(stopped.length, 2);
    for (const x of stopped) {
      assert.match(x.message, /interrupted \(SIGINT\)/, x.message);
      assert.doesNotMatch(x.message, /COMMAND_TIMEOUT|cancelled/, x.message);
    }
    assert.equal(gis().gis.length, 0, "the original layout (MIG off) is back");
    assert.equal(gis().mig.current, false);
    // The verdict is the last line, after the checks and the reports.
    assert.match(stdout.trimEnd().split("\n").at(-1) ?? "", /^run sc-\S+: INTERRUPTED: /);
    assert.deepEqual(
      taggedPids(`SLICECHECK_RUN=${run.id}@sim01`),
      [],
      "nothing of the run is left",
    );
  });

  it("SIGINT during apply: the change under way finishes, the original layout is restored, exit 130", async () => {
    const child = spawn(
      process.execPath,
      [
        "bin/slicecheck.js",
        "apply",
        "-i",
        c.inventoryPath,
        "fixtures/layouts/default.yaml",
        "-c",
        "all-1g.10gb",
        "--journal-dir",
        journal(),
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      out += d;
    });
    const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    // Interrupt once the node is locked and being changed: MIG has been turned on.
    assert.ok(await waitFor(() => gis().mig.current === true, 30_000, 20), out);
    child.kill("SIGINT");
    assert.equal(await exited, 130, out);
    assert.match(out, /SIGINT: finishing the change under way, then restoring/);
    assert.equal(gis().gis.length, 0, "no GPU instance is left");
    assert.equal(gis().mig.current, false, "MIG is back off, as it was found");
  });
});
