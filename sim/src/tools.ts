// The simulated tools on a node's PATH: small shell wrappers that exec plain JavaScript from
// dist/ (compiled at install), so each call starts in tens of milliseconds.
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { SlicecheckError } from "../../src/errors.js";
import { quote } from "../../src/util/shell.js";
import { PORT_FILE } from "./resident/files.js";
import { PROTOCOL_VERSION, SLURM_SYNC } from "./resident/protocol.js";
import { RESIDENT_PROGRAM_TOOLS, RESIDENT_TOOLS } from "./resident/tools.js";
import { programClient, workloadWrapper } from "./resident/wrapper.js";
import { confPath, slurmDirOf } from "./slurmd/paths.js";

/** The package root, from sim/src (tsx) or dist/sim (compiled). */
export const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

export const SIM_TOOLS: Record<string, string> = {
  "nvidia-smi": "dist/sim/nvsmi/main.js",
  // Slurm's view of the node (drained or not), from <state>/slurm.json.
  scontrol: "dist/sim/slurm/main.js",
  // Slurm accounting (`sim fault NODE sacct --name …` plants a job history), for `advise --slurm`.
  // Kept under a real Slurm too: the simulated cluster runs no slurmdbd.
  sacct: "dist/sim/slurm/sacct-main.js",
  // The GPU clients that are not CUDA processes (persistenced, DCGM, nvidia_drm), as a real node
  // shows them; everything else pgrep is asked goes to the host's real pgrep.
  pgrep: "dist/sim/host/pgrep.js",
  lsmod: "dist/sim/host/lsmod.js",
  // The node's own CUDA toolkit (its release; never the control machine's nvcc).
  nvcc: "dist/sim/host/nvcc.js",
  // Workloads that run for real on a modelled GPU (sim/src/workloads), and the kernel log they
  // write Xids to.
  "slicecheck-stress": "dist/sim/workloads/stress.js",
  "slicecheck-memhog": "dist/sim/workloads/memhog.js",
  "slicecheck-crasher": "dist/sim/workloads/crasher.js",
  "slicecheck-allreduce": "dist/sim/workloads/allreduce.js",
  "slicecheck-train-step": "dist/sim/workloads/train-step.js",
  "slicecheck-serve": "dist/sim/workloads/serve.js",
  gpu_burn: "dist/sim/workloads/gpu-burn.js",
  all_reduce_perf: "dist/sim/workloads/nccl.js",
  "nvidia-cuda-mps-control": "dist/sim/workloads/mps-control.js",
  // dmon only, answering while nv-hostengine is planted as running.
  dcgmi: "dist/sim/workloads/dcgmi.js",
  dmesg: "dist/sim/klog/main.js",
  // The NVIDIA Container Toolkit's CLIs (sim/src/toolkit): the CDI spec and what the toolkit
  // reports of the driver.
  "nvidia-ctk": "dist/sim/toolkit/ctk.js",
  "nvidia-container-cli": "dist/sim/toolkit/container-cli.js",
  // issue 23: a container runtime with the NVIDIA toolkit (sim/src/containers).
  podman: "dist/sim/containers/podman.js",
  docker: "dist/sim/containers/docker.js",
  // enroot (sim/src/containers/enroot-cli.ts): squashfs images, create/start/list/remove.
  enroot: "dist/sim/containers/enroot.js",
};

const BASH = "/bin/bash";

/**
 * The wrapper of a tool the cluster's resident simulator answers (resident/server.ts): bash, for
 * its /dev/tcp, sends the call and prints the answer; when nothing answers, or the answer is
 * `fallback`, it runs the tool as its own Node process, as every other wrapper does. A late
 * answer (10 s) is given up rather than waited for. An answer in a file (protocol.ts) is read by
 * bash itself; one on the connection by cat, by its path: a session's PATH may lack it (a
 * container's environment), and then the answer would be lost, not fallen back from.
 */
export function residentWrapper(tool: string, run: string, portFile: string): string {
  return `#!${BASH}
# ${tool} on a simulated node: the cluster's resident simulator answers, else a process of its own.
port=
{ read -r port <${quote(portFile)}; } 2>/dev/null
if [ -n "$port" ] && [ -x /bin/cat ] && { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
  trap '' PIPE
  if printf '%s\\0' ${PROTOCOL_VERSION} ${quote(tool)} "\${SLICECHECK_SIM_STATE-}" "\${SLICECHECK_SIM_FENCE+1}" \\
    "\${SLICECHECK_SIM_FENCE-}" "$EUID" "$#" "$@" >&3 2>/dev/null &&
    IFS= read -r -t 10 head <&3 && [[ $head =~ ^[0-9]+$ || $head = "F "* ]]; then
    trap - PIPE
    if [[ $head = "F "* ]]; then
      head=\${head#F }
      { o=$(<"\${head#* }"); } 2>/dev/null
      # The "." that ends the answer: a file gone or cut short is not printed as an answer.
      if [[ $o = *. ]]; then
        printf '%s' "\${o%.}"
        exit "\${head%% *}"
      fi
    else
      /bin/cat <&3
      exit "$head"
    fi
  fi
  trap - PIPE
  exec 3<&-
fi
${run}
`;
}

