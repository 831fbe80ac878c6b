// The bounds on every wait for the records database that need no server: the SQLite lock wait
// (another process holding the write lock) and the --db-timeout setting's parsing. The stopped
// PostgreSQL server is postgres-stopped.test.ts.
import assert from "node:assert/strict";
import { join } from "node:path";
import Database from "better-sqlite3";
import { isSlicecheckError } from "../../src/errors.js";
import { isDbTimeout, openStore } from "../../src/store/store.js";
import { cli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

describe("records: --db-timeout", () => {
  it("a SQLite write behind another process's write lock gives up after the timeout, naming the file", async () => {
    const file = join(tempDir("dbt"), "r.db");
    const store = await openStore(file, { timeoutMs: 300 });
    try {
      const other = new Database(file);
      other.exec("BEGIN IMMEDIATE");
      try {
        await assert.rejects(
          store.transaction((tx) => tx.run("DELETE FROM runs")),
          (e: unknown) => {
            assert.ok(isDbTimeout(e), String(e));
            assert.ok(isSlicecheckError(e, "WRITE"));
            assert.match(
              (e as Error).message,
              new RegExp(
                `records database ${file.replace(/[.]/g, "\\.")}: a write got no answer within 0\\.3 s \\(--db-timeout\\)`,
              ),
            );
            return true;
          },
        );
      } finally {
        other.exec("ROLLBACK");
        other.close();
      }
      // The lock gone, the same store writes again: the timeout broke nothing.
      await store.transaction((tx) => tx.run("DELETE FROM runs"));
    } finally {
      await store.close();
    }
  });

  it("is refused with exit 3 naming the flag when it is no duration in range", async () => {
    for (const bad of ["0", "soon", "2h"]) {
      const r = await cli("config", "--db-timeout", bad);
      assert.equal(r.code, 3, `${bad}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /--db-timeout expects a duration from 1 s to 1 h/);
    }
  });

  it("comes from SLICECHECK_DB_TIMEOUT and shows in `config`", async () => {
    const before = process.env.SLICECHECK_DB_TIMEOUT;
    process.env.SLICECHECK_DB_TIMEOUT = "7s";
    try {
      const r = await cli("config", "--json");
      assert.equal(r.code, 0, r.stderr);
      const s = (
        JSON.parse(r.stdout) as { settings: { key: string; value: unknown; origin: string }[] }
      ).settings.find((x) => x.key === "db_timeout");
      assert.deepEqual([s?.value, s?.origin], [7, "env SLICECHECK_DB_TIMEOUT"]);
    } finally {
      if (before === undefined) delete process.env.SLICECHECK_DB_TIMEOUT;
      else process.env.SLICECHECK_DB_TIMEOUT = before;
    }
  });
});
