// run --via slurm's watch, the decisions it makes on a task's state: when a pending task is given
// up on, and when a task Slurm still shows COMPLETING is taken as ended.
import type { ViaSlurmJob } from "./via-slurm-options.js";

/** A node Slurm cannot start a job on (drained, down, not responding) may stay so for good.
 * This long, it is given up on rather than waited for, since it holds its siblings back too. */
const UNAVAILABLE_GRACE_S = 10;

/** Why a pending task is given up on now, or null to wait on. Slurm's schedulers try an array's
 * pending tasks in order and, once one of them cannot start, skip the rest of that array in the
 * same partition and reservation ("already rejected array element" in job_scheduler.c and
 * backfill.c): a task whose node is unavailable holds every task after it back, whatever their
 * nodes. So it is cancelled once its own node has been unavailable for a while, not only at
 * --start-timeout. */
export function giveUp(
  j: ViaSlurmJob,
  reason: string,
  waited: number,
  startTimeoutS: number,
  since: Map<string, number>,
): string | null {
  // squeue's %R for a task whose required node cannot take jobs: `(ReqNodeNotAvail,
  // UnavailableNodes:sim03)`; a sibling held back by it gets the reason without the nodes.
  const node = j.slurmNode.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const mine = new RegExp(`UnavailableNodes:([^)]*,)?${node}[,)]`).test(reason);
  if (!mine) since.delete(j.jobId);
  else if (!since.has(j.jobId)) since.set(j.jobId, waited);
  const down = since.has(j.jobId) ? waited - (since.get(j.jobId) as number) : 0;
  if (down >= Math.min(UNAVAILABLE_GRACE_S, startTimeoutS))
    return `still PENDING ${reason} ${Math.round(waited)} s after the release: its Slurm node ${j.slurmNode} takes no job (drained, down or not responding) and holds the array's later tasks back, so the controller cancelled it`;
  if (waited > startTimeoutS)
    return `still PENDING ${reason} ${Math.round(waited)} s after the release: cancelled by the controller (--start-timeout ${startTimeoutS})`;
  return null;
}

/** How long a task may stay COMPLETING before the controller takes it as ended, unless
 * --completing-grace says otherwise (a site whose epilog runs health checks for minutes on
 * purpose). COMPLETING means its batch script has ended (the task wrote its exit code and
 * reports before that) and Slurm is still making sure the job's processes are gone; a job stuck
 * so (a process it cannot kill, a slurmd that does not answer) can stay COMPLETING for as long
 * as it takes an admin to notice, and the controller would wait on it for ever: --time-limit
 * does not reach it. */
export const COMPLETING_GRACE_S = 30;

/** Why a task Slurm still shows COMPLETING is taken as ended now, or null to wait on. */
export function stuckCompleting(
  j: ViaSlurmJob,
  state: string,
  nowS: number,
  since: Map<string, number>,
  graceS = COMPLETING_GRACE_S,
): string | null {
  if (state !== "COMPLETING") {
    since.delete(j.jobId);
    return null;
  }
  if (!since.has(j.jobId)) since.set(j.jobId, nowS);
  const waited = nowS - (since.get(j.jobId) as number);
  if (waited < graceS) return null;
  return `still COMPLETING ${Math.round(waited)} s after its batch script ended: Slurm has not confirmed that the job's processes on ${j.slurmNode} are gone (one it cannot kill, or a slurmd that does not answer), so the controller gathered the task's results without waiting longer (--completing-grace ${graceS})`;
}