/** The cluster's resident simulator (resident/main.ts), bundled with the tools. */
export const RESIDENT_SCRIPT = "dist/sim/resident/main.js";

/** What a `sim up --slurm` cluster runs as Node processes: the TaskProlog's device fence, once
 * per Slurm task, and the Slurm commands' wrapper where no resident answers. Bundled like the
 * tools: the fence took 0.27 s of CPU a task unbundled, where Node's own start is 0.11. */
export const FENCE_SCRIPT = "dist/sim/slurmd/fence-main.js";
export const SLURM_WRAPPER_SCRIPT = "dist/sim/slurmd/wrapper.js";

/** What runs for a script of dist/sim: its one-file bundle where the build made one
 * (scripts/bundle.mjs; a call then loads one file rather than some 40 modules). */
export function builtEntry(script: string): string {
  const bundled = join(PACKAGE_ROOT, "dist/sim-bundle", script.replace(/^dist\/sim\//, ""));
  return existsSync(bundled) ? bundled : join(PACKAGE_ROOT, script);
}

/** The script a tool's wrapper runs. */
export function toolEntry(tool: string): string {
  const script = SIM_TOOLS[tool] ?? "";
  const abs = join(PACKAGE_ROOT, script);
  if (!script || !existsSync(abs)) {
    throw new SlicecheckError(
      "SIM",
      `the simulated ${tool} is not built (${abs} is missing); run \`npm run build\``,
    );
  }
  return builtEntry(script);
}

/** `clusterDir`: where the cluster's resident simulator writes its port; none, no resident. */
export function installTools(binDir: string, clusterDir?: string): void {
  mkdirSync(binDir, { recursive: true });
  for (const tool of Object.keys(SIM_TOOLS)) {
    const entry = toolEntry(tool);
    const path = join(binDir, tool);
    const run = `exec ${quote(process.execPath)} ${quote(entry)} "$@"`;
    writeFileSync(path, wrapperText(tool, run, clusterDir));
    chmodSync(path, 0o755);
  }
}

/** A tool's wrapper: the resident simulator's one-shot answer, its run of the tool's program for
 * this process, or both in that order (resident/tools.ts lists which); else, or when it does
 * not, the tool's own Node process (`run`). */
function wrapperText(tool: string, run: string, clusterDir?: string): string {
  const port = clusterDir && existsSync(BASH) ? join(clusterDir, PORT_FILE) : null;
  if (!port) return `#!/bin/sh\n${run}\n`;
  const program = RESIDENT_PROGRAM_TOOLS.has(tool);
  if (RESIDENT_TOOLS.has(tool))
    return residentWrapper(tool, program ? `${programClient(tool, port)}\n${run}` : run, port);
  return program ? workloadWrapper(tool, run, port) : `#!/bin/sh\n${run}\n`;
}

/** The real Slurm commands a node's sessions run once the cluster has Slurm (`sim up --slurm`);
 * the simulated scontrol gives way to the real one. */
export const SLURM_TOOLS = ["scontrol", "srun", "sbatch", "sinfo", "squeue", "scancel"];

/** `slurmBin`: where Debian's Slurm commands are (a test gives its own). */
export function installSlurmTools(binDir: string, clusterDir: string, slurmBin = "/usr/bin"): void {
  const script = join(PACKAGE_ROOT, SLURM_WRAPPER_SCRIPT);
  if (!existsSync(script))
    throw new SlicecheckError("SIM", `${script} is missing; run \`npm run build\``);
  const abs = builtEntry(SLURM_WRAPPER_SCRIPT);
  for (const tool of SLURM_TOOLS) {
    const path = join(binDir, tool);
    const run = `exec ${quote(process.execPath)} ${quote(abs)} ${quote(clusterDir)} ${tool} "$@"`;
    const text = existsSync(BASH)
      ? slurmWrapper(join(slurmBin, tool), run, clusterDir)
      : `#!/bin/sh\n${run}\n`;
    writeFileSync(path, text);
    chmodSync(path, 0o755);
  }
}

/**
 * A Slurm command's wrapper: the resident simulator brings the cluster's Slurm config to the
 * nodes' MIG state (server.ts, SLURM_SYNC), then Debian's command runs against it; with no
 * resident, or one that cannot, the wrapper's Node process does both (slurmd/wrapper.ts), as it
 * did for every call (a Node start, flock, a shell and a cat: some 390 calls a test run).
 */
function slurmWrapper(command: string, run: string, clusterDir: string): string {
  return `#!${BASH}
# ${basename(command)} on a simulated node with Slurm: the config synced, then Slurm's own.
port=
{ read -r port <${quote(join(clusterDir, PORT_FILE))}; } 2>/dev/null
if [ -n "$port" ] && { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
  trap '' PIPE
  if printf '%s\\0' ${PROTOCOL_VERSION} ${SLURM_SYNC} ${quote(clusterDir)} "" "" "$EUID" 0 >&3 2>/dev/null &&
    IFS= read -r -t 120 head <&3 && [ "$head" = 0 ]; then
    exec 3<&-
    trap - PIPE
    export SLURM_CONF=${quote(confPath(slurmDirOf(clusterDir)))}
    exec ${quote(command)} "$@"
  fi
  trap - PIPE
  exec 3<&-
fi
${run}
`;
}
