// The node commands of `slicecheck` (those that act on the inventory's nodes over SSH, and
// `inventory`, which only resolves them): one function per command, so that main.ts stays an
// index of the commands and each definition reads on its own. Their actions load the command's
// module when it runs (see main.ts).
import type { Command } from "commander";
import { MIN_LEASE_S } from "../transport/remote-scripts.js";
import type { Out } from "./context.js";
import { parseConcurrency, parseDbTimeout, parseFanout, parseSeconds } from "./options.js";

/** Sets the exit code of the command that ran. */
export type SetCode = (c: number) => void;

/** The -i/--nodes pair every node command takes (`exec` also spells --nodes `-w`, as pdsh). */
export function nodeOpts(cmd: Command, pdsh = false): Command {
  return cmd
    .option(
      "-i, --inventory <path>",
      "inventory file (native or Ansible YAML; default $SLICECHECK_INVENTORY, slicecheck.config.yaml, or inventory/sim.yaml)",
    )
    .option(
      pdsh ? "-w, --nodes <selector>" : "--nodes <selector>",
      "nodes to act on: names, gpu[01-04], @group, tag:NAME, all, !TERM to leave out, comma lists (default: all)",
    );
}

/** The records database and the bound on waiting for it (`run`, `diff`, …). */
export function dbOpts(cmd: Command): Command {
  return cmd
    .option(
      "--db <path|url>",
      "records database: a SQLite file or postgres://USER@HOST/DB (default $SLICECHECK_DB or reports/slicecheck.db)",
    )
    .option(
      "--db-timeout <duration>",
      "bound on every wait for the records database (connect, write, commit; SQLite's lock wait at most 10 s); past it the run's records are reported lost (1 s to 1 h, default 30s)",
      parseDbTimeout,
      30,
    );
}

/** `exec`: one command on many nodes at once. */
export function addExecCommand(program: Command, io: Out, setCode: SetCode): void {
  nodeOpts(program.command("exec"), true)
    .description(
      "run one command on many nodes at once: one argument runs through the node's shell (as with ssh and pdsh), several are quoted one by one; lines print as they arrive, as `node: line`",
    )
    .argument("<cmd...>", "the command and its arguments, after --")
    .option(
      "-g, --group <groups>",
      "the nodes of these inventory groups (comma list; as --nodes @GROUP)",
    )
    .option(
      "-x, --exclude <selector>",
      "leave these nodes out (same grammar as --nodes; a name the inventory lacks is ignored with a warning, as pdsh does)",
    )
    .option("-b, --gather", "print each distinct output once under its nodes (like clush -b)")
    .option("-N, --no-prefix", "print the lines without `node: ` before them (as pdsh -N)")
    .option("--align", "pad node names to one width, so that the text lines up")
    .option(
      "--timeout <s>",
      "per-node deadline: seconds or 30s, 5m, 1h (at most 7 days)",
      parseSeconds("--timeout"),
      120,
    )
    .option("--concurrency <n>", "nodes at once (1-1024)", parseConcurrency, 64)
    .option("-f, --fanout <n>", "pdsh's name for --concurrency (wins over it)", parseFanout)
    .option("--shell", "join several arguments into one line for the node's shell")
    .option("--json", "print {nodes:[{name,exitCode,stdout,stderr,error}]}")
    .action(async (cmd: string[], o) =>
      setCode(await (await import("./commands/exec.js")).execCommand(cmd, o, io)),
    );
}

/** `inventory`: the resolved nodes and where each value came from. */
export function addInventoryCommand(program: Command, io: Out, setCode: SetCode): void {
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
}

/** `doctor`: can slicecheck work on these nodes? */
export function addDoctorCommand(program: Command, io: Out, setCode: SetCode): void {
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
}

/** `cleanup`: the processes a run left behind. */
export function addCleanupCommand(program: Command, io: Out, setCode: SetCode): void {
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
}

/** `apply`: bring the GPUs to a layout. */
export function addApplyCommand(program: Command, io: Out, setCode: SetCode): void {
  nodeOpts(program.command("apply"))
    .description(
      "bring the nodes' GPUs to a mig-parted layout: interlocks, journal, change, verify",
    )
    .argument("[layout]", "a mig-parted config file (version: v1, mig-configs: …)")
    .option("-c, --config <name>", "the config inside the layout file")
    .option(
      "--intended",
      "each node's intended layout from the inventory (mig_config, mig_layout) instead of a file; the journal goes once verified",
    )
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
    .action(async (layout: string | undefined, o) =>
      setCode(await (await import("./commands/apply.js")).applyCommand(layout, o, io)),
    );
}

/** `assert`: does every GPU match the layout? */
export function addAssertCommand(program: Command, io: Out, setCode: SetCode): void {
  nodeOpts(program.command("assert"))
    .description(
      "does every GPU match the layout (without one: its node's intended layout from the inventory)? prints what differs (exit 1 on drift)",
    )
    .argument("[layout]", "a mig-parted config file (default: each node's intended layout)")
    .option("-c, --config <name>", "the config inside the layout file")
    .option("--json", "machine-readable output")
    .action(async (layout: string | undefined, o) =>
      setCode(await (await import("./commands/assert.js")).assertCommand(layout, o, io)),
    );
}

/** `restore`: put back what the journal recorded. */
export function addRestoreCommand(program: Command, io: Out, setCode: SetCode): void {
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
}
