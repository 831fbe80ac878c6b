// The commands of `slicecheck` that read files and the records, never a node's shell (`plan`
// with --node reads one GPU's profiles): one function per command, as in program-nodes.ts.
import type { Command } from "commander";
import type { Out } from "./context.js";
import { gpuIndexOption } from "./context.js";
import { parseIntIn, parsePercent } from "./options.js";
import { dbOpts, type SetCode } from "./program-nodes.js";

// parsers and the report code at every start (the bench counts start-up time).
const PARSE_KINDS =
  "gpus query lgip lgipp lgi lci lcip mig-op table apps xid topo nvlink-status nvlink-errors nccl-tests gpu-burn dcgmi";

/** `parse`: a captured output through slicecheck's parsers. */
export function addParseCommand(program: Command, io: Out, setCode: SetCode): void {
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
}

/** `plan`: does a layout fit a GPU and driver (offline)? */
export function addPlanCommand(program: Command, io: Out, setCode: SetCode): void {
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
}

/** `report`: the Allure report and the compliance summary of a run. */
export function addReportCommand(program: Command, io: Out, setCode: SetCode): void {
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
}

/** `diff`: what changed between two recorded runs. */
export function addDiffCommand(program: Command, io: Out, setCode: SetCode): void {
  dbOpts(
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
      ),
  )
    .option("--json", "machine-readable output")
    .action(async (o) => setCode(await (await import("./commands/diff.js")).diffCommand(o, io)));
}

/** `advise`: before slicing, the jobs of a sacct history and a recommendation. */
export function addAdviseCommand(program: Command, io: Out, setCode: SetCode): void {
  program
    .command("advise")
    .description(
      'before slicing: jobs by GPUs, GPU memory and GPU-hours from a sacct history, the MIG profile each fits, and a layout, a node split or "do not slice"',
    )
    .option("--sacct <file>", "sacct -P output (- for standard input); `#` lines are skipped")
    .option("--format <list>", "the --format fields of a headerless (sacct -n) history, in order")
    .option("--slurm", "run sacct -P on the first selected node instead (-i/--nodes)")
    .option("-i, --inventory <path>", "with --slurm: the inventory")
    .option("--nodes <selector>", "with --slurm: the node to run sacct on (the first selected)")
    .option("--since <time>", "with --slurm: sacct --starttime (default now-30days)")
    .option(
      "--product <gpu>",
      "the GPU to advise for (default with --slurm: the node's nvidia-smi name)",
    )
    .option(
      "--node-count <n>",
      "nodes to split into whole and sliced (default: shares of the GPUs)",
      parseIntIn("--node-count", 1),
    )
    .option("--svg <file>", "write the histogram picture there")
    .option("--json", "machine-readable output")
    .action(async (o) =>
      setCode(await (await import("./commands/advise.js")).adviseCommand(o, io)),
    );
}
