// `slicecheck observe` on a simulated H100 node over real sshd, with planted tenants of known
// utilization (`sim fault NODE tenant`): it reports a 30 %-busy tenant as 30 % busy and under
// 50 % busy nearly all the time, through nvidia-smi (whole GPU) and through DCGM (a MIG GPU
// instance); it records the observation, and `diff` of two observations (30 % before, 75 %
// after) shows the change.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { TENANT_JITTER } from "../../sim/src/nvsmi/tenant.js";
import { openDb } from "../../src/store/db.js";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";
import { usePostgres } from "../helpers/postgres.js";
import { smi, stateDir } from "../mig/apply-helpers.js";

interface UnitJson {
  gpu: number;
  gpuInstanceId: number | null;
  profile: string;
  memoryMiB: number | null;
  figures: {
    samples: number;
    busyMean: number | null;
    under50Share: number | null;
    idleShare: number | null;
    memUsedMean: number | null;
  };
  samples: { busyPct: number | null }[];
}
interface ObserveJson {
  runId: string;
  interrupted: boolean;
  nodes: { node: string; source: string; error: string | null; units: UnitJson[] }[];
}

/** How far a planted tenant's reading strays from its mean (sim/src/nvsmi/tenant.ts), plus half a
 * point for the whole percent nvidia-smi prints. */
const JITTER = TENANT_JITTER + 0.5;

/** A unit's busy figure is its planted tenant's: every sample it took reads within the tenant's
 * jitter of `planted`, and its mean is the mean of those samples. Both hold on every run: a mean
 * within some points of the planted one holds only on most (the readings are random, and one
 * observation in a few hundred strays 10 points), which turned a CI run red. */
function assertTenantMean(u: UnitJson, planted: number, jitter = JITTER): void {
  const what = JSON.stringify({ figures: u.figures, samples: u.samples });
  const busy = u.samples.map((s) => s.busyPct);
  assert.ok(busy.length >= 6, what);
  for (const b of busy) assert.ok(b !== null && Math.abs(b - planted) <= jitter, what);
  const mean = (busy as number[]).reduce((a, b) => a + b, 0) / busy.length;
  assert.equal(u.figures.busyMean, Number(mean.toFixed(1)), what);
}

