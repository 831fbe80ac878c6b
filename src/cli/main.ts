// The `slicecheck` command line. Commands are thin: they parse options and call the layers.
import { Command, CommanderError, Option } from "commander";
import { EXIT, exitCodeOf, isSlicecheckError, SlicecheckError } from "../errors.js";
import { MIN_LEASE_S } from "../transport/remote-scripts.js";
import { closest } from "../util/closest.js";
import { BUILTIN_SUITES, DEFAULT_SUITES } from "../util/suite-registry.js";
import { addConfigCommand } from "./config/command.js";
import { applySettings, type ConfigContext } from "./config/resolve.js";
import { exitOnlyHandlers, gpuIndexOption, type Out, stdio } from "./context.js";
import {
  parseConcurrency,
  parseDbTimeout,
  parseDuration,
  parseIntIn,
  parsePercent,
  parseSeconds,
} from "./options.js";
import { addSimCommands } from "./sim-commands.js";

// Commands are loaded when they run: `slicecheck exec` should not pay for the planner, the
// parsers and the report code at every start (the bench counts start-up time).
const PARSE_KINDS =
  "gpus query lgip lgipp lgi lci lcip mig-op table apps xid nccl-tests gpu-burn dcgmi";

const VERSION = "0.1.0";

function nodeOpts(cmd: Command): Command {
  return cmd
    .option(
      "-i, --inventory <path>",
      "inventory file (native or Ansible YAML; default $SLICECHECK_INVENTORY, slicecheck.config.yaml, or inventory/sim.yaml)",
    )
    .option(
      "--nodes <selector>",
      "nodes to act on: names, gpu[01-04], @group, tag:NAME, all, !TERM to leave out, comma lists (default: all)",
    );
}

