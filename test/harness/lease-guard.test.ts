// Every change is guarded by the node lease (real sshd, simulated H100): the lease's length is
// the run's own deadline for a silent node; a change whose lease is no longer this run's
// generation is refused on the node itself, mid-apply, and a restore then refuses too.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isSlicecheckError } from "../../src/errors.js";
import { openSessions } from "../../src/harness/session.js";
import { applyLayout, restoreNodes } from "../../src/mig/apply/index.js";
import { loadLayout, selectConfig } from "../../src/mig/layout/index.js";
import { newRunId } from "../../src/transport/open.js";
import {
  DEFAULT_LEASE_S,
  HEARTBEAT_INTERVAL_MS,
  HEARTBEAT_TIMEOUT_S,
  KEEPALIVE_COUNT_MAX,
  KEEPALIVE_INTERVAL_MS,
} from "../../src/transport/remote-scripts.js";
import type { ExecOptions, Transport } from "../../src/transport/types.js";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";
import { parentOf } from "../helpers/procs.js";
import { freshNode, journalsExist, layoutOf } from "../mig/apply-helpers.js";

const DEFAULT = join(import.meta.dirname, "../../fixtures/layouts/default.yaml");

/** Pids of the node lease holders of `runId` on this machine (the simulated node's shells). */
function holders(runId: string): number[] {
  const found = readdirSync("/proc")
    .filter((d) => {
      if (!/^\d+$/.test(d)) return false;
      try {
        const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8");
        // sh, or bash where the node has it (lock.ts).
        return (
          /^(sh|\/bin\/bash)\0-c\0/.test(cmd) && cmd.includes("LOCK_OK") && cmd.includes(runId)
        );
      } catch {
        return false;
      }
    })
    .map(Number);
  // A fork of the holder (a command substitution, an `mv` not yet exec'd) carries its command
  // line for an instant: only the shell whose parent is not itself a holder is the holder. A
  // fork that ended between the two reads has no parent left to read (0): it was no holder.
  return found.filter((p) => {
    const parent = parentOf(p);
    return parent !== 0 && !found.includes(parent);
  });
}

describe("the node lease guards every change (real sshd, simulated H100)", function () {
  this.timeout(90_000);
  const c = useCluster([{ gpu: "H100-80GB", driver: "580.65.06" }]);

  it("the lease outlives the run's own deadline for a silent node, and the node's watchdogs", () => {
    // The run's keepalives give up on a silent node after (count + 1) × interval; the lease
    // must last at least that long plus a heartbeat in flight, or another controller could
    // take a node this run may still come back to.
    const giveUpMs = (KEEPALIVE_COUNT_MAX + 1) * KEEPALIVE_INTERVAL_MS;
    assert.equal(DEFAULT_LEASE_S, 45);
    assert.ok(DEFAULT_LEASE_S * 1000 >= giveUpMs + HEARTBEAT_INTERVAL_MS);
    // …and once it runs out, the run's commands there have already been stopped.
    assert.ok(DEFAULT_LEASE_S > HEARTBEAT_TIMEOUT_S + 2);
  });

  it("--lease shorter than two heartbeats is bad input (exit 3, the flag named), before any node is touched", async () => {
    const r = await cli(
      "apply",
      "-i",
      c.inventoryPath,
      DEFAULT,
      "-c",
      "all-1g.10gb",
      "--lease",
      "5",
    );
    assert.equal(r.code, 3, r.stdout + r.stderr);
    assert.match(r.stderr, /--lease expects a duration from 10 s to 1 h/);
  });

  it("another generation on the node mid-apply: the next change is refused on the node, nothing more changes, and restore refuses", async () => {
    const dir = freshNode(c, "sim01");
    const before = layoutOf(dir);
    const runId = newRunId();
    const nodes = c.inventory.nodes.filter((n) => n.name === "sim01");
    const [session] = await openSessions(nodes, runId, { lock: true, command: "test" });
    assert.ok(session && !session.error, String(session?.error));
    const lease = join(dir, "node.lease");
    const [gen, , state, tag] = readFileSync(lease, "utf8").trim().split(" ");
    assert.equal(state, "held");
    assert.equal(tag, `${runId}@sim01`);
    const holder = holders(runId);
    assert.equal(holder.length, 1, "one holder shell on the node");
    // After the journal and the first change (MIG on), another controller's generation appears
    // (as after a takeover); the holder is stopped so that it cannot renew over it.
    let leased = 0;
    const planted = `${Number(gen) + 1} ${Math.floor(Date.now() / 1000) + 600} held sc-other@sim01\n`;
    const spy: Transport = Object.create(session!, {
      exec: {
        value: async (cmd: Parameters<Transport["exec"]>[0], o?: ExecOptions) => {
          const r = await session!.exec(cmd, o);
          if (o?.leased && ++leased === 2) {
            process.kill(holder[0]!, "SIGSTOP");
            writeFileSync(lease, planted);
          }
          return r;
        },
      },
    });
    const journalDir = join(c.dir, "journal");
    try {
      const config = selectConfig(loadLayout(DEFAULT), "all-1g.10gb");
      const transports = new Map([["sim01", spy]]);
      const [r] = await applyLayout(nodes, config, { runId, journalDir, transports });
      assert.equal(r?.status, "failed", JSON.stringify(r));
      const g = r!.gpus[0]!;
      assert.match(
        g.error ?? "",
        /sim01: this run's lease on the node was lost \(the node's lease is now generation \d+, held by sc-other@sim01; this run held generation \d+\)/,
      );
      // The first change went through, the creation did not: MIG on, no GI.
      const now = layoutOf(dir)[0]!;
      assert.deepEqual([now.mig.current, now.gis.length], [true, 0]);
      assert.ok(isSlicecheckError(session!.error, "LEASE_LOST"), "the session is broken");
      // Restore re-validates first: refused, says so, changes nothing, keeps the journal.
      const [back] = await restoreNodes(nodes, { runId, journalDir, transports });
      assert.equal(back?.status, "refused");
      assert.equal(back?.error?.code, "LEASE_LOST");
      assert.deepEqual(layoutOf(dir)[0], now);
      assert.deepEqual(journalsExist(c, "sim01"), [true, true]);
    } finally {
      process.kill(holder[0]!, "SIGCONT");
      await session!.close();
    }
    assert.notDeepEqual(layoutOf(dir), before);
  });
});
