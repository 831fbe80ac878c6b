// The `slicecheck` command line. Commands are thin: they parse options and call the layers.
import { Command, CommanderError, Option } from "commander";
import { EXIT, exitCodeOf, isSlicecheckError, SlicecheckError } from "../errors.js";
import { closest } from "../util/closest.js";
import { addConfigCommand } from "./config/command.js";
import { applySettings, type ConfigContext } from "./config/resolve.js";
import { exitOnlyHandlers, type Out, stdio } from "./context.js";
import {
  addApplyCommand,
  addAssertCommand,
  addCleanupCommand,
  addDoctorCommand,
  addExecCommand,
  addInventoryCommand,
  addRestoreCommand,
} from "./program-nodes.js";
import { addObserveCommand } from "./program-observe.js";
import {
  addAdviseCommand,
  addDiffCommand,
  addParseCommand,
  addPlanCommand,
  addReportCommand,
} from "./program-offline.js";
import { addRolloutCommand, addRunCommand } from "./program-run.js";
import { addSimCommands } from "./sim-commands.js";

// Each command is defined in program-nodes.ts, program-offline.ts or program-run.ts, and loaded
// when it runs: `slicecheck exec` should not pay for the planner, the parsers and the report code
// at every start (the bench counts start-up time). This file is their index, in the order
// `--help` lists them, and the top-level error handling.
const VERSION = "0.1.0";

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

  for (const add of [
    addExecCommand,
    addInventoryCommand,
    addDoctorCommand,
    addCleanupCommand,
    addParseCommand,
    addPlanCommand,
    addAdviseCommand,
    addApplyCommand,
    addAssertCommand,
    addRestoreCommand,
    addRunCommand,
    addRolloutCommand,
    addReportCommand,
    addDiffCommand,
    addObserveCommand,
  ])
    add(program, io, setCode);

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

/**
 * A reader that goes away (`slicecheck plan … | head -1`) closes stdout, and the next write fails
 * with EPIPE, which killed the process with a stack trace in the middle of its command: for a
 * run, before its teardown restored the layout. Output to a closed pipe is dropped instead and
 * the command goes on to its end and its own exit code. Any other stream error is thrown, as
 * before.
 */
export function dropOutputToClosedPipes(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code !== "EPIPE" && e.code !== "ERR_STREAM_DESTROYED") throw e;
    });
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
