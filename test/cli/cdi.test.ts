// The container toolkit after a relayout (issue 23): a CDI spec generated once (`sim fault
// cdi-stale`) no longer names the MIG devices a run's layout created, so the run's check of the
// layout fails CDI_STALE with the fix; `--regenerate-cdi` runs `nvidia-ctk cdi generate` after
// the apply and the restore and the check passes; doctor names the toolkit and the spec's state.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { clearFaults, plantFault } from "../../sim/src/faults.js";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";

const LAYOUTS = join(import.meta.dirname, "../../fixtures/layouts");

interface Check {
  suite: string;
  title: string;
  status: string;
  code: string;
  message: string;
}

describe("CDI spec against the run's layout (real sshd, simulated A100 with the toolkit)", function () {
  this.timeout(180_000);
  const c = useCluster([{ gpu: "A100-40GB", driver: "535.183.01" }]);
  const state = () => join(c.dir, ".sim.d/nodes/sim01/state");
  const on = (...args: string[]) => cli(...args, "-i", c.inventoryPath, "--nodes", "sim01");
  const run = async (name: string, ...extra: string[]) => {
    const out = join(c.dir, name);
    const r = await on(
      "run",
      "--layout",
      join(LAYOUTS, "default.yaml"),
      "-c",
      "all-1g.5gb",
      "--suites",
      "layout",
      "--out",
      out,
      "--db",
      join(c.dir, "h.db"),
      ...extra,
    );
    const checks = readFileSync(join(out, "checks.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Check);
    return { r, cdi: checks.filter((x) => x.title.startsWith("CDI spec")) };
  };
  const doctor = async () => {
    const r = await on("doctor", "--json");
    return (
      JSON.parse(r.stdout) as { nodes: { toolkit: Record<string, unknown>; warnings: string[] }[] }
    ).nodes[0]!;
  };
  afterEach(() => clearFaults(state()));

  it("a node without a CDI spec: no CDI check, doctor says `absent`", async () => {
    const d = await doctor();
    assert.equal(d.toolkit.ctk, "1.17.8");
    assert.equal(d.toolkit.cdi, "absent");
    assert.deepEqual(d.toolkit.containerCli, { driver: "535.183.01", cuda: "12.2" });
    const { r, cdi } = await run("run-none");
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.deepEqual(cdi, []);
  });

  it("a spec generated before the relayout fails CDI_STALE with its fix; --regenerate-cdi passes", async () => {
    await plantFault(state(), "cdi-stale", {});
    const spec = join(state(), "cdi", "nvidia.yaml");
    assert.ok(existsSync(spec));
    assert.equal((await doctor()).toolkit.cdi, "fresh");

    const stale = await run("run-stale");
    assert.equal(stale.r.code, 1, stale.r.stdout + stale.r.stderr);
    assert.equal(stale.cdi.length, 1);
    assert.equal(stale.cdi[0]!.status, "failed");
    assert.equal(stale.cdi[0]!.code, "CDI_STALE");
    assert.match(stale.cdi[0]!.message, /live MIG devices it does not name: MIG-/);
    assert.match(
      stale.cdi[0]!.message,
      new RegExp(`fix: nvidia-ctk cdi generate --output=${spec}`),
    );

    const fixed = await run("run-regen", "--regenerate-cdi");
    assert.equal(fixed.r.code, 0, fixed.r.stdout + fixed.r.stderr);
    assert.equal(fixed.cdi[0]!.status, "passed");
    assert.match(fixed.cdi[0]!.message, /names every MIG device \(7\).*regenerated/);
    // Regenerated again after the restore: it follows the layout the node was put back in.
    assert.match(fixed.r.stderr, /sim01: CDI spec regenerated after the restore/);
    assert.equal((await doctor()).toolkit.cdi, "fresh");
  });

  it("doctor after a relayout by hand: STALE with the fix; no toolkit: `none`", async () => {
    await plantFault(state(), "cdi-stale", {});
    const a = await on("apply", join(LAYOUTS, "default.yaml"), "-c", "all-1g.5gb");
    assert.equal(a.code, 0, a.stdout + a.stderr);
    try {
      const d = await doctor();
      assert.equal(d.toolkit.cdi, "stale");
      assert.ok(
        d.warnings.some((w) => /\[CDI_STALE\]/.test(w) && /nvidia-ctk cdi generate/.test(w)),
      );
      const table = await on("doctor");
      assert.match(table.stdout, /STALE/);
      await plantFault(state(), "no-toolkit", {});
      const none = await doctor();
      assert.equal(none.toolkit.ctk, null);
      assert.equal(none.toolkit.containerCli, null);
    } finally {
      await on("restore");
    }
  });

  it("--regenerate-cdi without --layout is refused (exit 3)", async () => {
    const r = await on("run", "--suites", "stress", "--regenerate-cdi");
    assert.equal(r.code, 3, r.stdout + r.stderr);
    assert.match(r.stderr, /--regenerate-cdi/);
  });
});
