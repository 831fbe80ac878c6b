// `slicecheck restore`: put back the MIG state the journal recorded before the first change of
// an apply (from the local journal, else the node's copy), verify it by re-reading, then remove
// both journal copies. Works after a controller was killed in the middle of an apply, since it
// compares the node as it is now with the journal, not with what the apply meant to do.

import { withNodeLocks } from "../../harness/locked.js";
import { DEFAULT_JOURNAL_DIR, restoreNodes } from "../../mig/apply/index.js";
import { newRunId } from "../../transport/open.js";
import { loadSelected, type NodeOptions, type Out } from "../context.js";
import { checkOutDir } from "../options.js";
import { printChangeReports, worstExit } from "./apply.js";

export interface RestoreCliOptions extends NodeOptions {
  journalDir?: string;
  allowReset?: boolean;
  dryRun?: boolean;
  /** `--lease`: the node lease's length in seconds. */
  lease?: number;
  json?: boolean;
}

export async function restoreCommand(o: RestoreCliOptions, io: Out): Promise<number> {
  if (!o.dryRun) checkOutDir(o.journalDir ?? DEFAULT_JOURNAL_DIR, "--journal-dir");
  const { nodes } = loadSelected(o);
  const runId = newRunId();
  const reports = await withNodeLocks(
    nodes,
    runId,
    { command: "restore", lock: !o.dryRun, leaseS: o.lease },
    (transports) =>
      restoreNodes(nodes, {
        runId,
        journalDir: o.journalDir ?? DEFAULT_JOURNAL_DIR,
        allowReset: o.allowReset ?? false,
        dryRun: o.dryRun ?? false,
        transports,
      }),
  );
  if (o.json) {
    io.out(JSON.stringify({ run: runId, dryRun: o.dryRun ?? false, nodes: reports }, null, 2));
  } else {
    printChangeReports(reports, "restore", "journal", io);
  }
  return worstExit(reports);
}
