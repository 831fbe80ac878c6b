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
}

/** The script; `argv` is the node run's command line without `--nodes` and `--out`. */
export function arrayScript(runId: string, argv: readonly string[], tasks: ScriptTask[]): string {
  const cases = tasks.map(
    (t, i) =>
      `  ${i}) node=${quote(t.node)} slurm_node=${quote(t.slurmNode)} out=${quote(t.out)} ;;`,
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
