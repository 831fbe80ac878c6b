// What `slicecheck run` prints, against two simulated nodes (real sshd): live lines redrawn in
// place under a pseudo-terminal (script(1)), a bounded number of plain lines in a pipe, NO_COLOR,
// --json, the end of a failing run (each failed check with its evidence, the verdict last), the
// Allure environment's node count, and a reused --out that starts fresh.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CheckRecord } from "../../src/verdicts/checks.js";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";

const LAYOUT = ["--layout", "fixtures/layouts/default.yaml", "-c", "all-1g.10gb"];
const FAILING = "test/fixtures/suites/failing.mjs";
const SGR = /\x1b\[[\d;]*m/;
const ANSI = /\x1b\[[\d;]*[A-Za-z]/g;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function spawnRun(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const quote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
const lastLine = (s: string) =>
  s
    .replace(/\r/g, "")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .at(-1) ?? "";

describe("run's terminal output (live lines, plain lines, the end of the run; real sshd)", function () {
  this.timeout(300_000);
  const c = useCluster(2);
  let n = 0;
  const common = () => {
    const out = join(c.dir, `out${++n}`);
    return {
      out,
      args: [
        "run",
        "-i",
        c.inventoryPath,
        "--out",
        out,
        "--db",
        join(c.dir, "records.db"),
        "--journal-dir",
        join(c.dir, "journal"),
      ],
    };
  };
  const env = (extra: NodeJS.ProcessEnv = {}) => {
    const e: NodeJS.ProcessEnv = { ...process.env, TERM: "xterm", ...extra };
    if (!("NO_COLOR" in extra)) delete e.NO_COLOR;
    return e;
  };
  /** Under a pseudo-terminal: script(1) gives the command a tty for stdin, stdout and stderr. */
  const onTty = (args: string[], extra?: NodeJS.ProcessEnv) =>
    spawnRun(
      "script",
      ["-qfec", ["node", "bin/slicecheck.js", ...args].map(quote).join(" "), "/dev/null"],
      env(extra),
    );

  it("on a terminal: one line per node with its phase, tests done and ETA, redrawn in place; the verdict last, in colour", async () => {
    const { args } = common();
    const r = await onTty([...args, "--suites", "stress", "--duration", "3", ...LAYOUT]);
    assert.equal(r.code, 0, r.stdout);
    // log-update erases the previous frame (erase line, cursor up) before drawing the next.
    assert.ok(r.stdout.includes("\x1b[2K\x1b[1A"), "redraws in place");
    const plain = r.stdout.replace(ANSI, "").replace(/\r/g, "");
    assert.match(plain, /^sim0[12] {2}stress (running|1g\.10gb) \(\d\/7\) {2}ETA \d+:\d\d$/m);
    assert.match(plain, /^sim0[12] {2}layout config all-1g\.10gb {2}ETA \d+:\d\d$/m);
    assert.match(plain, /^\d\/2 node\(s\) done, \d+:\d\d elapsed, ETA \d+:\d\d$/m);
    const last = lastLine(r.stdout);
    assert.match(last.replace(ANSI, ""), /^run sc-\S+: PASSED: every check passed$/);
    assert.match(last, SGR, "the verdict is coloured on a terminal");
  });

  it("on a terminal with NO_COLOR: still redrawn, but no colour anywhere", async () => {
    const { args } = common();
    const r = await onTty([...args, "--suites", FAILING, "--duration", "1"], { NO_COLOR: "1" });
    assert.equal(r.code, 1, r.stdout);
    assert.ok(r.stdout.includes("\x1b[2K\x1b[1A"), "redraws in place");
    assert.ok(!SGR.test(r.stdout), JSON.stringify(r.stdout.match(SGR)));
    assert.match(lastLine(r.stdout), /^run sc-\S+: FAILED/);
  });

  it("in a pipe: no escape sequences, and a line per node per phase (not per instance per second)", async () => {
    const { args, out } = common();
    const r = await spawnRun(
      process.execPath,
      ["bin/slicecheck.js", ...args, "--suites", "stress", "--duration", "3", ...LAYOUT],
      env(),
    );
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.ok(!(r.stdout + r.stderr).includes("\x1b"), "no escape sequence");
    // One abort listener per workload (14 here) is no leak: no Node warning in the log.
    assert.doesNotMatch(r.stderr, /MaxListenersExceededWarning/);
    const progress = r.stderr.split("\n").filter((l) => /^\[\s*\d+\.\ds\] sim0\d {2}/.test(l));
    // 2 nodes × (connect, discover, layout, stress, restore, done); the old output printed a
    // line per instance per second (14 instances × 3 s).
    assert.ok(progress.length <= 2 * 6, progress.join("\n"));
    for (const node of ["sim01", "sim02"]) {
      const mine = progress.filter((l) => l.includes(`] ${node}  `));
      assert.equal(mine.filter((l) => / {2}stress /.test(l)).length, 1, mine.join("\n"));
      assert.match(mine.at(-1) ?? "", / {2}done$/);
    }
    assert.match(lastLine(r.stdout), /^run sc-\S+: PASSED: every check passed$/);
    // Allure counts the two nodes it ran on, in the environment and in the suites tree.
    const dir = join(out, "allure-results");
    const envFile = readFileSync(join(dir, "environment.properties"), "utf8");
    assert.match(envFile, /^run\.nodes=2$/m);
    assert.match(envFile, /^run\.nodes\.checked=2$/m);
    const parents = new Set<string>();
    for (const f of readdirSync(dir).filter((x) => x.endsWith("-result.json"))) {
      const res = JSON.parse(readFileSync(join(dir, f), "utf8")) as {
        labels: { name: string; value: string }[];
      };
      for (const l of res.labels) if (l.name === "parentSuite") parents.add(l.value);
    }
    assert.deepEqual([...parents].sort(), ["sim01", "sim02"]);
    const executor = JSON.parse(readFileSync(join(dir, "executor.json"), "utf8"));
    assert.equal(executor.type, "local");
  });

  // One failing run with --json, then one with --quiet into the same --out: the end of a failing
  // run, --json, --quiet and a reused --out are each read from these two runs (2 nodes each),
  // rather than from five runs that differ only in the output asked for.
  describe("a failing run, --json then --quiet into the same --out", () => {
    let out: string;
    let first: Awaited<ReturnType<typeof cli>>;
    let second: Awaited<ReturnType<typeof cli>>;
    before(async () => {
      const run = common();
      out = run.out;
      first = await cli(...run.args, "--suites", FAILING, "--duration", "1", "--json");
      writeFileSync(join(out, "notes.txt"), "not the run's\n");
      second = await cli(...run.args, "--suites", FAILING, "--duration", "1", "--quiet");
    });

    it("--json: stdout is the JSON document alone and no progress is printed; --quiet: no progress", () => {
      assert.equal(first.code, 1, first.stderr);
      assert.equal(JSON.parse(first.stdout).counts.failed, 2);
      // The output folder's random name may hold those letters (slicecheck-test-ETAXs0 did).
      const progress = (err: string) => err.replaceAll(out, "<out>");
      assert.doesNotMatch(progress(first.stderr), /ETA|connect|discover/);
      assert.equal(second.code, 1, second.stderr);
      assert.doesNotMatch(progress(second.stderr), /ETA/);
      assert.match(lastLine(second.stdout), /^run sc-\S+: FAILED/);
    });

    it("a failing run ends with every failed check, its reason and evidence, then the verdict line", () => {
      const lines = second.stdout.trimEnd().split("\n");
      assert.match(lines.at(-1)!, /^run sc-\S+: FAILED: a check failed \(see above\)$/);
      assert.match(lines.at(-2)!, /^2 passed, 2 failed, 0 broken, 0 skipped$/);
      const at = lines.findIndex((l) =>
        /^ {2}FAILED \[SITE_POLICY\] \S*failing\.mjs sim02: runs driver 999 or newer$/.test(l),
      );
      assert.ok(at >= 0, second.stdout);
      assert.match(lines[at + 1]!, /sim02 runs driver 580\.65\.06, older than 999/);
      const ev = /^ {6}evidence: (\S+checks\.jsonl) \(check (\S+)\)$/.exec(lines[at + 2]!);
      assert.ok(ev, lines[at + 2]);
      // The evidence named is that check, in that file.
      const rec = readFileSync(ev[1]!, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as CheckRecord)
        .find((x) => x.id === ev[2]);
      assert.equal(rec?.node, "sim02");
      assert.equal(rec?.status, "failed");
      assert.equal(ev[1], join(out, "checks.jsonl"));
      // The per-node counts table (cli-table3) sits above the verdict.
      assert.ok(
        lines.some((l) => /^sim02 +1 +1 +0 +0$/.test(l)),
        second.stdout,
      );
    });

    it("a reused --out starts fresh: the previous run is moved to previous-run/, other files stay", () => {
      assert.match(second.stderr, /held a previous run: its results are moved to \S+previous-run/);
      const id1 = JSON.parse(first.stdout).runId as string;
      const id2 = /^run (sc-\S+): /.exec(lastLine(second.stdout))?.[1];
      assert.ok(id2, second.stdout);
      assert.notEqual(id1, id2);
      const checks = readFileSync(join(out, "checks.jsonl"), "utf8").trim().split("\n");
      assert.equal(checks.length, 4, "only this run's checks");
      const results = readdirSync(join(out, "allure-results")).filter((f) =>
        f.endsWith("-result.json"),
      );
      assert.equal(results.length, 4, "no result of the run before (Allure would make it a retry)");
      const prev = JSON.parse(readFileSync(join(out, "previous-run", "run.json"), "utf8"));
      assert.equal(prev.runId, id1);
      assert.equal(JSON.parse(readFileSync(join(out, "run.json"), "utf8")).runId, id2);
      assert.ok(existsSync(join(out, "notes.txt")), "a file that is not the run's stays");
    });
  });
});
