// A real PostgreSQL for one describe block (started in `before`, stopped by pid in `after`),
// in a temporary folder the unprivileged server account can reach.
import { chmodSync } from "node:fs";
import { join } from "node:path";
import { type LocalPostgres, startPostgres } from "../../sim/src/postgres.js";
import { tempDir } from "./tmp.js";

export function usePostgres(): LocalPostgres {
  const handle = {} as LocalPostgres;
  before(async function () {
    this.timeout(60_000);
    const dir = tempDir("pg");
    // mkdtemp makes it 0700 for root; the server (nobody) must get through it to its own folder.
    chmodSync(dir, 0o755);
    Object.assign(handle, await startPostgres(join(dir, "pg"), { durable: false }));
  });
  after(async () => {
    await handle.stop?.();
  });
  return handle;
}
