// Tools first on a PATH of their own that note each call (a line with their name in one log)
// and then run the real tool as asked: which processes a node-side script starts, without
// changing what it does.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./tmp.js";

export interface NotingTools {
  /** The folder of the wrappers, then this process's PATH. */
  path: string;
  /** The tools called since the start or the last `clear`, in order. */
  calls(): string[];
  clear(): void;
}

export function notingTools(tools: readonly string[]): NotingTools {
  const dir = tempDir("noting");
  const log = join(dir, "calls");
  writeFileSync(log, "");
  for (const tool of tools) {
    const real = spawnSync("sh", ["-c", `command -v ${tool}`], { encoding: "utf8" }).stdout.trim();
    if (!real) throw new Error(`${tool} is not on this machine's PATH`);
    writeFileSync(join(dir, tool), `#!/bin/sh\necho ${tool} >> '${log}'\nexec ${real} "$@"\n`, {
      mode: 0o755,
    });
  }
  return {
    path: `${dir}:${process.env.PATH}`,
    calls: () => readFileSync(log, "utf8").split("\n").filter(Boolean),
    clear: () => writeFileSync(log, ""),
  };
}
