// The controller's Slurm commands on the submit node (run --via slurm). A command that meets a
// slurmctld restarting or too busy to answer is asked again for a while: a restart (a
// reconfigure, a failover, config management's routine) is seconds of a real cluster's life and
// must not cost a run its nodes. A request that would not be the same the second time is never
// asked again: a submission whose answer was lost may have landed, and a second sbatch would run
// every task twice; a second `scontrol create reservation` would refuse a name it already holds.
import { SlicecheckError } from "../errors.js";
import type { Transport } from "../transport/types.js";

/** What Slurm 22.05's clients print when slurmctld could not be reached or dropped the
 * connection (src/common/slurm_errno.c; the first two seen from a restarting slurmctld in this
 * project's CI, 5 December 2026). Anything else (an invalid job id, a refused request) is
 * Slurm's answer and is never asked again. */
export const TRANSIENT_SLURM =
  /Connection reset by peer|Zero Bytes were transmitted or received|Unable to contact slurm controller|Socket timed out on send\/recv operation|Connection refused|Transport endpoint is not connected/i;

/** How long a command may keep meeting an unreachable slurmctld before the error stands. */
export const SLURM_RETRY_S = 30;

export interface SlurmShOptions {
  retryS?: number;
  /** The clock and the wait between tries (a test's own; real time by default). */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

type Exec = (
  argv: string[],
) => Promise<{ exitCode: number | null; stdout: string; stderr: string }>;

/** Requests whose lost answer may hide a change made: never asked twice. */
const once = (argv: readonly string[]) =>
  argv[0] === "sbatch" || (argv[0] === "scontrol" && /^(create|delete)$/.test(argv[1] ?? ""));

/** Runs a Slurm command through `exec`; its stdout, or a SLURM error with Slurm's own words. */
export async function slurmCommand(
  exec: Exec,
  node: string,
  argv: string[],
  o: SlurmShOptions = {},
): Promise<string> {
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const retryMs = once(argv) ? 0 : (o.retryS ?? SLURM_RETRY_S) * 1000;
  const now = o.now ?? Date.now;
  const t0 = now();
  for (let tries = 1, waitMs = 500; ; tries++, waitMs = Math.min(waitMs * 2, 5_000)) {
    const r = await exec(argv);
    if (r.exitCode === 0) return r.stdout;
    const why = r.stderr.trim();
    const spent = now() - t0;
    if (!TRANSIENT_SLURM.test(why) || spent + waitMs > retryMs) {
      const asked = tries > 1 ? ` (asked ${tries} times over ${Math.round(spent / 1000)} s)` : "";
      throw new SlicecheckError(
        "SLURM",
        `${argv.join(" ")} on ${node} failed (exit ${r.exitCode})${asked}: ${why}`,
      );
    }
    await sleep(waitMs);
  }
}

/** slurmCommand over a transport, each try bounded by 60 s. */
export function slurmSh(t: Transport, argv: string[], o: SlurmShOptions = {}): Promise<string> {
  return slurmCommand((a) => t.exec({ argv: a }, { timeoutMs: 60_000 }), t.node.name, argv, o);
}
