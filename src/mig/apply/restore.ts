// restore: put back what each node's journal recorded. The journal is read from the controller
// (else from the node), checked to belong to the node's GPUs, turned into a target with every GI
// pinned where it was, and then handled exactly like an apply: the same interlocks, the same
// all-or-nothing gate, the same converge-and-verify. Only a verified node loses its journal.

import type { NodeSpec } from "../../inventory/types.js";
import {
  checkJournalOwner,
  type Journal,
  loadJournal,
  localJournalPath,
  removeLocalJournal,
  removeRemoteJournal,
} from "./journal.js";
import {
  changeNodes,
  errorReport,
  isReport,
  type NodeReport,
  type Prepared,
  prepare,
  type SessionOptions,
  type Targeter,
  withLinks,
} from "./session.js";
import { journalTarget } from "./target.js";

export function journalTargeter(j: Journal): Targeter {
  return (s, g) => {
    const original = j.gpus.find((x) => x.uuid === g.uuid);
    if (!original) return null;
    const target = journalTarget(g.index, original, s.driver);
    if (original.migPending !== original.migCurrent) {
      target.notes.push(
        `the journal recorded MIG mode ${original.migPending ? "Enabled" : "Disabled"} pending (waiting for a reset); restore brings back the effective mode, not the pending change`,
      );
    }
    return { target, retarget: () => target };
  };
}

export async function restoreNodes(
  nodes: readonly NodeSpec[],
  o: SessionOptions,
): Promise<NodeReport[]> {
  return withLinks(
    nodes,
    o.runId,
    async (links) => {
      const prepared = await Promise.all(
        links.map(async (l): Promise<Prepared | NodeReport> => {
          if (!l.t) return errorReport(l.spec.name, l.error, "unreachable");
          // Never undo somebody else's layout: a controller whose lease on the node was lost
          // (it ran out in a stall, another controller took the node) refuses, and says so.
          if (!o.dryRun) {
            try {
              await l.t.checkLease?.();
            } catch (e) {
              const r = errorReport(l.spec.name, e, "refused");
              return { ...r, refusals: [r.error?.message ?? "the node's lease was lost"] };
            }
          }
          let loaded: Awaited<ReturnType<typeof loadJournal>>;
          try {
            loaded = await loadJournal(l.t, o.journalDir);
          } catch (e) {
            return errorReport(l.spec.name, e);
          }
          if (!loaded) {
            return {
              node: l.spec.name,
              status: "no-journal",
              error: null,
              refusals: [],
              journal: null,
              gpus: [],
            };
          }
          const { journal, from } = loaded;
          return prepare(
            l,
            (s) => {
              checkJournalOwner(journal, s, from);
              return journalTargeter(journal);
            },
            o,
            loaded,
          );
        }),
      );
      const reports = await changeNodes(prepared, o, true);
      return Promise.all(
        reports.map(async (r, i) => {
          const p = prepared[i];
          const t = links[i]?.t;
          if (!p || isReport(p) || !t || !p.journal || o.dryRun) return withJournal(r, p);
          if (r.status !== "changed" && r.status !== "unchanged") return withJournal(r, p);
          // Verified (or nothing to do): both copies go, the node's first.
          try {
            const remote = await removeRemoteJournal(t);
            removeLocalJournal(o.journalDir, r.node);
            return {
              ...r,
              status: "restored" as const,
              journal: {
                local: localJournalPath(o.journalDir, r.node),
                remote,
                reused: false,
                removed: true,
              },
            };
          } catch (e) {
            return { ...errorReport(r.node, e), gpus: r.gpus };
          }
        }),
      );
    },
    o.transports,
  );
}

function withJournal(r: NodeReport, p: Prepared | NodeReport | undefined): NodeReport {
  if (!p || isReport(p) || !p.journal) return r;
  return { ...r, journal: { local: p.journal.from, remote: null, reused: false, removed: false } };
}
