// Finding a simulated workload among the processes of this machine. The process a node and the
// harness see is `node …/stress.js` where the program runs as a Node process of its own, and
// `/bin/bash …/bin/slicecheck-stress` where the cluster's resident simulator runs it for that
// bash client (sim/src/resident/wrapper.ts); never the `timeout` or `sh -c` above it, whose
// command lines name the program too.
import { readFileSync } from "node:fs";

/** Whether `pid` is the simulated `slicecheck-<program>` process itself. */
export function isSimWorkload(pid: number | string, program: string): boolean {
  let cmd: string;
  try {
    cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return false;
  }
  return (
    new RegExp(`^/bin/bash \\S*/slicecheck-${program} `).test(cmd) ||
    new RegExp(`^\\S*node \\S*/${program}\\.js `).test(cmd)
  );
}
