// Each node's intended layout (inventory `mig_config` + `mig_layout`), loaded and checked before
// any node is touched: every distinct file is read once, its config chosen and planned offline,
// and a problem names the inventory line that asked for it. Nodes that share a config are
// grouped, because apply and assert take one config for many nodes.

import { SlicecheckError } from "../../errors.js";
import type { IntendedLayout, NodeSpec } from "../../inventory/types.js";
import type { Transport } from "../../transport/types.js";
import { type LayoutConfig, loadLayout, selectConfig } from "../layout/index.js";
import { localJournalPath, removeLocalJournal, removeRemoteJournal } from "./journal.js";
import { applyLayout, errorReport, type NodeReport, type SessionOptions } from "./session.js";
import { validateOffline } from "./target.js";

export interface IntendedGroup {
  file: string;
  config: LayoutConfig;
  nodes: NodeSpec[];
}

/** `config 'all-balanced' of /etc/slicecheck/layouts.yaml` */
export function intendedName(i: { file: string; config: string }): string {
  return `config '${i.config}' of ${i.file}`;
}

function loadOne(i: IntendedLayout): LayoutConfig {
  try {
    const config = selectConfig(loadLayout(i.file), i.config);
    validateOffline(config, i.file);
    return config;
  } catch (e) {
    const err = e as SlicecheckError;
    throw new SlicecheckError(
      err.code ?? "LAYOUT",
      `${i.origin}: the intended layout, ${intendedName(i)}: ${err.message}`,
      { origin: i.origin, file: i.file, config: i.config },
    );
  }
}

/**
 * The selected nodes grouped by intended layout, each layout loaded and planned offline. Nodes
 * without one are refused when `all` (apply --intended, assert without a layout: the user asked
 * for every node's), named together so one message lists every node to fix.
 */
export function intendedGroups(nodes: readonly NodeSpec[], all: boolean): IntendedGroup[] {
  const without = nodes.filter((n) => !n.intended).map((n) => n.name);
  if (all && without.length > 0)
    throw new SlicecheckError(
      "USAGE",
      `${without.join(", ")}: no intended layout in the inventory; give ${without.length === 1 ? "it" : "them"} mig_config (and mig_layout, e.g. in defaults), or name a layout file`,
      { nodes: without },
    );
  const groups = new Map<string, IntendedGroup>();
  for (const n of nodes) {
    const i = n.intended;
    if (!i) continue;
    const key = `${i.file}\0${i.config}`;
    const g = groups.get(key);
    if (g) g.nodes.push(n);
    else groups.set(key, { file: i.file, config: loadOne(i), nodes: [n] });
  }
  return [...groups.values()];
}

/**
 * Brings each group to its intended layout (each group all-or-nothing, as one apply). A node
 * verified in it loses its journal: the intended layout is its home state, and a later
 * `restore`, or a run's teardown, must not take it back to what it was before (the empty
 * layout a driver upgrade leaves, or a test layout).
 */
export async function applyIntended(
  groups: readonly IntendedGroup[],
  o: SessionOptions & { transports: ReadonlyMap<string, Transport> },
): Promise<NodeReport[]> {
  const done = await Promise.all(
    groups.map((g) =>
      applyLayout(g.nodes, g.config, {
        ...o,
        keep: false,
        layout: { file: g.file, config: g.config.name },
      }),
    ),
  );
  const reports = done.flat();
  if (o.dryRun) return reports;
  return Promise.all(reports.map((r) => settled(r, o.transports.get(r.node), o.journalDir)));
}

async function settled(
  r: NodeReport,
  t: Transport | undefined,
  journalDir: string,
): Promise<NodeReport> {
  if (!t || (r.status !== "changed" && r.status !== "unchanged")) return r;
  try {
    const remote = await removeRemoteJournal(t);
    removeLocalJournal(journalDir, r.node);
    return {
      ...r,
      journal: {
        local: localJournalPath(journalDir, r.node),
        remote,
        reused: false,
        removed: true,
      },
    };
  } catch (e) {
    return { ...errorReport(r.node, e), gpus: r.gpus };
  }
}
