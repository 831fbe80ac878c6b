// The isolation suite runs its nodes side by side, bounded by --concurrency, proved from the
// records' own timestamps (history.jsonl), never from a wall-clock budget: with two nodes both
// start their scenarios before either ends, with --concurrency 1 one node's scenarios all come
// after the other's; and a node lost mid-scenario is that node's alone.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ChaosEvent } from "../../src/chaos/history.js";
import type { IsolationSummary } from "../../src/chaos/isolation.js";
import { cli } from "../helpers/cli.js";
import { startCluster, type TestCluster } from "../helpers/cluster.js";

const LAYOUT = "test/fixtures/isolation-layout.yaml";
const NODES = ["sim01", "sim02"];

/** Per node: the time of its first scenario invoke and of its last event (ms). */
function spans(out: string): Map<string, { first: number; last: number }> {
  const events = readFileSync(join(out, "history.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as ChaosEvent);
  const m = new Map<string, { first: number; last: number }>();
  for (const node of NODES) {
    const mine = events.filter((e) => e.node === node);
    const invokes = mine.filter((e) => e.type === "invoke").map((e) => Date.parse(e.time));
    assert.ok(invokes.length > 0, `${node} invoked a scenario`);
    m.set(node, {
      first: Math.min(...invokes),
      last: Math.max(...mine.map((e) => Date.parse(e.time))),
    });
  }
  return m;
}

const iso = (ms: number) => new Date(ms).toISOString();
const show = (m: Map<string, { first: number; last: number }>) =>
  [...m].map(([n, s]) => `${n} ${iso(s.first)}..${iso(s.last)}`).join(", ");

describe("isolation on two nodes runs them side by side (run --suites isolation, real sshd)", function () {
  this.timeout(180_000);
  let c: TestCluster;
  let n = 0;

  before(async () => {
    c = await startCluster(2);
    const r = await cli(
      "apply",
      "-i",
      c.inventoryPath,
      LAYOUT,
      "-c",
      "two-3g",
      "--allow-reset",
      "--journal-dir",
      join(c.dir, "journal"),
    );
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => {
    await c?.stop();
  });
  afterEach(async () => {
    await cli("sim", "fault", "sim01", "--clear", "--inventory", c.inventoryPath);
  });

  async function isolation(faults: string, ...extra: string[]) {
    const out = join(c.dir, `iso${++n}`);
    const r = await cli(
      "run",
      "-i",
      c.inventoryPath,
      "--suites",
      "isolation",
      "--faults",
      faults,
      "--aggressors",
      "1",
      "--duration",
      "1",
      "--nodes",
      NODES.join(","),
      "--out",
      out,
      "--json",
      ...extra,
    );
    const s = JSON.parse(readFileSync(join(out, "verdicts.json"), "utf8")) as IsolationSummary;
    return { r, s, out };
  }

  it("both nodes' first scenario starts before either node's last event", async () => {
    const { r, s, out } = await isolation("kill");
    assert.equal(r.code, 0, r.stderr);
    for (const node of NODES)
      assert.ok(
        s.rows.some((x) => x.node === node && x.fault === "kill" && x.status === "passed"),
        `${node} has its verdicts`,
      );
    const m = spans(out);
    const firsts = [...m.values()].map((x) => x.first);
    const lasts = [...m.values()].map((x) => x.last);
    assert.ok(Math.max(...firsts) < Math.min(...lasts), `overlapping: ${show(m)}`);
  });

  it("--concurrency 1: one node's scenarios all come after the other's", async () => {
    const { r, out } = await isolation("kill", "--concurrency", "1");
    assert.equal(r.code, 0, r.stderr);
    const [a, b] = [...spans(out).values()].sort((x, y) => x.first - y.first);
    assert.ok(a!.last <= b!.first, `one at a time: ${show(spans(out))}`);
  });

  it("a node lost mid-scenario is broken alone; the other node keeps its passed verdicts", async () => {
    const plant = await cli(
      "sim",
      "fault",
      "sim01",
      "drop-connection",
      "--name",
      "slicecheck-crasher",
      "--inventory",
      c.inventoryPath,
    );
    assert.equal(plant.code, 0, plant.stderr);
    const { r, s } = await isolation("crash");
    assert.equal(r.code, 2, r.stderr);
    const lost = s.rows.filter((x) => x.node === "sim01" && x.verdict !== "route");
    assert.ok(
      lost.length > 0 && lost.every((x) => x.status === "broken"),
      JSON.stringify(lost.map((x) => x.status)),
    );
    const kept = s.rows.filter((x) => x.node === "sim02");
    assert.ok(
      kept.some((x) => x.fault === "crash") && kept.every((x) => x.status === "passed"),
      JSON.stringify(kept.map((x) => [x.verdict, x.status, x.summary])),
    );
  });
});
