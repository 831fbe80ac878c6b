// The `slicecheck` command line. Commands are thin: they parse options and call the layers.
import { Command, CommanderError, Option } from "commander";
import { EXIT, exitCodeOf, isSlicecheckError, SlicecheckError } from "../errors.js";
import { type Out, parseGpuIndex, parsePositiveInt, stdio } from "./context.js";
import {
  parseConcurrency,
  parseDuration,
  parseIntIn,
  parsePercent,
  parseSeconds,
} from "./options.js";

// Commands are loaded when they run: `slicecheck exec` should not pay for the planner, the
// parsers and the report code at every start (the bench counts start-up time).
const PARSE_KINDS =
  "gpus query lgip lgipp lgi lci lcip mig-op table apps xid nccl-tests gpu-burn dcgmi";

const VERSION = "0.1.0";

function nodeOpts(cmd: Command): Command {
  return cmd
    .option(
      "-i, --inventory <path>",
      "inventory file (native or Ansible YAML; default $SLICECHECK_INVENTORY or inventory/sim.yaml)",
    )
    .option(
      "--nodes <selector>",
      "nodes to act on: names, gpu[01-04], @group, tag:NAME, all, !TERM to leave out, comma lists (default: all)",
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
    .description(
      "run one command on many nodes at once: one argument runs through the node's shell (as with ssh and pdsh), several are quoted one by one",
    )
    .argument("<cmd...>", "the command and its arguments, after --")
    .option("-x, --exclude <selector>", "leave these nodes out (same grammar as --nodes)")
    .option("-b, --gather", "print each distinct output once under its nodes (like clush -b)")
    .option(
      "--timeout <s>",
      "per-node deadline in seconds (at most 7 days)",
      parseSeconds("--timeout"),
      120,
    )
    .option("--concurrency <n>", "nodes at once (1-1024)", parseConcurrency, 64)
    .option("--shell", "join several arguments into one line for the node's shell")
    .option("--json", "print {nodes:[{name,exitCode,stdout,stderr,error}]}")
    .action(async (cmd: string[], o) =>
      setCode(await (await import("./commands/exec.js")).execCommand(cmd, o, io)),
    );

  nodeOpts(program.command("inventory"))
    .description(
      "show every node as resolved from the inventory and ssh_config, and where each value came from (connects to nothing)",
    )
    .option("--list", "every node and group (the default)")
    .option("--host <name>", "one node, each value with its origin (file:line)")
    .option("--json", "machine-readable output")
    .action(async (o) =>
      setCode((await import("./commands/inventory.js")).inventoryCommand(o, io)),
    );

  nodeOpts(program.command("doctor"))
    .description("check reachability, host keys, login, sudo, driver, MIG capability and tools")
    .option(
      "--timeout <s>",
      "per-node deadline in seconds (at most 7 days)",
      parseSeconds("--timeout"),
      60,
    )
    .option("--json", "machine-readable output")
    .action(async (o) =>
      setCode(await (await import("./commands/doctor.js")).doctorCommand(o, io)),
    );

  nodeOpts(program.command("cleanup"))
    .description("find and kill the processes a run left on its nodes")
    .requiredOption(
      "--run <id>",
      "the run id (printed by every command that starts remote processes)",
    )
    .option("--dry-run", "list, do not kill")
    .option("--json", "machine-readable output")
    .action(async (o) =>
      setCode(await (await import("./commands/cleanup.js")).cleanupCommand(o, io)),
    );

  program
    .command("parse")
    .description("parse a captured output with slicecheck's parsers (exit 3 on a parse error)")
    .argument("<kind>", PARSE_KINDS)
    .argument("<file>", "the captured output; leading `# source:` lines are ignored")
    .option("--json", "print JSON (the documented interface) instead of YAML")
    .option(
      "--fields <list>",
      "query/apps: the fields of a headerless --format=csv,noheader output, as given to --query-gpu",
    )
    .action(async (kind: string, file: string, o) =>
      setCode((await import("./commands/parse.js")).parseCommand(kind, file, o, io)),
    );

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
    .action(async (layout: string | undefined, o) =>
      setCode(await (await import("./commands/plan.js")).planCommand(layout, o, io)),
    );

  nodeOpts(program.command("apply"))
    .description(
      "bring the nodes' GPUs to a mig-parted layout: interlocks, journal, change, verify",
    )
    .argument("<layout>", "a mig-parted config file (version: v1, mig-configs: …)")
    .option("-c, --config <name>", "the config inside the layout file")
    .option("--dry-run", "print every command per node and GPU; change nothing")
    .option("--allow-reset", "reset an Ampere GPU whose MIG mode change stays pending")
    .option("--keep", "recorded in the journal: `run` then leaves the layout in place")
    .option("--journal-dir <dir>", "where the local journal copies go", "reports/journal")
    .option("--json", "machine-readable output")
    .action(async (layout: string, o) =>
      setCode(await (await import("./commands/apply.js")).applyCommand(layout, o, io)),
    );

  nodeOpts(program.command("assert"))
    .description("does every GPU match the layout? prints what differs (exit 1 on drift)")
    .argument("<layout>", "a mig-parted config file")
    .option("-c, --config <name>", "the config inside the layout file")
    .option("--json", "machine-readable output")
    .action(async (layout: string, o) =>
      setCode(await (await import("./commands/assert.js")).assertCommand(layout, o, io)),
    );

  nodeOpts(program.command("restore"))
    .description("put back the MIG state the journal recorded, verify it, remove the journal")
    .option("--journal-dir <dir>", "where the local journal copies are", "reports/journal")
    .option("--allow-reset", "reset an Ampere GPU whose MIG mode change stays pending")
    .option("--dry-run", "print the commands; change nothing")
    .option("--json", "machine-readable output")
    .action(async (o) =>
      setCode(await (await import("./commands/restore.js")).restoreCommand(o, io)),
    );

  nodeOpts(program.command("run"))
    .description(
      "run the suites (mocha files of suites/, and your own) on every MIG instance of the selected nodes",
    )
    .option(
      "--suites <list>",
      "comma list of built-in suites (stress, nccl, isolation, layout (with --layout), health, regression) and suite files (./my-suite.mjs)",
      "stress",
    )
    .option("--grep <pattern>", "run only the tests whose full title matches this pattern")
    .option(
      "--list",
      "print the tests that would run per node, GPU and instance (read-only discovery) and exit",
    )
    .option("--bail", "stop at the first check that does not pass")
    .option(
      "--faults <list>",
      "isolation: faults to inject: oom, crash, kill, hang, noisy (default all)",
    )
    .option(
      "--tolerance <pct>",
      "isolation and regression: allowed throughput loss in percent, 5 or 5% (default 5)",
      parsePercent("--tolerance"),
    )
    .option(
      "--aggressors <n>",
      "isolation: at most N aggressors per GPU, the first instances (default every instance)",
      parseIntIn("--aggressors", 1),
    )
    .option(
      "--tenants <list>",
      "isolation on soft routes (time-slicing, MPS): tenant counts whose per-tenant slowdown is measured, 2-7, 2,4,7 or none (default 2-7)",
    )
    .option("--duration <s>", "seconds each workload runs (1 s to 7 days)", parseDuration, 30)
    .option(
      "--out <dir>",
      "where logs, measurements and the summary go (default reports/runs/<run id>)",
    )
    .option(
      "--layout <file>",
      "apply this mig-parted layout first (and restore the original after)",
    )
    .option("-c, --config <name>", "the config inside the --layout file")
    .option(
      "--keep",
      "leave the layout in place after the run (restore later with `slicecheck restore`)",
    )
    .option("--allow-reset", "reset an Ampere GPU whose MIG mode change stays pending")
    .option("--journal-dir <dir>", "where the local journal copies go", "reports/journal")
    .option("--concurrency <n>", "nodes at once (1-1024)", parseConcurrency, 64)
    .option("--label <name>", "a name for this run in the records (e.g. before-upgrade)")
    .option("--db <path>", "records database (default $SLICECHECK_DB or reports/slicecheck.db)")
    .option("--json", "print every check, the counts and the exit code as JSON")
    .option("--no-allure", "do not write Allure results (<out>/allure-results)")
    .action(async (o) => setCode(await (await import("./commands/run.js")).runCommand(o, io)));

  program
    .command("report")
    .description(
      "Allure report of a run (history carried from the previous report) and the compliance summary (HTML, --pdf)",
    )
    .option("--results <dir>", "the run's allure-results (default: the newest under reports/)")
    .option("--out <dir>", "where the report goes (default reports/allure-report)")
    .option("--single-file", "also write a single-file report that opens from file://")
    .option("--pdf", "print the compliance summary to compliance.pdf with Chromium")
    .option("--exit-code", "exit with the run's verdict (0, 1 a check failed, 2 one broken)")
    .option("--open", "then serve the report with `allure open` until interrupted")
    .action(async (o) =>
      setCode(await (await import("./commands/report.js")).reportCommand(o, io)),
    );

  program
    .command("diff")
    .description(
      "what changed between two recorded runs: topology, performance, behaviour (exit 1 on a regression)",
    )
    .requiredOption(
      "--before <x>",
      "a run id, a run label, or a driver version (latest run per node)",
    )
    .requiredOption(
      "--after <y>",
      "a run id, a run label, or a driver version (latest run per node)",
    )
    .option(
      "--tolerance <pct>",
      "performance noise tolerance in percent, 5 or 5% (default 5)",
      parsePercent("--tolerance"),
      0.05,
    )
    .option("--db <path>", "records database (default $SLICECHECK_DB or reports/slicecheck.db)")
    .option("--json", "machine-readable output")
    .action(async (o) => setCode((await import("./commands/diff.js")).diffCommand(o, io)));

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
    .action(async (o) => setCode(await (await import("./commands/sim.js")).simUpCommand(o, io)));
  sim
    .command("status")
    .option("--inventory <path>", "the cluster's inventory", "inventory/sim.yaml")
    .option("--json", "print {nodes:[{name,host,port,gpu,gpus,driver,pid}]}")
    .action(async (o) => setCode((await import("./commands/sim.js")).simStatusCommand(o, io)));
  sim
    .command("fault")
    .description("plant a fault into a simulated node, or --clear what was planted")
    .argument("<node>", "the simulated node")
    .argument(
      "[kind]",
      "foreign-process, holder, slurm, no-reset, isolation-broken, xid-misattributed, hang, drop-connection",
    )
    .option("--gpu <n>", "the GPU (default 0)", parseGpuIndex)
    .option(
      "--name <client>",
      "holder: nvidia-persistenced, nv-hostengine or nvidia_drm; drop-connection: the program",
    )
    .option("--state <state>", "slurm: drained, draining, idle or down")
    .option("--clear", "undo every fault planted on the node")
    .option("--inventory <path>", "the cluster's inventory", "inventory/sim.yaml")
    .option("--json", "machine-readable output")
    .action(async (node: string, kind: string | undefined, o) =>
      setCode(await (await import("./commands/sim-fault.js")).simFaultCommand(node, kind, o, io)),
    );
  sim
    .command("upgrade-driver")
    .description("switch a simulated node to another driver; optionally plant regressions")
    .argument("<node>", "the simulated node")
    .requiredOption("--to <version>", "a driver version the catalogue knows for the node's GPU")
    .option(
      "--regress <spec...>",
      "PROFILE:METRIC=FACTOR, e.g. 1g.10gb:tflops=0.8 (stress 20% slower on 1g.10gb)",
    )
    .option("--inventory <path>", "the cluster's inventory", "inventory/sim.yaml")
    .option("--json", "machine-readable output")
    .action(async (node: string, o) =>
      setCode(await (await import("./commands/sim-upgrade.js")).simUpgradeCommand(node, o, io)),
    );
  sim
    .command("down")
    .option("--inventory <path>", "the cluster's inventory", "inventory/sim.yaml")
    .action(async (o) => setCode(await (await import("./commands/sim.js")).simDownCommand(o, io)));

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
    const known = isSlicecheckError(err) ? err : writeErrorOf(err);
    if (known) {
      io.err(`slicecheck: ${known.message} [${known.code}]`);
      if (argv.includes("--debug") && err instanceof Error && err.stack) io.err(err.stack);
      return exitCodeOf(known);
    }
    io.err(
      `slicecheck: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
    );
    return exitCodeOf(err);
  }
}

const WHY: Record<string, string> = {
  ENOSPC: "no space left on the device",
  EDQUOT: "disk quota exceeded",
  EROFS: "read-only file system",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ENOTDIR: "a part of the path is a file, not a folder",
  EISDIR: "it is a folder",
  EIO: "I/O error",
  SQLITE_FULL: "the database or the disk is full",
  SQLITE_READONLY: "the database is read-only",
  SQLITE_IOERR: "I/O error",
  SQLITE_CANTOPEN: "the file cannot be opened",
};

/** A file-system or SQLite write failure that reached the top (a full disk in the middle of a
 * run) as bad news about a path, not as an internal error with a stack trace. */
export function writeErrorOf(err: unknown): SlicecheckError | null {
  if (!(err instanceof Error)) return null;
  const e = err as NodeJS.ErrnoException;
  const code = typeof e.code === "string" ? e.code : "";
  const base = code.startsWith("SQLITE_IOERR") ? "SQLITE_IOERR" : code;
  const why = WHY[base];
  if (!why) return null;
  const where = e.path
    ? `${e.path}`
    : code.startsWith("SQLITE")
      ? "the records database"
      : "a file";
  return new SlicecheckError(
    "WRITE",
    `cannot ${e.syscall ?? "write"} ${where}: ${code} (${why}); free space or fix the permissions, or choose another path (--out, --db, --journal-dir)`,
    { path: e.path ?? null, cause: code },
    { cause: err },
  );
}

export { SlicecheckError };
