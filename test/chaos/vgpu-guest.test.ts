// A vGPU guest tested by its own promise: its framebuffer is its own (NVIDIA's vGPU gives each
// VM one), so the OOM scenario's aggressor must stop at it; compute is the host scheduler's, so a
// noisy neighbour is a characterisation. Planted with `sim fault NODE vgpu --name guest` (an
// H100-20C: 20 GiB of the 80 GB card); `vgpu-fb-leak` plants a host that lets the guest's
// allocations run past that framebuffer, which the memory check must fail.
import assert from "node:assert/strict";
import { join } from "node:path";
import { newRunId } from "../../src/transport/open.js";
import { SshTransport } from "../../src/transport/ssh.js";
import type { CheckRecord } from "../../src/verdicts/checks.js";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";

describe("vGPU guest: memory isolated by its framebuffer (run --suites isolation, real sshd, simulated H100)", function () {
  this.timeout(420_000);
  // Two guests in one run (nodes run side by side): sim01 keeps its framebuffer, sim02 leaks.
  const c = useCluster([
    { gpu: "H100-80GB", driver: "580.65.06", gpus: 1 },
    { gpu: "H100-80GB", driver: "580.65.06", gpus: 1 },
  ]);
  const clear = async () => {
    for (const n of ["sim01", "sim02"])
      await cli("sim", "fault", n, "--clear", "--inventory", c.inventoryPath);
  };
  const plant = async (node: string, ...args: string[]) => {
    const p = await cli("sim", "fault", node, ...args, "--inventory", c.inventoryPath);
    assert.equal(p.code, 0, p.stderr);
  };

  it("the guest's nvidia-smi shows the vGPU's framebuffer, and its memory stops there", async () => {
    await plant("sim01", "vgpu", "--gpu", "0", "--name", "guest");
    const t = new SshTransport(c.inventory.nodes[0]!, { runId: newRunId() });
    await t.connect();
    try {
      const sh = async (argv: string[]) =>
        (await t.exec({ argv }, { timeoutMs: 30_000 })).stdout.trim();
      const q = ["--query-gpu=memory.total,virtualization_mode", "--format=csv,noheader"];
      assert.equal(await sh(["nvidia-smi", ...q]), "20480 MiB, VGPU");
      assert.match(await sh(["nvidia-smi", "-q"]), /FB Memory Usage\n\s+Total\s+: 20480 MiB/);
      // memhog until out of memory: CUDA's total is the framebuffer and the allocation ends
      // below it (its context and the chunk halving take the rest).
      const m = await sh(["slicecheck-memhog"]);
      assert.match(m, /total_bytes=21474836480 /);
      const got = Number(/allocated_bytes=(\d+)/.exec(m)?.[1]);
      assert.ok(got > 20_000 * 2 ** 20 && got <= 20480 * 2 ** 20, m);
      // Leaking, the same memhog runs on into the card's memory.
      await plant("sim01", "vgpu-fb-leak", "--gpu", "0");
      assert.equal(
        await sh(["nvidia-smi", ...q]),
        "20480 MiB, VGPU",
        "still shows its framebuffer",
      );
      const leaked = Number(/allocated_bytes=(\d+)/.exec(await sh(["slicecheck-memhog"]))?.[1]);
      assert.ok(leaked > 60_000 * 2 ** 20, `leaked ${leaked}`);
    } finally {
      await t.close();
      await clear();
    }
  });

  describe("one isolation run over a guest (sim01) and a leaking guest (sim02)", () => {
    let r: Awaited<ReturnType<typeof cli>>;
    let checks: CheckRecord[] = [];
    const memory = (node: string, mode: string) =>
      checks.find(
        (x) => x.node === node && x.title === "oom: memoryIsolated" && x.parameters?.mode === mode,
      ) as CheckRecord;
    before(async () => {
      for (const n of ["sim01", "sim02"]) await plant(n, "vgpu", "--gpu", "0", "--name", "guest");
      await plant("sim02", "vgpu-fb-leak", "--gpu", "0");
      // No tenant sweep (2 to 7 tenants on each soft route: 27 workloads a route and node, 30 s of
      // this run's 78): the framebuffer's promise is the OOM's to test (soft-partitioning.test.ts
      // has the sweep).
      r = await cli(
        ...["run", "-i", c.inventoryPath, "--suites", "isolation", "--faults", "oom"],
        ...["--tenants", "none", "--duration", "1", "--out", join(c.dir, "guests"), "--json"],
      );
      checks = (JSON.parse(r.stdout) as { checks: CheckRecord[] }).checks;
    });
    after(clear);

    it("an OOM in the guest stops at its framebuffer: memoryIsolated passes, naming the vGPU framebuffer", async () => {
      // The run fails (sim02 leaks); sim01's checks are its own.
      assert.equal(r.code, 1, `${r.stdout.slice(0, 2000)}\n${r.stderr}`);
      const route = checks.find((x) => x.node === "sim01" && x.title === "route")!;
      assert.match(route.message, /vGPU \(guest, framebuffer 20480 MiB\)/);
      assert.match(
        route.message,
        /promises memory isolation \(the vGPU guest's own framebuffer: 20480 MiB\)/,
      );
      assert.match(route.message, /compute shared or throttled by the host's vGPU scheduler/);
      for (const mode of ["time-slicing", "mps"]) {
        const m = memory("sim01", mode);
        assert.ok(m, `${mode}: a memoryIsolated check (${checks.map((x) => x.title).join(", ")})`);
        assert.equal(m.status, "passed", m.message);
        assert.match(m.message, /stopped at \d+ MiB of its 20480 MiB vGPU framebuffer/);
        const got = m.figures?.["aggressor allocated MiB"] as number;
        assert.ok(got > 10_000 && got <= 20480, `allocated ${got} MiB`);
      }
      // MPS with limits inside the guest: the tighter cap, inside the framebuffer.
      assert.match(
        memory("sim01", "mps-limited").message,
        /pinned memory limit \(inside the 20480 MiB vGPU framebuffer\)/,
      );
    });

    it("with vgpu-fb-leak the guest allocates past its framebuffer: memoryIsolated FAILS", async () => {
      for (const mode of ["time-slicing", "mps"]) {
        const m = memory("sim02", mode);
        assert.equal(m.status, "failed", m.message);
        assert.equal(m.code, "ISOLATION_VIOLATION");
        assert.match(m.message, /allocated \d+ MiB past its 20480 MiB vGPU framebuffer/);
      }
      // The MPS limit still holds the capped client, leak or not: that promise is kept.
      const capped = memory("sim02", "mps-limited");
      assert.equal(capped.status, "passed", capped.message);
    });
  });
});
