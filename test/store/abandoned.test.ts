// Which `running` runs are marked `abandoned` (SQLite store, real processes): only a run of this
// host whose controller process is really gone. A live controller, another host's run, an old
// row without a controller and a finished run all keep their status: wrongly marking a live run
// is worse than leaving a dead one unmarked.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { hostname } from "node:os";
import { join } from "node:path";
import { markAbandoned, processAlive } from "../../src/store/abandoned.js";
import { openStore } from "../../src/store/store.js";
import { tempDir } from "../helpers/tmp.js";

/** The id of a process that has certainly ended (it ran and was reaped). */
function deadPid(): number {
  const r = spawnSync("sh", ["-c", "echo $$"], { encoding: "utf8" });
  const pid = Number(r.stdout.trim());
  assert.ok(pid > 0 && !processAlive(pid));
  return pid;
}

describe("abandoned runs: a dead controller on this host, and nothing else", () => {
  it("marks only this host's running run whose process is gone", async () => {
    const store = await openStore(join(tempDir("abandoned"), "r.db"));
    try {
      const dead = deadPid();
      const rows: [string, string, string | null, number | null][] = [
        ["dead-here", "running", hostname(), dead],
        ["alive-here", "running", hostname(), process.ppid],
        ["dead-elsewhere", "running", `not-${hostname()}`, dead],
        ["finished-here", "passed", hostname(), dead],
        ["old-row", "running", null, null],
      ];
      for (const [id, status, host, pid] of rows)
        await store.run(
          "INSERT INTO runs (id, started, status, argv, seq, host, pid) VALUES (?, '2026-12-01T00:00:00Z', ?, '[]', 1, ?, ?)",
          [id, status, host, pid],
        );
      assert.deepEqual(await markAbandoned(store, null), ["dead-here"]);
      const after = await store.all<{ id: string; status: string }>(
        "SELECT id, status FROM runs ORDER BY id",
      );
      assert.deepEqual(Object.fromEntries(after.map((r) => [r.id, r.status])), {
        "alive-here": "running",
        "dead-elsewhere": "running",
        "dead-here": "abandoned",
        "finished-here": "passed",
        "old-row": "running",
      });
      // Its own run is never judged by the caller (`except`), and a second sweep changes nothing.
      assert.deepEqual(await markAbandoned(store, "dead-here"), []);
    } finally {
      await store.close();
    }
  });
});