export function buildProgram(
  io: Out,
  setCode: (c: number) => void,
  ctx: ConfigContext = { cwd: process.cwd(), env: process.env },
): Command {
  const program = new Command("slicecheck")
    .description("Chaos and validation test harness for MIG-partitioned GPU clusters")
    .version(VERSION)
    .showHelpAfterError("(run with --help for usage)")
    // Unknown commands get our own "did you mean" (the one helper every unknown name uses, see
    // suggestCommand); commander's stays for unknown options (`--duraton` → --duration).
    .showSuggestionAfterError(true)
    .configureOutput({
      writeOut: (s) => io.out(s.trimEnd()),
      writeErr: (s) => io.err(s.trimEnd()),
      outputError: (s, write) => write(suggestCommand(program, s)),
    })
    .exitOverride()
    // Flags > SLICECHECK_* > slicecheck.config.yaml > default, before any action runs.
    .hook("preAction", (_root, action) => {
      applySettings(action, ctx);
    });

  nodeOpts(program.command("exec"))
    .description(
      "run one command on many nodes at once: one argument runs through the node's shell (as with ssh and pdsh), several are quoted one by one",
    )
    .argument("<cmd...>", "the command and its arguments, after --")
    .option("-x, --exclude <selector>", "leave these nodes out (same grammar as --nodes)")
    .option("-b, --gather", "print each distinct output once under its nodes (like clush -b)")
    .option(
      "--timeout <s>",
      "per-node deadline: seconds or 30s, 5m, 1h (at most 7 days)",
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
      "per-node deadline: seconds or 30s, 5m, 1h (at most 7 days)",
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
    .argument(
      "<file>",
      "the captured output (- for standard input); leading `# source:` lines are ignored",
    )
    .option("--json", "print JSON (the documented interface) instead of YAML")
    .option(
      "--fields <list>",
      "query/apps: the fields of a headerless --format=csv,noheader output, as given to --query-gpu",
    )
    .action(async (kind: string, file: string, o) =>
      setCode(await (await import("./commands/parse.js")).parseCommand(kind, file, o, io)),
    );

  program
    .command("plan")
    .description(
      "offline: does a mig-parted layout fit a GPU and driver? placements and commands, or why not",
    )
    .argument("[layout]", "a mig-parted config file (version: v1, mig-configs: …)")
    .option("-c, --config <name>", "the config inside the layout file")
    .option(
      "--gpu <product>",
      "A30, A100-40GB, A100-80GB, H100-80GB, H100-PCIE, H100-NVL, GH200-96GB, H200, B200, RTX-PRO-6000, the nvidia-smi name or a PCI id",
    )
    .option("--driver <version>", "driver version (default: the newest catalogued)")
    .option("--lgip <file>", "plan from this GPU's `nvidia-smi mig -lgip` output (- for stdin)")
    .option("--lgipp <file>", "and its `nvidia-smi mig -lgipp` output (with --lgip and --driver)")
    .option("--node <name>", "plan from the live profiles of this node's GPU (read over SSH)")
    .option("-i, --inventory <path>", "with --node: the inventory")
    .option(
      "--gpu-index <n>",
      "the GPU of --node or of the listings (default 0)",
      gpuIndexOption("--gpu-index"),
    )
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
    .option(
      "--lease <duration>",
      "how long the node stays locked for this controller after its last heartbeat reached it (10 s to 1 h; default 45s: longer than the run waits on a silent node)",
      parseSeconds("--lease", MIN_LEASE_S, 3600),
    )
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
    .option(
      "--lease <duration>",
      "how long the node stays locked for this controller after its last heartbeat reached it (10 s to 1 h; default 45s: longer than the run waits on a silent node)",
      parseSeconds("--lease", MIN_LEASE_S, 3600),
    )
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
      `comma list of built-in suites (${BUILTIN_SUITES.join(", ")}) and suite files (./my-suite.mjs)`,
      DEFAULT_SUITES,
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
    .option(
      "--duration <d>",
      "how long each workload runs: seconds or 30s, 5m, 1h (1 s to 7 days)",
      parseDuration,
      30,
    )
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
    .option(
      "--lease <duration>",
      "how long the node stays locked for this controller after its last heartbeat reached it (10 s to 1 h; default 45s: longer than the run waits on a silent node)",
      parseSeconds("--lease", MIN_LEASE_S, 3600),
    )
    .option("--allow-reset", "reset an Ampere GPU whose MIG mode change stays pending")
    .option(
      "--local",
      "the one selected node is this machine: run its commands here, not over SSH (what a --via slurm task does on its node)",
    )
    .option(
      "--drain",
      "drain the nodes' Slurm nodes (slurm_node) first, wait for their jobs, resume at the end only those this run drained",
    )
    .option(
      "--drain-timeout <duration>",
      "seconds to wait for a draining node's jobs",
      parseSeconds("--drain-timeout", 1),
      600,
    )
    .option(
      "--via <scheduler>",
      "slurm: a job array, one task pinned to each node, runs the checks there",
    )
    .option("--partition <name>", "with --via slurm: the partition of the jobs")
    .option(
      "--reservation <name>",
      "the (maintenance) reservation of the run's Slurm jobs: --via slurm's, the slurm suite's probes",
    )
    .option(
      "--start-timeout <duration>",
      "with --via slurm: cancel a node's task still pending this long after submission (its node broken SLURM_JOB; default 1h)",
      parseSeconds("--start-timeout", 1),
    )
    .option(
      "--report-to-slurm",
      "with --drain: leave a node whose isolation, health or slurm checks failed drained, the check in its reason",
    )
    .option("--journal-dir <dir>", "where the local journal copies go", "reports/journal")
    .option("--concurrency <n>", "nodes at once (1-1024)", parseConcurrency, 64)
    .option("--label <name>", "a name for this run in the records (e.g. before-upgrade)")
    .addOption(
      new Option("--run-id <id>", "the run id (run --via slurm gives its jobs one)").hideHelp(),
    )
    .option(
      "--db <path|url>",
      "records database: a SQLite file or postgres://USER@HOST/DB (default $SLICECHECK_DB or reports/slicecheck.db)",
    )
    .option(
      "--db-timeout <duration>",
      "bound on every wait for the records database (connect, write, commit; SQLite's lock wait at most 10 s); past it the run's records are reported lost (1 s to 1 h, default 30s)",
      parseDbTimeout,
      30,
    )
    .option("--json", "print every check, the counts and the exit code as JSON")
    .option("--quiet", "no live progress: only the checks that did not pass and the verdict")
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
    .option(
      "--db <path|url>",
      "records database: a SQLite file or postgres://USER@HOST/DB (default $SLICECHECK_DB or reports/slicecheck.db)",
    )
    .option(
      "--db-timeout <duration>",
      "bound on every wait for the records database (connect, write, commit; SQLite's lock wait at most 10 s); past it the run's records are reported lost (1 s to 1 h, default 30s)",
      parseDbTimeout,
      30,
    )
    .option("--json", "machine-readable output")
    .action(async (o) => setCode(await (await import("./commands/diff.js")).diffCommand(o, io)));

  addSimCommands(program, io, setCode);
  addConfigCommand(program, io, setCode);
  program.addOption(new Option("--debug", "print stack traces").hideHelp());
  return program;
}

/** commander's "unknown command" line, with the nearest command named (`sim` subcommands too:
 * `slicecheck sim stauts` suggests `sim status`). */
function suggestCommand(program: Command, message: string): string {
  const m = /unknown command '([^']*)'/.exec(message);
  if (!m) return message;
  const name = m[1]!;
  const groups = [program, ...program.commands.filter((c) => c.commands.length > 0)];
  const near = closest(
    name,
    groups.flatMap((g) => g.commands.map((c) => c.name())),
  );
  const group = groups.find((g) => g.commands.some((c) => c.name() === near)) ?? program;
  const full = near ? `${group === program ? "" : `${group.name()} `}${near}` : null;
  return `slicecheck: unknown command '${name}'${full ? ` (did you mean '${full}'?)` : ""}; the commands are ${program.commands.map((c) => c.name()).join(", ")}\n`;
}

/**
 * Ctrl-C exits 130 (128 + SIGINT, what shells report) in every command. Commands with a cleanup
 * of their own (run, apply) install their handlers and decide; this one acts only when it is
 * the only listener, so it never cuts their teardown short.
 */
export function exitOnInterrupt(): void {
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    const handler = () => {
      if (process.listenerCount(sig) === 1) process.exit(sig === "SIGINT" ? 130 : 143);
    };
    exitOnlyHandlers.add(handler);
    process.on(sig, handler);
  }
}

export async function main(
  argv: string[],
  io: Out = stdio,
  ctx: ConfigContext = { cwd: process.cwd(), env: process.env },
): Promise<number> {
  let code: number = EXIT.ok;
  const program = buildProgram(
    io,
    (c) => {
      code = c;
    },
    ctx,
  );
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
