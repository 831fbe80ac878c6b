// The simulated cluster's Epilog (slurm.conf's Epilog=), which slurmd runs as root at the end of
// every job on the job's node. It does nothing unless `sim fault NODE slurm-epilog-hang` listed
// the node: then it hangs up to EPILOG_HANG_S, as a site's epilog stuck on a file system does,
// and Slurm keeps the job COMPLETING that long. The list is read each second, so clearing the
// fault ends a hang under way within a second.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { quote } from "../../../src/util/shell.js";

export const EPILOG_HANG_S = 120;

/** Writes the Epilog and the list of nodes whose Epilog hangs. */
export function writeEpilog(dir: string, hang: readonly string[]): void {
  const list = join(dir, "epilog-hang");
  writeFileSync(list, hang.map((n) => `${n}\n`).join(""));
  writeFileSync(
    join(dir, "epilog.sh"),
    [
      "#!/bin/sh",
      "# Written by `slicecheck sim up --slurm`: hangs while $SLURMD_NODENAME is listed in",
      `# ${list} (sim fault NODE slurm-epilog-hang), up to ${EPILOG_HANG_S} s.`,
      "n=0",
      `while [ "$n" -lt ${EPILOG_HANG_S} ] && [ -n "\${SLURMD_NODENAME:-}" ] && grep -qx "$SLURMD_NODENAME" ${quote(list)} 2>/dev/null; do`,
      "  sleep 1",
      "  n=$((n + 1))",
      "done",
      "exit 0",
      "",
    ].join("\n"),
    { mode: 0o755 },
  );
}
