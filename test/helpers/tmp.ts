// Temporary folders for tests, removed when the whole run ends (a root-level hook), so that
// `npm test` leaves nothing in /tmp.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made: string[] = [];

export function tempDir(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `slicecheck-${name}-`));
  made.push(dir);
  return dir;
}

after(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});