/** The busy mean the table prints for a node's GPU 0. */
function tableMean(table: string): number {
  const m = /^sim01 GPU 0 under 50 % busy \d+ % of the time \(mean ([\d.]+) %/m.exec(table);
  assert.ok(m, table);
  return Number(m[1]);
}

describe("slicecheck observe (real sshd, simulated H100 x2, planted tenants)", function () {
  this.timeout(180_000);
  const c = useCluster([{ gpu: "H100-80GB", driver: "580.65.06", gpus: 2 }]);
  const db = () => join(c.dir, "observe.sqlite");
  const fault = (...a: string[]) => cli("sim", "fault", "sim01", ...a, "-i", c.inventoryPath);
  const observe = async (label: string, ...extra: string[]) => {
    const r = await cli(
      ...["observe", "-i", c.inventoryPath, "--duration", "7", "--interval", "1"],
      ...["--label", label, "--db", db(), ...extra],
    );
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    return r;
  };
  /** The first test's 30 %-busy GPU 0, whose recorded figures the diff test reads back. */
  let before: UnitJson | undefined;
  const unit = (j: ObserveJson, gpu: number, gi: number | null = null) => {
    const u = j.nodes[0]!.units.find((x) => x.gpu === gpu && x.gpuInstanceId === gi);
    assert.ok(u, `no unit GPU ${gpu} GI ${gi} in ${JSON.stringify(j.nodes[0]!.units)}`);
    return u;
  };

  it("reports a planted 30 %-busy tenant on a whole GPU (nvidia-smi), and an idle GPU as idle", async () => {
    const p = await fault("tenant", "--gpu", "0", "--name", "30");
    assert.equal(p.code, 0, p.stderr);
    const svg = join(c.dir, "before.svg");
    const j = JSON.parse((await observe("before", "--json", "--svg", svg)).stdout) as ObserveJson;
    assert.equal(j.nodes[0]!.source, "nvidia-smi");
    assert.equal(j.interrupted, false);
    const busy = unit(j, 0);
    before = busy;
    assert.ok(busy.figures.samples >= 6, JSON.stringify(busy.figures));
    assertTenantMean(busy, 30);
    // ±15 around 30 never reaches 50: every reading is under it.
    assert.equal(busy.figures.under50Share, 1);
    assert.equal(busy.figures.idleShare, 0);
    assert.ok(busy.figures.memUsedMean! >= 3072, JSON.stringify(busy.figures));
    // The readings jitter: a tenant whose every sample were its mean would be no real tenant.
    assert.ok(new Set(busy.samples.map((s) => s.busyPct)).size > 1);
    const idle = unit(j, 1);
    assert.equal(idle.figures.busyMean, 0);
    assert.equal(idle.figures.idleShare, 1);
    const pic = readFileSync(svg, "utf8");
    assert.equal((pic.match(/<g class="unit"/g) ?? []).length, 2);
    assert.ok((pic.match(/class="busy"/g) ?? []).length >= 6);

    // Recorded: the figures and every sample, under the label diff takes.
    const d = openDb(db());
    try {
      const rows = d
        .prepare(
          "SELECT m.metric, m.value FROM measurements m JOIN runs r ON r.id = m.run_id WHERE r.label = 'before' AND m.gpu_uuid = m.instance_uuid AND m.metric IN ('busy_mean', 'under50_share', 'sample_busy') AND m.profile = 'whole-gpu' AND m.node = 'sim01' AND m.gpu_uuid = (SELECT uuid FROM gpus g WHERE g.run_id = r.id AND g.idx = 0)",
        )
        .all() as { metric: string; value: number }[];
      assert.equal(rows.find((r) => r.metric === "under50_share")?.value, 100);
      assert.equal(rows.filter((r) => r.metric === "sample_busy").length, busy.figures.samples);
      const status = d.prepare("SELECT status FROM runs WHERE label = 'before'").get() as {
        status: string;
      };
      assert.equal(status.status, "passed");
    } finally {
      d.close();
    }
  });

  it("diff of two observations (30 % before, 75 % after) shows the busy share moving", async () => {
    assert.equal((await fault("--clear")).code, 0);
    assert.equal((await fault("tenant", "--gpu", "0", "--name", "75")).code, 0);
    const after = tableMean((await observe("after")).stdout);
    const r = await cli("diff", "--before", "before", "--after", "after", "--db", db());
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const m =
      /sim01 GPU 0 \(H100-80GB\) whole GPU: busy mean ([\d.]+) → ([\d.]+) %, under 50 % busy 100 → ([\d.]+) % of the time/.exec(
        r.stdout,
      );
    assert.ok(m, r.stdout);
    // What was recorded, read back: the before's mean (asserted its tenant's in the test above)
    // and the after's as its table printed it, within the 75 % tenant's jitter.
    assert.equal(Number(m[1]), before?.figures.busyMean, m[0]);
    assert.equal(Number(m[2]), after, m[0]);
    assert.ok(Math.abs(after - 75) <= JITTER, m[0]);
    // 75 ± 15 never drops under 50.
    assert.equal(Number(m[3]), 0);
    assert.match(r.stdout, /^utilization:$/m);
    // The idle GPU did not change: no line for it.
    assert.doesNotMatch(r.stdout, /GPU 1 \(H100-80GB\)/);
  });

  it("reports a tenant in a MIG GPU instance through DCGM, and the GPU's share of it", async () => {
    assert.equal((await fault("--clear")).code, 0);
    const dir = stateDir(c, "sim01");
    smi(dir, "-i", "1", "-mig", "1");
    smi(dir, "mig", "-i", "1", "-cgi", "9,9", "-C");
    assert.equal((await fault("holder", "--gpu", "1", "--name", "nv-hostengine")).code, 0);
    const ids = [
      ...smi(dir, "mig", "-lgi", "-i", "1").matchAll(/\|\s+1\s+MIG 3g\.40gb\s+9\s+(\d+)/g),
    ].map((x) => Number(x[1]));
    assert.equal(ids.length, 2);
    assert.equal((await fault("tenant", "--gpu", "1", "--name", `30@gi${ids[0]}`)).code, 0);
    const j = JSON.parse((await observe("mig", "--json")).stdout) as ObserveJson;
    assert.equal(j.nodes[0]!.source, "dcgm");
    const busy = unit(j, 1, ids[0]!);
    assert.equal(busy.profile, "3g.40gb");
    assertTenantMean(busy, 30);
    assert.equal(busy.figures.under50Share, 1);
    assert.ok(busy.figures.memUsedMean! >= 3072 && busy.figures.memUsedMean! < busy.memoryMiB!);
    const other = unit(j, 1, ids[1]!);
    assert.equal(other.figures.idleShare, 1);
    // The GPU as a whole: one of its two equal GIs 30 % busy, the other idle: half of it.
    assertTenantMean(unit(j, 1), 15, JITTER / 2);
  });

  it("Ctrl-C ends the observation early, and what was gathered is still reported and recorded", async () => {
    assert.equal((await fault("--clear")).code, 0);
    assert.equal((await fault("tenant", "--gpu", "0", "--name", "30")).code, 0);
    // An hour's observation, ended by the signal alone.
    const args = ["observe", "-i", c.inventoryPath, "--duration", "1h", "--interval", "1"];
    const p = spawn(
      process.execPath,
      ["--import", "tsx", "test/helpers/cli-entry.ts", ...args, "--label", "cut", "--db", db()],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => {
      out += d;
    });
    const sampled = new Promise<void>((res) =>
      p.stderr.on("data", (d) => {
        err += d;
        if (/sim01 +\[.*\] +\d+ % +[1-9]\d* sample\(s\)/.test(err)) res();
      }),
    );
    await sampled;
    p.kill("SIGINT");
    const code = await new Promise<number | null>((res) => p.on("exit", (c) => res(c)));
    assert.equal(code, 130, `${out}\n${err}`);
    assert.match(out, /^sim01 GPU 0 under 50 % busy \d+ % of the time/m);
    assert.match(out, /label cut\), interrupted: the figures cover the time observed/);
    const d = openDb(db());
    try {
      const run = d.prepare("SELECT id, status FROM runs WHERE label = 'cut'").get() as {
        id: string;
        status: string;
      };
      assert.equal(run.status, "interrupted");
      const n = d
        .prepare(
          "SELECT COUNT(*) AS n FROM measurements WHERE run_id = ? AND metric = 'sample_busy'",
        )
        .get(run.id) as { n: number };
      assert.ok(n.n >= 1, `${n.n} samples recorded`);
    } finally {
      d.close();
    }
  });

  it("a GPU fallen off the bus is named not observed (exit 2); the other is still observed", async () => {
    assert.equal((await fault("--clear")).code, 0);
    assert.equal((await fault("tenant", "--gpu", "0", "--name", "30")).code, 0);
    assert.equal((await fault("gpu-lost", "--gpu", "1")).code, 0);
    const r = await cli(
      ...["observe", "-i", c.inventoryPath, "--duration", "6", "--interval", "1", "--json"],
      ...["--db", db()],
    );
    assert.equal(r.code, 2, r.stderr);
    const j = JSON.parse(r.stdout) as ObserveJson & { nodes: { lost: string[] }[] };
    assert.match(j.nodes[0]!.lost.join("\n"), /^GPU 1 \(0000:[0-9a-f:.]+\): GPU is lost/i);
    assert.deepEqual(
      j.nodes[0]!.units.map((u) => u.gpu),
      [0],
    );
    const busy = unit(j, 0);
    assertTenantMean(busy, 30);
    assert.match(r.stderr, /sim01: GPU 1 \(.*\): GPU is lost.*: not observed/);
    assert.equal((await fault("--clear")).code, 0);
  });

  it("refuses an interval longer than the duration, before touching a node", async () => {
    const r = await cli(
      ...["observe", "-i", c.inventoryPath, "--duration", "2", "--interval", "5", "--db", db()],
    );
    assert.equal(r.code, 3);
    assert.match(r.stderr, /--interval 5 s is longer than --duration 2 s/);
  });
});

