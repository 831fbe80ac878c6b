// The slurm suite runs its nodes side by side, bounded by --concurrency, proved from Slurm's own
// record of the probe jobs (slurmctld's log: when each was allocated and when it completed),
// never from a wall-clock budget: with two MIG nodes each node's first probe job starts before
// the other node's last one ends; with --concurrency 1 one node's jobs all end before the
// other's start.
import assert from "node:assert/strict";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { cli } from "../helpers/cli.js";
import { applyUnderSlurm, useSlurmCluster } from "../helpers/slurm-cluster.js";

const NODES = ["sim01", "sim02"];
/** all-balanced: one 3g, one 2g and two 1g instances, so three probe jobs per node. */
const PROBES_PER_NODE = 3;

interface Span {
  first: number;
  last: number;
}

/** `[2026-12-03T18:40:01.123] text` → its time (ms; the same local zone on every line). */
const stamp = (line: string): number | null => {
  const m = /^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)\]/.exec(line);
  return m?.[1] ? Date.parse(m[1]) : null;
};

/** Per node: its probe jobs' first allocation and last completion, from the log's new lines. */
function spans(log: string): Map<string, Span> {
  const lines = log.split("\n");
  const nodeOf = new Map<string, string>();
  const start = new Map<string, number>();
  const end = new Map<string, number>();
  for (const l of lines) {
    const t = stamp(l);
    if (t === null) continue;
    // Slurm 22.05: `sched: _slurm_rpc_allocate_resources JobId=N NodeList=sim01 usec=…`. A job
    // that had to wait is logged there with `NodeList=(null)` and allocated later, on its own line
    // `sched: Allocate JobId=N NodeList=sim01 #CPUs=1 …` (CI of 6 December 2026, under load), so
    // the first line naming a node is its start.
    const a = /\bJobId=(\d+) NodeList=([^\s(]\S*)/.exec(l);
    if (a?.[1] && a[2] && !start.has(a[1])) {
      start.set(a[1], t);
      nodeOf.set(a[1], a[2]);
    }
    // `_job_complete: JobId=N WEXITSTATUS 0`, then `_job_complete: JobId=N done`.
    const e = /_job_complete: JobId=(\d+) done/.exec(l);
    if (e?.[1]) end.set(e[1], t);
  }
  const m = new Map<string, Span>();
  for (const node of NODES) {
    const jobs = [...nodeOf].filter(([, n]) => n === node).map(([id]) => id);
    assert.equal(
      jobs.length,
      PROBES_PER_NODE,
      `${node}: ${jobs.length} probe job(s) in slurmctld's log:\n${log.slice(-4000)}`,
    );
    const ends = jobs.map((id) => end.get(id));
    assert.ok(
      ends.every((x) => x !== undefined),
      `${node}: a job without its completion: ${jobs}`,
    );
    m.set(node, {
      first: Math.min(...jobs.map((id) => start.get(id) as number)),
      last: Math.max(...(ends as number[])),
    });
  }
  return m;
}

const iso = (ms: number) => new Date(ms).toISOString();
const show = (m: Map<string, Span>) =>
  [...m].map(([n, s]) => `${n} ${iso(s.first)}..${iso(s.last)}`).join(", ");

describe("slurm suite on two MIG nodes runs them side by side (real Slurm 22.05, real sshd)", function () {
  this.timeout(360_000);
  const c = useSlurmCluster(2);
  let n = 0;

  before(async function () {
    this.timeout(300_000);
    for (const node of NODES) await applyUnderSlurm(c, node, "all-balanced");
  });

  /** A slurm run; what slurmctld logged while it ran. */
  async function slurmRun(...extra: string[]) {
    const logPath = join(c.dir, ".sim.d", "slurm", "slurmctld.log");
    const from = statSync(logPath).size;
    const r = await cli(
      "run",
      "-i",
      c.inventoryPath,
      "--suites",
      "slurm",
      "--db",
      join(c.dir, "r.db"),
      "--out",
      join(c.dir, `out${++n}`),
      "--json",
      ...extra,
    );
    const checks = (JSON.parse(r.stdout) as { checks: { status: string; message: string }[] })
      .checks;
    assert.equal(
      r.code,
      0,
      checks
        .filter((k) => k.status !== "passed")
        .map((k) => k.message)
        .join("\n") || r.stderr,
    );
    return spans(readFileSync(logPath).subarray(from).toString("utf8"));
  }

  it("each node's first probe job starts before the other node's last one ends", async () => {
    const m = await slurmRun();
    const firsts = [...m.values()].map((x) => x.first);
    const lasts = [...m.values()].map((x) => x.last);
    assert.ok(Math.max(...firsts) < Math.min(...lasts), `overlapping: ${show(m)}`);
  });

  it("--concurrency 1: one node's probe jobs all end before the other's first starts", async () => {
    const m = await slurmRun("--concurrency", "1");
    const [a, b] = [...m.values()].sort((x, y) => x.first - y.first);
    assert.ok(a && b && a.last <= b.first, `one at a time: ${show(m)}`);
  });
});
