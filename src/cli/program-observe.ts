// `slicecheck observe`: its definition, in a file of its own so that the command index
// (main.ts) gains one line. The action loads the command's module when it runs (see main.ts).
import type { Command } from "commander";
import type { Out } from "./context.js";
import { parseSeconds } from "./options.js";
import { dbOpts, nodeOpts, type SetCode } from "./program-nodes.js";

export function addObserveCommand(program: Command, io: Out, setCode: SetCode): void {
  dbOpts(
    nodeOpts(program.command("observe"))
      .description(
        "sample what the nodes' tenants do per GPU and GPU instance (DCGM, else nvidia-smi) for a while, without running anything; report busy and idle shares and memory in use, and record them for diff",
      )
      .requiredOption(
        "--duration <duration>",
        "how long to observe: seconds or 30s, 5m, 1h (at most 7 days)",
        parseSeconds("--duration"),
      )
      .option(
        "--interval <duration>",
        "time between samples (default 1s)",
        parseSeconds("--interval"),
        1,
      )
      .option("--label <name>", "a name for the observation (diff --before/--after take it)"),
  )
    .option("--svg <file>", "write a picture: per GPU and GPU instance its busy share over time")
    .option("--json", "machine-readable output, with every sample")
    .action(async (o) =>
      setCode(await (await import("./commands/observe.js")).observeCommand(o, io)),
    );
}
