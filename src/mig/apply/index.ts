// apply / assert / restore: read a node's MIG state, plan each GPU's target (layout or journal),
// refuse on interlocks, journal the original state, converge GPU by GPU and verify by re-reading.

export { changePlan, describeGi, driftOf, matchGeometry } from "./compare.js";
export { faultRefusals, slurmRefusal } from "./interlocks.js";
export {
  DEFAULT_JOURNAL_DIR,
  type Journal,
  localJournalPath,
  readLocalJournal,
} from "./journal.js";
export { interlockRefusals, readNode } from "./read.js";
export { type Blocker, readiness, readReadiness } from "./readiness.js";
export { restoreNodes } from "./restore.js";
export {
  applyLayout,
  assertLayout,
  type NodeReport,
  type NodeStatus,
  nodeExitCode,
  type SessionOptions,
} from "./session.js";
export { entryFor, journalTarget, layoutTarget, validateOffline } from "./target.js";
export type * from "./types.js";
