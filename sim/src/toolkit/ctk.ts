#!/usr/bin/env node
// The simulated node's `nvidia-ctk`: `--version`, `cdi generate [--output=FILE]` (the spec of the
// node's layout now, ./spec.ts) and `cdi list` (the names in the node's spec folders, after a
// logrus "Found N CDI devices" line on stderr, as the real one logs it). Under `sim fault
// no-toolkit` it is not installed: the shell's "not found", exit 127.
// Its `--version` banner is in answers.ts.
import { parse } from "yaml";
import { readState } from "../nvsmi/state.js";
import { CTK_VERSION_TEXT } from "./answers.js";
import { cdiDirs, readSpecs, specText, writeSpec } from "./spec.js";

const stateDir = process.env.SLICECHECK_SIM_STATE;
if (!stateDir) {
  process.stderr.write("nvidia-ctk (simulated): SLICECHECK_SIM_STATE is not set\n");
  process.exit(2);
}
const state = readState(stateDir);
if (state.noToolkit) {
  process.stderr.write("sh: 1: nvidia-ctk: not found\n");
  process.exit(127);
}
const args = process.argv.slice(2);
const fail = (why: string): never => {
  process.stderr.write(`ERRO[0000] ${why}\n`);
  process.exit(1);
};
if (args[0] === "--version" || args[0] === "-v") {
  process.stdout.write(CTK_VERSION_TEXT);
} else if (args[0] === "cdi" && args[1] === "generate") {
  const i = args.findIndex((a) => a === "--output" || a.startsWith("--output="));
  const output = i < 0 ? null : args[i]!.includes("=") ? args[i]!.split("=")[1]! : args[i + 1];
  if (output === null) process.stdout.write(specText(state));
  else {
    try {
      writeSpec(state, output ?? "", [...cdiDirs(), stateDir]);
    } catch (e) {
      fail((e as Error).message);
    }
    process.stderr.write(`INFO[0000] Generated CDI spec with version 0.5.0\n`);
  }
} else if (args[0] === "cdi" && args[1] === "list") {
  const names: string[] = [];
  for (const s of readSpecs(cdiDirs())) {
    const doc = parse(s.text) as { kind?: string; devices?: { name: unknown }[] } | null;
    for (const d of doc?.devices ?? []) names.push(`${doc?.kind}=${String(d.name)}`);
  }
  process.stderr.write(`INFO[0000] Found ${names.length} CDI devices\n`);
  if (names.length) process.stdout.write(`${names.join("\n")}\n`);
} else fail(`unsupported by the simulated nvidia-ctk: ${args.join(" ") || "(no command)"}`);
