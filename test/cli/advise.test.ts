// `slicecheck advise` end to end: `--slurm` runs sacct on a simulated node over real SSH, whose
// accounting answers from a planted job history (`sim fault NODE sacct --name …`), reads the
// product from the node's nvidia-smi, and recommends; `--sacct FILE` reads a capture and names
// a bad line FILE:LINE with exit 3.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";

describe("slicecheck advise (real sshd, simulated H100 node with Slurm accounting)", function () {
  this.timeout(120_000);
  const c = useCluster([{ gpu: "H100-80GB", gpus: 1 }]);
  const plant = (name: string) =>
    cli("sim", "fault", "sim01", "sacct", "--name", name, "--inventory", c.inventoryPath);
  const advise = (...extra: string[]) =>
    cli("advise", "--slurm", "-i", c.inventoryPath, "--nodes", "sim01", ...extra);

  it("without accounting on the node, says sacct failed there (exit 2), not that there were no jobs", async () => {
    const r = await advise();
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(
      r.stderr,
      /sacct on sim01 failed \(exit 1\): sacct: error: Slurm accounting storage is disabled/,
    );
  });

  it("recommends a 1g-heavy layout for the small-job history, planned on the node's H100", async () => {
    assert.equal((await plant("small-jobs")).code, 0);
    const svg = join(c.dir, "small.svg");
    const r = await advise("--svg", svg);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^sacct on sim01: 51 GPU jobs, .* product H100-80GB$/m);
    assert.match(r.stdout, /^advice: slice every GPU: 1g\.10gb × \d/m);
    assert.match(r.stdout, /nvidia-smi mig -cgi 19:0 -C -i 0/);
    const j = JSON.parse((await advise("--json")).stdout);
    assert.equal(j.verdict, "slice");
    const layout = j.advice.layout as Record<string, number>;
    const total = Object.values(layout).reduce((s, n) => s + n, 0);
    assert.ok((layout["1g.10gb"] ?? 0) / total >= 0.5, JSON.stringify(layout));
    assert.equal(j.advice.plan.fits, true);
    assert.equal(j.jobs.find((x: { id: string }) => x.id === "5200").fits["H100-80GB"], "3g.40gb");
    const picture = readFileSync(svg, "utf8");
    assert.match(picture, /data-label="1 GPU" data-jobs="50"/);
    assert.match(picture, /data-label="2 GPU" data-jobs="1"/);
  });

  it("says do not slice for the 8-GPU-job history, and --clear takes the accounting away again", async () => {
    assert.equal((await plant("big-jobs")).code, 0);
    const r = await advise("--product", "H100-80GB", "--node-count", "4");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^advice: do not slice: keep whole cards$/m);
    assert.match(r.stdout, /^ {7}8 +12 /m);
    assert.equal(
      (await cli("sim", "fault", "sim01", "--clear", "--inventory", c.inventoryPath)).code,
      0,
    );
    assert.equal((await advise()).code, 2);
  });

  it("reads a sacct capture from a file; a bad line is exit 3 with FILE:LINE", async () => {
    const file = join(c.dir, "history.txt");
    writeFileSync(
      file,
      "JobID|JobName|Partition|State|Elapsed|AllocTRES|ReqTRES|TRESUsageInMax\n1|a|gpu|COMPLETED|01:00:00|gres/gpu=1||gres/gpumem=2G\n2|b|gpu|COMPLETED|soon|gres/gpu=1||\n",
    );
    const r = await cli("advise", "--sacct", file, "--product", "A30");
    assert.equal(r.code, 3);
    assert.match(
      r.stderr,
      new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:3: Elapsed 'soon' is not`),
    );
    const none = await cli("advise", "--sacct", file);
    assert.equal(none.code, 3);
    assert.match(none.stderr, /advise needs the product/);
  });
});
