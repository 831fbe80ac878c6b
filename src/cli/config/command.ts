// The `config` command's own flags: one per setting, with the parser the real command uses, so
// `slicecheck config --duration 5m` shows what `run --duration 5m` would get (and refuses what it
// would refuse).
import type { Command } from "commander";
import type { Out } from "../context.js";
import {
  parseConcurrency,
  parseDbTimeout,
  parseDuration,
  parseIntIn,
  parsePercent,
  parseSeconds,
} from "../options.js";
import { currentSettings } from "./resolve.js";
import { SETTINGS } from "./settings.js";

const PARSERS: Record<string, (v: string) => unknown> = {
  duration: parseDuration,
  tolerance: parsePercent("--tolerance"),
  aggressors: parseIntIn("--aggressors", 1),
  busbwFloor: parseIntIn("--busbw-floor", 1),
  timeout: parseSeconds("--timeout"),
  concurrency: parseConcurrency,
  dbTimeout: parseDbTimeout,
};

export function addConfigCommand(program: Command, io: Out, setCode: (c: number) => void): void {
  const cmd = program
    .command("config")
    .description(
      "print every setting's effective value and its origin (flag, env SLICECHECK_*, slicecheck.config.yaml:LINE, default)",
    );
  for (const s of SETTINGS) {
    const parse = PARSERS[s.attr];
    if (s.kind === "bool") cmd.option(s.flag, s.help);
    else if (parse) cmd.option(`${s.flag} <value>`, s.help, parse);
    else cmd.option(`${s.flag} <value>`, s.help);
  }
  cmd
    .option("--json", "print {file, settings:[{key, env, flag, value, shown, origin}]}")
    .action(async (o) =>
      setCode((await import("../commands/config.js")).configCommand(o, currentSettings(), io)),
    );
}