describe("slicecheck observe into a shared PostgreSQL (real server, real sshd)", function () {
  this.timeout(180_000);
  const c = useCluster([{ gpu: "H100-80GB", driver: "580.65.06" }]);
  const server = usePostgres();
  const fault = (...a: string[]) => cli("sim", "fault", "sim01", ...a, "-i", c.inventoryPath);

  it("records two observations there, and diff reads them back", async () => {
    const observe = async (label: string) => {
      const r = await cli(
        ...["observe", "-i", c.inventoryPath, "--duration", "6", "--interval", "1"],
        ...["--label", label, "--db", server.url],
      );
      assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
      return tableMean(r.stdout);
    };
    assert.equal((await fault("tenant", "--name", "30")).code, 0);
    const before = await observe("pg-before");
    assert.equal((await fault("--clear")).code, 0);
    assert.equal((await fault("tenant", "--name", "75")).code, 0);
    const after = await observe("pg-after");
    const r = await cli("diff", "--before", "pg-before", "--after", "pg-after", "--db", server.url);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const m = /sim01 GPU 0 \(H100-80GB\) whole GPU: busy mean ([\d.]+) → ([\d.]+) %/.exec(r.stdout);
    assert.ok(m, r.stdout);
    // Read back as recorded, and each its own tenant's (a reading strays at most the jitter).
    assert.deepEqual([Number(m[1]), Number(m[2])], [before, after], m[0]);
    assert.ok(Math.abs(before - 30) <= JITTER && Math.abs(after - 75) <= JITTER, m[0]);
  });
});
