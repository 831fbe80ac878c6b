// `slicecheck run`, the command with the most options: they are added in groups (what runs,
// the layout and the nodes' state around it, --via slurm, where the results go), in the order
// `run --help` lists them.
import type { Command } from "commander";
import { Option } from "commander";
import { MIN_LEASE_S } from "../transport/remote-scripts.js";
import { BUILTIN_SUITES, DEFAULT_SUITES } from "../util/suite-registry.js";
import type { Out } from "./context.js";
import {
  parseConcurrency,
  parseDuration,
  parseIntIn,
  parsePercent,
  parseSeconds,
} from "./options.js";
import { dbOpts, nodeOpts, type SetCode } from "./program-nodes.js";

/** `run`: the suites on every MIG instance of the selected nodes. */
export function addRunCommand(program: Command, io: Out, setCode: SetCode): void {
  const run = nodeOpts(program.command("run"));
  run.description(
    "run the suites (mocha files of suites/, and your own) on every MIG instance of the selected nodes",
  );
  for (const add of [whatRunsOptions, aroundRunOptions, viaSlurmOptions, resultOptions]) add(run);
  run.action(async (o) => setCode(await (await import("./commands/run.js")).runCommand(o, io)));
}

/** `rollout`: the same suites node by node, as a maintenance window is done. */
export function addRolloutCommand(program: Command, io: Out, setCode: SetCode): void {
  const cmd = nodeOpts(program.command("rollout"));
  cmd.description(
    "a maintenance window node by node: at most N nodes at a time drained, verified by the suites, resumed only on pass; stops at the first failure; resumable",
  );
  for (const add of [whatRunsOptions, aroundRunOptions, viaSlurmOptions, resultOptions]) add(cmd);
  cmd
    .option(
      "--max-unavailable <n>",
      "nodes verified (and drained) at once (default 1)",
      parseIntIn("--max-unavailable", 1),
      1,
    )
    .option("--keep-going", "go on after a node that failed or could not be verified")
    .option(
      "--state <file>",
      "the rollout's state file: an unfinished rollout in it resumes (default reports/rollout.json)",
    )
    .action(async (o) =>
      setCode(await (await import("./commands/rollout.js")).rolloutCommand(o, io)),
    );
}

/** Which suites and tests, which faults, how hard and how long. */
function whatRunsOptions(cmd: Command): Command {
  return cmd
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
      "--latency-faults <list>",
      "isolation: faults under which the victims' request latency is measured too, each struck a second time while they serve (default oom,crash,noisy; none to skip)",
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
      "--busbw-floor <GBs>",
      "nccl: bus-bandwidth floor in GB/s of the all_reduce across whole GPUs (default 40% of the board's NVLink bandwidth, from the catalogue)",
      parseIntIn("--busbw-floor", 1),
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
    );
}

/** Where the run writes, the layout applied first, and the nodes' lock and Slurm drain around it. */
function aroundRunOptions(cmd: Command): Command {
  return cmd
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
      "--regenerate-cdi",
      "run `nvidia-ctk cdi generate` after the --layout apply and after the restore (as the GPU Operator does), then check the CDI spec",
    )
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
    );
}

/** --via slurm: the checks run as a job array, one task on each node. */
function viaSlurmOptions(cmd: Command): Command {
  return cmd
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
      "--time-limit <duration>",
      "with --via slurm: each node's task's Slurm time limit (sbatch --time, in whole minutes); past it Slurm stops the task with SIGTERM, it writes what it has and its checks are broken (default: the partition's)",
      parseSeconds("--time-limit", 60),
    )
    .option(
      "--completing-grace <duration>",
      "with --via slurm: how long a task may stay COMPLETING after its batch script ended (Slurm still making sure its processes are gone, or a slow epilog) before its results are gathered anyway, with a note (default 30s)",
      parseSeconds("--completing-grace", 1),
    )
    .option(
      "--report-to-slurm",
      "with --drain: leave a node whose isolation, health or slurm checks failed drained, the check in its reason",
    );
}

/** Where the results, the records and the journal go, and how the run prints. */
function resultOptions(cmd: Command): Command {
  return dbOpts(
    cmd
      .option("--journal-dir <dir>", "where the local journal copies go", "reports/journal")
      .option("--concurrency <n>", "nodes at once (1-1024)", parseConcurrency, 64)
      .option("--label <name>", "a name for this run in the records (e.g. before-upgrade)")
      .addOption(
        new Option("--run-id <id>", "the run id (run --via slurm gives its jobs one)").hideHelp(),
      ),
  )
    .option("--json", "print every check, the counts and the exit code as JSON")
    .option("--quiet", "no live progress: only the checks that did not pass and the verdict")
    .option("--no-allure", "do not write Allure results (<out>/allure-results)");
}
