// The `sim` subcommands: the built-in simulated cluster. Their `-i/--inventory` is the cluster's
// own inventory (default inventory/sim.yaml), never the configured one (see config/resolve.ts).
import type { Command } from "commander";
import { gpuIndexOption, type Out, parseGpuIndex, parsePositiveInt } from "./context.js";

export function addSimCommands(program: Command, io: Out, setCode: (c: number) => void): void {
  const sim = program
    .command("sim")
    .description("the built-in simulated cluster (real sshd per node, simulated GPUs)");
  sim
    .command("up")
    .description("start (or reconcile) a simulated cluster and write its inventory")
    .option("--nodes <n>", "number of nodes", parsePositiveInt("--nodes"), 4)
    .option(
      "--gpu <product>",
      "A30, A100-40GB, A100-80GB, H100-80GB, H100-PCIE, H100-NVL, GH200-96GB, H200, B200, RTX-PRO-6000",
      "H100-80GB",
    )
    .option("--gpus-per-node <k>", "GPUs per node", parsePositiveInt("--gpus-per-node"), 1)
    .option("--driver <version>", "driver version (default: newest catalogued)")
    .option(
      "--login-delay <s>",
      "every command's login shell first sleeps this long (bash's BASH_ENV), as a real node's start-up files (modules, conda) make it: 0.2-2 s",
      parseFloat,
    )
    .option(
      "--spec <file>",
      "YAML spec for mixed clusters: nodes: [{gpu, gpus, driver, count, name}]",
    )
    .option("-i, --inventory <path>", "where to write the inventory", "inventory/sim.yaml")
    .option(
      "--slurm",
      "also run a real Slurm for the nodes (munge, slurmctld, a slurmd per node; MIG instances as typed gres)",
    )
    .option("--json", "machine-readable output")
    .action(async (o) => setCode(await (await import("./commands/sim.js")).simUpCommand(o, io)));
  sim
    .command("status")
    .option("-i, --inventory <path>", "the cluster's inventory", "inventory/sim.yaml")
    .option("--json", "print {nodes:[{name,host,port,gpu,gpus,driver,pid}]}")
    .action(async (o) =>
      setCode(await (await import("./commands/sim.js")).simStatusCommand(o, io)),
    );
  sim
    .command("fault")
    .description("plant a fault into a simulated node, or --clear what was planted")
    .argument("<node>", "the simulated node")
    .argument(
      "[kind]",
      "foreign-process, holder, slurm, no-reset, isolation-broken, xid-misattributed, hang, drop-connection, mig-p2p-claimed, serve-slow, slurm-stale-gres, slurm-swap-gres, slurm-mixed-partition, slurm-unconstrained",
    )
    .option("--gpu <n>", "the GPU (default 0)", parseGpuIndex)
    .option(
      "--name <client>",
      "holder: nvidia-persistenced, nv-hostengine or nvidia_drm; drop-connection: the program; vgpu: guest or host; nvcc: the toolkit release (13.0)",
    )
    .option("--state <state>", "slurm: drained, draining, idle or down")
    .option("--instance <gi>", "serve-slow: the GPU instance (GI id)", gpuIndexOption("--instance"))
    .option("--clear", "undo every fault planted on the node")
    .option("-i, --inventory <path>", "the cluster's inventory", "inventory/sim.yaml")
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
    .option("-i, --inventory <path>", "the cluster's inventory", "inventory/sim.yaml")
    .option("--json", "machine-readable output")
    .action(async (node: string, o) =>
      setCode(await (await import("./commands/sim-upgrade.js")).simUpgradeCommand(node, o, io)),
    );
  sim
    .command("down")
    .option("-i, --inventory <path>", "the cluster's inventory", "inventory/sim.yaml")
    .action(async (o) => setCode(await (await import("./commands/sim.js")).simDownCommand(o, io)));
}
