// The `slicecheck` command line. Commands are thin: they parse options and call the layers.
import { Command, CommanderError, Option } from "commander";
import { EXIT, exitCodeOf, isSlicecheckError, SlicecheckError } from "../errors.js";
import { cleanupCommand } from "./commands/cleanup.js";
import { doctorCommand } from "./commands/doctor.js";
import { execCommand } from "./commands/exec.js";
import { PARSE_KINDS, parseCommand } from "./commands/parse.js";
import { planCommand } from "./commands/plan.js";
import { simDownCommand, simStatusCommand, simUpCommand } from "./commands/sim.js";
import { type Out, parsePositiveInt, parsePositiveNumber, stdio } from "./context.js";

const VERSION = "0.1.0";

function nodeOpts(cmd: Command): Command {
  return cmd
    .option(
      "-i, --inventory <path>",
      "inventory file (native or Ansible YAML; default $SLICECHECK_INVENTORY or inventory/sim.yaml)",
    )
    .option(
      "--nodes <selector>",
      "nodes to act on: names, gpu[01-04], @group, tag:NAME, comma lists (default: all)",
    );
}

export function buildProgram(io: Out, setCode: (c: number) => void): Command {
  const program = new Command("slicecheck")
    .description("Chaos and validation test harness for MIG-partitioned GPU clusters")
    .version(VERSION)
    .showHelpAfterError("(run with --help for usage)")
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) })
    .exitOverride();

  nodeOpts(program.command("exec"))
    .description("run one command on many nodes at once (each argument is shell-quoted)")
    .argument("<cmd...>", "the command and its arguments, after --")
    .option("--timeout <s>", "per-node deadline in seconds", parsePositiveNumber("--timeout"), 120)
    .option("--concurrency <n>", "nodes at once", parsePositiveInt("--concurrency"), 64)
    .option("--shell", "pass the command to the node's sh -c as one line (pipes, globs)")
    .option("--json", "print {nodes:[{name,exitCode,stdout,stderr,error}]}")
    .action(async (cmd: string[], o) => setCode(await execCommand(cmd, o, io)));

  nodeOpts(program.command("doctor"))
    .description("check reachability, host keys, login, sudo, driver, MIG capability and tools")
    .option("--timeout <s>", "per-node deadline in seconds", parsePositiveNumber("--timeout"), 60)
    .option("--json", "machine-readable output")
    .action(async (o) => setCode(await doctorCommand(o, io)));

  nodeOpts(program.command("cleanup"))
    .description("find and kill the processes a run left on its nodes")
    .requiredOption(
      "--run <id>",
      "the run id (printed by every command that starts remote processes)",
    )
    .option("--dry-run", "list, do not kill")
    .option("--json", "machine-readable output")
    .action(async (o) => setCode(await cleanupCommand(o, io)));

  program
    .command("parse")
    .description("parse a captured output with slicecheck's parsers (exit 3 on a parse error)")
    .argument("<kind>", PARSE_KINDS.join(" "))
    .argument("<file>", "the captured output; leading `# source:` lines are ignored")
    .option("--json", "print JSON (the documented interface) instead of YAML")
    .action((kind: string, file: string, o) => setCode(parseCommand(kind, file, o, io)));

  program
    .command("plan")
    .description(
      "offline: does a mig-parted layout fit a GPU and driver? placements and commands, or why not",
    )
    .argument("[layout]", "a mig-parted config file (version: v1, mig-configs: …)")
    .option("-c, --config <name>", "the config inside the layout file")
    .requiredOption(
      "--gpu <product>",
      "A30, A100-40GB, A100-80GB, H100-80GB, H100-PCIE, H100-NVL, GH200-96GB, H200, B200, or the nvidia-smi name",
    )
    .option("--driver <version>", "driver version (default: the newest catalogued)")
    .option("--enumerate", "list every combination of GPU-instance profiles that fits")
    .option("--json", "machine-readable output")
    .action(async (layout: string | undefined, o) => setCode(await planCommand(layout, o, io)));

  const sim = program
    .command("sim")
    .description("the built-in simulated cluster (real sshd per node, simulated GPUs)");
  sim
    .command("up")
    .description("start (or reconcile) a simulated cluster and write its inventory")
    .option("--nodes <n>", "number of nodes", parsePositiveInt("--nodes"), 4)
    .option(
      "--gpu <product>",
      "A30, A100-40GB, A100-80GB, H100-80GB, H100-PCIE, H100-NVL, GH200-96GB, H200, B200",
      "H100-80GB",
    )
    .option("--gpus-per-node <k>", "GPUs per node", parsePositiveInt("--gpus-per-node"), 1)
    .option("--driver <version>", "driver version (default: newest catalogued)")
    .option(
      "--spec <file>",
      "YAML spec for mixed clusters: nodes: [{gpu, gpus, driver, count, name}]",
    )
    .option("--inventory <path>", "where to write the inventory", "inventory/sim.yaml")
    .option("--json", "machine-readable output")
    .action(async (o) => setCode(await simUpCommand(o, io)));
  sim
    .command("status")
    .option("--inventory <path>", "the cluster's inventory", "inventory/sim.yaml")
    .option("--json", "print {nodes:[{name,host,port,gpu,gpus,driver,pid}]}")
    .action((o) => setCode(simStatusCommand(o, io)));
  sim
    .command("down")
    .option("--inventory <path>", "the cluster's inventory", "inventory/sim.yaml")
    .action(async (o) => setCode(await simDownCommand(o, io)));

  program.addOption(new Option("--debug", "print stack traces").hideHelp());
  return program;
}

export async function main(argv: string[], io: Out = stdio): Promise<number> {
  let code: number = EXIT.ok;
  const program = buildProgram(io, (c) => {
    code = c;
  });
  try {
    await program.parseAsync(argv);
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (
        err.code === "commander.helpDisplayed" ||
        err.code === "commander.version" ||
        err.code === "commander.help"
      )
        return EXIT.ok;
      return EXIT.badInput;
    }
    if (isSlicecheckError(err)) {
      io.err(`slicecheck: ${err.message} [${err.code}]`);
    } else {
      io.err(
        `slicecheck: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
      );
    }
    if (argv.includes("--debug") && err instanceof Error && err.stack) io.err(err.stack);
    return exitCodeOf(err);
  }
}

export { SlicecheckError };
