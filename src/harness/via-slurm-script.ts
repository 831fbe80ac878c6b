// The batch script of `run --via slurm`'s job array: one file for every task, each task picking
// its node from $SLURM_ARRAY_TASK_ID. The controller pins each task to its node after submitting
// (scontrol update NodeList=), but the script does not take that on trust: a task that runs on
// any other Slurm node refuses (exit 2, the reason in its job log) before slicecheck starts, so
// a task that lands elsewhere can never test, and report on, a node it is not on.
import { quote } from "../util/shell.js";

export interface ScriptTask {
  /** The inventory's name of the node (`--nodes`). */
  node: string;
  /** Its name in Slurm: what $SLURMD_NODENAME says on it. */
  slurmNode: string;
  /** Its results folder (shared with the controller). */
  out: string;
  /** Where the cluster confines a job's devices to its gres: how many GPU devices (whole GPUs
   * and MIG instances) the task holds, so nvidia-smi in the job must list at least these. 0 or
   * absent: no check. */
  devices?: number;
}

/** Written into a node's folder by a task that sees fewer GPU devices than it holds: the
 * gathering makes the node's check broken with the confinement's code (via-slurm-gather.ts). */
export const CONFINED_FILE = "devices-confined";

/** The devices `nvidia-smi -L` lists: each MIG device, and each GPU listed with none. */
const COUNT_DEVICES =
  "awk '/^GPU [0-9]+:/ { if (g) n++; g = 1; next } /^[[:space:]]+MIG / { n++; g = 0 } END { if (g) n++; print n + 0 }'";

/** The script; `argv` is the node run's command line without `--nodes` and `--out`. */
export function arrayScript(runId: string, argv: readonly string[], tasks: ScriptTask[]): string {
  const cases = tasks.map(
    (t, i) =>
      `  ${i}) node=${quote(t.node)} slurm_node=${quote(t.slurmNode)} out=${quote(t.out)} devices=${t.devices ?? 0} ;;`,
  );
  return `#!/bin/bash
# Written by \`slicecheck run --via slurm\` for run ${runId}: array task i tests node i below,
# and only on that node's Slurm node.
case "\${SLURM_ARRAY_TASK_ID:-}" in
${cases.join("\n")}
  *)
    echo "slicecheck: array task '\${SLURM_ARRAY_TASK_ID:-}' is none of run ${runId}'s (0-${tasks.length - 1}): nothing to test" >&2
    exit 2 ;;
esac
if [ "\${SLURMD_NODENAME:-}" != "$slurm_node" ]; then
  echo "slicecheck: array task $SLURM_ARRAY_TASK_ID tests $node, pinned to Slurm node $slurm_node, but it runs on '\${SLURMD_NODENAME:-unknown}': refusing to test the wrong node" >&2
  exit 2
fi
echo "slicecheck: array task $SLURM_ARRAY_TASK_ID (job \${SLURM_JOB_ID:-?}) on Slurm node $SLURMD_NODENAME tests $node"
# Under ConstrainDevices=yes the job reaches only the devices of its gres: one that sees fewer
# than it holds would report GPUs it cannot see as lost. Checked before slicecheck starts; the
# node's check is then broken, naming the confinement, never failed.
if [ "$devices" -gt 0 ]; then
  list=$(nvidia-smi -L 2>&1)
  seen=$(printf '%s\\n' "$list" | ${COUNT_DEVICES})
  # A GPU the driver reports lost is one the job can reach (nvidia-smi asked the driver for it):
  # a failure of the node for slicecheck to report, never a confinement.
  if [ "$seen" -lt "$devices" ] && ! printf '%s\\n' "$list" | grep -q '^Unable to determine the device handle for GPU'; then
    msg="slicecheck: array task $SLURM_ARRAY_TASK_ID (job \${SLURM_JOB_ID:-?}) asked Slurm for $devices GPU device(s) of $slurm_node (all of its GPU gres: the cluster confines a job's devices to its gres, ConstrainDevices=yes) but nvidia-smi -L in the job lists $seen: the node's devices are confined away from the job, so it was not checked. nvidia-smi -L said: $(printf '%s' "$list" | tr '\\n' ' ' | cut -c1-400)"
    echo "$msg" >&2
    printf '%s\\n' "$msg" > "$out/${CONFINED_FILE}"
    echo 2 > "$out/exit-code"
    exit 2
  fi
  echo "slicecheck: the job asked for $devices GPU device(s) of $slurm_node, and nvidia-smi -L in it lists $seen"
fi
# The controller's interrupt reaches slicecheck as a SIGTERM (scancel --full --signal=TERM): it
# stops its workloads and writes its reports. This shell must outlive it meanwhile, since Slurm
# kills what is left of a job once its batch shell exits.
trap 'echo "slicecheck: SIGTERM: waiting for slicecheck to write its reports" >&2' TERM
${argv.map(quote).join(" ")} --nodes "$node" --out "$out" &
pid=$!
wait "$pid"; rc=$?
while kill -0 "$pid" 2>/dev/null; do wait "$pid"; rc=$?; done
# The exit code goes to a file: with no accounting storage, Slurm forgets it with the job.
echo "$rc" > "$out/exit-code"
exit "$rc"
`;
}
