// advise against a real sacct: Debian's slurmdbd on MariaDB records three real jobs (one GPU,
// two GPUs, a batch job of one typed GPU), `sacct -P` reads them back from the database, and the
// advise parser and command read that output as they read the fixtures. Without NVML the
// database holds no gres/gpumem, so advise must count the jobs as whole-card ones and say so.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseSacct, SACCT_FORMAT } from "../../src/report/advise/sacct.js";
import { cli } from "../helpers/cli.js";
import { useAccountingCluster } from "../helpers/slurmdbd.js";

describe("advise on a real sacct (slurmdbd + MariaDB, real jobs)", function () {
  this.timeout(180_000);
  const c = useAccountingCluster();
  const SACCT = `sacct -P --allusers --starttime=now-1hour --format=${SACCT_FORMAT.join(",")}`;

  it("parses sacct's own output: jobs with their steps folded, GPUs from AllocTRES, elapsed times", async () => {
    c.sh("srun -J infer-a --gres=gpu:1 -t 1 sh -c 'sleep 2'");
    c.sh("srun -J ddp-b --gres=gpu:2 -t 1 sh -c 'sleep 1'");
    c.sh("sbatch -J batch-c --gres=gpu:h100:1 -o /dev/null --wrap 'sleep 1'");
    // Job records reach the database after the job ends: wait until all three are there, done.
    let text = "";
    const end = Date.now() + 60_000;
    while (Date.now() < end) {
      text = c.sh(SACCT);
      const done = text.split("\n").filter((l) => /^\d+\|[^|]*\|[^|]*\|COMPLETED\|/.test(l));
      if (done.length === 3 && text.includes("batch-c") && /^\d+\.batch\|/m.test(text)) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const file = join(c.dir, "sacct.txt");
    writeFileSync(file, text);
    const r = parseSacct(text, { file });
    assert.equal(r.header, true);
    const byName = new Map(r.jobs.map((j) => [j.name, j]));
    assert.deepEqual(
      ["infer-a", "ddp-b", "batch-c"].map((n) => [byName.get(n)?.gpus, byName.get(n)?.gpuType]),
      [
        [1, "h100"],
        [2, "h100"],
        [1, "h100"],
      ],
      text,
    );
    for (const j of r.jobs) {
      assert.equal(j.state, "COMPLETED");
      assert.ok(j.lines >= 2, `${j.id} folded its steps: ${text}`);
      // Elapsed read from sacct's [DD-]HH:MM:SS: at least the job's own sleep. No upper bound: how
      // long a job takes on a loaded machine is the bench's business, not a test's.
      assert.ok(j.elapsedS >= 1, `${j.id} elapsed ${j.elapsedS}`);
      assert.equal(j.gpuMemUsedBytes, null);
    }

    const advice = await cli("advise", "--sacct", file, "--product", "H100-80GB", "--json");
    assert.equal(advice.code, 0, advice.stderr);
    const out = JSON.parse(advice.stdout);
    assert.equal(out.verdict, "do-not-slice");
    assert.deepEqual(
      out.jobs.map((j: { fit: { basis: string } }) => j.fit.basis),
      ["unknown", "unknown", "unknown"],
    );
  });
});
