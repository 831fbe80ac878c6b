// A PATH with every tool of /usr/bin but the named ones: how a node that lacks a tool (perl,
// setsid, timeout) is made on this machine, for the scripts that must notice it.
import { mkdirSync, readdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./tmp.js";

export function pathWithout(names: readonly string[]): string {
  const bin = join(tempDir(`no-${names.join("-")}`), "bin");
  mkdirSync(bin);
  for (const f of readdirSync("/usr/bin"))
    if (!names.includes(f)) symlinkSync(join("/usr/bin", f), join(bin, f));
  return bin;
}
