// The training suite end to end (real sshd, one simulated node with two H100s): train-step runs
// once across the whole GPUs (two ranks) and on the 3g instance of a layout, the smaller slices
// get a visible not-assessed check, the step times reach the records, and after a driver upgrade
// that plants a slower step for 3g.40gb, `diff` flags step_ms; a planted wrong gradient fails them.
import assert from "node:assert/strict";
import { join } from "node:path";
import Database from "better-sqlite3";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";

interface RunJson {
  checks: {
    suite: string;
    title: string;
    status: string;
    code: string;
    message: string;
    instance: { profile: string } | null;
  }[];
}

interface DiffJson {
  findings: { area: string; subject: string; regression: boolean; change: number | null }[];
}

function rows(db: string, sql: string): Record<string, unknown>[] {
  const d = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return d.prepare(sql).all() as Record<string, unknown>[];
  } finally {
    d.close();
  }
}

describe("training suite: train-step figures reach the records, diff flags a slower step (real sshd, simulated H100 x2)", function () {
  this.timeout(180_000);
  const c = useCluster([{ gpu: "H100-80GB", gpus: 2, driver: "580.65.06" }]);
  const db = () => join(c.dir, "train.db");
  const run = (label: string, layout: string[]) =>
    cli(
      "run",
      "-i",
      c.inventoryPath,
      "--suites",
      "training",
      ...layout,
      "--duration",
      "2",
      "--label",
      label,
      "--db",
      db(),
      "--out",
      join(c.dir, label),
      "--json",
    );
  const training = (stdout: string) =>
    (JSON.parse(stdout) as RunJson).checks.filter((x) => x.suite === "training");

  it("whole GPUs: one process, two ranks, its step time recorded", async () => {
    const r = await run("whole", []);
    assert.equal(r.code, 0, r.stderr);
    const checks = training(r.stdout);
    assert.deepEqual(
      checks.map((x) => [x.title, x.status]),
      [["runs a training step across 2 whole GPU(s), one rank each", "passed"]],
    );
    const m = rows(
      db(),
      "SELECT metric, value FROM measurements WHERE metric IN ('ranks', 'step_ms', 'allreduce_ms')",
    );
    const by = Object.fromEntries(m.map((x) => [x.metric, x.value as number]));
    assert.equal(by.ranks, 2);
    assert.ok((by.step_ms ?? 0) > 0 && (by.allreduce_ms ?? 0) > 0.035, JSON.stringify(by));
  });

  it("3g instance measured, smaller ones not assessed; a planted slow-down is flagged by diff", async () => {
    const layout = ["--layout", "fixtures/layouts/default.yaml", "-c", "all-balanced"];
    const before = await run("before", layout);
    assert.equal(before.code, 0, before.stderr);
    const checks = training(before.stdout);
    const byProfile = (p: string) =>
      checks.filter((x) => x.instance?.profile === p).map((x) => [x.status, x.code]);
    assert.deepEqual(byProfile("3g.40gb"), [
      ["passed", "OK"],
      ["passed", "OK"],
    ]);
    assert.deepEqual(byProfile("1g.10gb")[0], ["skipped", "NOT_A_TRAINING_PROFILE"]);
    assert.match(
      checks.find((x) => x.instance?.profile === "2g.20gb")?.message ?? "",
      /runs on 3g and 4g instances and whole GPUs/,
    );

    const up = await cli(
      "sim",
      "upgrade-driver",
      "sim01",
      "--to",
      "580.173.02",
      "--regress",
      "3g.40gb:step_ms=1.5",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(up.code, 0, up.stderr);
    const after = await run("after", layout);
    assert.equal(after.code, 0, after.stderr);

    const diff = await cli(
      "diff",
      "--before",
      "before",
      "--after",
      "after",
      "--db",
      db(),
      "--json",
    );
    assert.equal(diff.code, 1, diff.stderr);
    const regressed = (JSON.parse(diff.stdout) as DiffJson).findings
      .filter((f) => f.regression)
      .map((f) => f.subject);
    assert.ok(regressed.includes("H100-80GB 3g.40gb train-step step_ms"), regressed.join("\n"));
    const step = (JSON.parse(diff.stdout) as DiffJson).findings.find(
      (f) => f.subject === "H100-80GB 3g.40gb train-step step_ms",
    );
    assert.ok(Math.abs((step?.change ?? 0) - 0.5) < 0.05, `about +50 %, got ${step?.change}`);
    assert.ok(
      !regressed.some((s) => /1g\.10gb|2g\.20gb/.test(s)),
      "only the planted profile regressed",
    );
  });
  it("a planted wrong gradient fails the training checks (TRAIN_FAILED), whatever the step time", async () => {
    const f = (...a: string[]) =>
      cli("sim", "fault", "sim01", ...a, "--inventory", c.inventoryPath);
    assert.equal((await f("wrong-gradient")).code, 0);
    const layout = ["--layout", "fixtures/layouts/default.yaml", "-c", "all-balanced"];
    const r = await run("wrong", layout);
    assert.equal((await f("--clear")).code, 0);
    assert.equal(r.code, 1, r.stderr);
    const failed = training(r.stdout).filter((x) => x.status === "failed");
    assert.deepEqual(
      failed.map((x) => [x.instance?.profile, x.code]),
      [
        ["3g.40gb", "TRAIN_FAILED"],
        ["3g.40gb", "TRAIN_FAILED"],
      ],
    );
  });
});
