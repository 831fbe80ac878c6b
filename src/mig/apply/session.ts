// apply, assert and restore over a set of nodes. All of them first read every node and work out
// every GPU's target and commands; a node that cannot be read, whose target does not fit, or
// that an interlock refuses stops the whole apply or restore before anything is changed
// anywhere (a maintenance window must not end with half the nodes changed). Then, node by node
// in parallel and GPU by GPU on each node, the journal is written and the GPUs converge.

import pLimit from "p-limit";
import { isSlicecheckError } from "../../errors.js";
import type { NodeSpec } from "../../inventory/types.js";
import { openTransport } from "../../transport/open.js";
import type { Transport } from "../../transport/types.js";
import type { LayoutConfig } from "../layout/index.js";
import { supportsPlacementSyntax } from "../planner/index.js";
import { changePlan } from "./compare.js";
import { converge, emptyReport } from "./converge.js";
import { type GpuToChange, interlocks } from "./interlocks.js";
import { ensureJournal, type Journal } from "./journal.js";
import { readNode } from "./read.js";
import { checkDevicesPresent, entryFor, layoutTarget, modeChangeNeedsReset } from "./target.js";
import type {
  GpuChangePlan,
  GpuListings,
  GpuReport,
  GpuSnapshot,
  GpuTarget,
  NodeSnapshot,
} from "./types.js";

export type NodeStatus =
  | "unchanged"
  | "changed"
  | "dry-run"
  | "refused"
  | "held"
  | "failed"
  | "mismatch"
  | "unreachable"
  | "bad-input"
  | "match"
  | "drift"
  | "restored"
  | "no-journal";

export interface NodeReport {
  node: string;
  status: NodeStatus;
  error: { code: string; message: string } | null;
  refusals: string[];
  journal: { local: string; remote: string | null; reused: boolean; removed: boolean } | null;
  gpus: GpuReport[];
}

export interface SessionOptions {
  runId: string;
  journalDir: string;
  allowReset?: boolean;
  dryRun?: boolean;
  keep?: boolean;
  layout?: { file: string; config: string };
  /** Connections the caller already holds (the run's node sessions): used, never closed. */
  transports?: ReadonlyMap<string, Transport>;
}

export interface Link {
  spec: NodeSpec;
  t: Transport | null;
  error: unknown;
  /** The caller's connection: not closed here. */
  held?: boolean;
}

interface PreparedGpu {
  gpu: GpuSnapshot;
  target: GpuTarget | null;
  plan: GpuChangePlan | null;
  modeNeedsReset: boolean;
  retarget: ((l: GpuListings | null) => GpuTarget) | null;
}

export interface Prepared {
  t: Transport;
  snapshot: NodeSnapshot;
  gpus: PreparedGpu[];
  refusals: string[];
  journal: { journal: Journal; from: string } | null;
}

export type Targeter = (
  s: NodeSnapshot,
  g: GpuSnapshot,
) => {
  target: GpuTarget;
  retarget: (l: GpuListings | null) => GpuTarget;
} | null;

export async function withLinks<T>(
  nodes: readonly NodeSpec[],
  runId: string,
  fn: (links: Link[]) => Promise<T>,
  held?: ReadonlyMap<string, Transport>,
): Promise<T> {
  // sshd's MaxStartups drops unauthenticated connections beyond 10 in flight on one host.
  const limit = pLimit(8);
  const links = await Promise.all(
    nodes.map((spec) =>
      limit(async (): Promise<Link> => {
        const mine = held?.get(spec.name);
        if (mine) return { spec, t: mine, error: undefined, held: true };
        const t = openTransport(spec, { runId });
        try {
          await t.connect();
          return { spec, t, error: undefined };
        } catch (error) {
          await t.close().catch(() => {});
          return { spec, t: null, error };
        }
      }),
    ),
  );
  try {
    return await fn(links);
  } finally {
    await Promise.all(links.map((l) => (l.held ? undefined : l.t?.close().catch(() => {}))));
  }
}

export function errorReport(node: string, e: unknown, status?: NodeStatus): NodeReport {
  const code = isSlicecheckError(e) ? e.code : "INTERNAL";
  const bad = isSlicecheckError(e) && e.exitClass === "bad-input";
  return {
    node,
    status: status ?? (bad ? "bad-input" : "failed"),
    error: { code, message: e instanceof Error ? e.message : String(e) },
    refusals: [],
    journal: null,
    gpus: [],
  };
}

function layoutTargeter(config: LayoutConfig, s: NodeSnapshot): Targeter {
  checkDevicesPresent(config, s.gpus);
  return (s, g) => {
    const entry = entryFor(config, g);
    if (!entry) return null;
    return {
      target: layoutTarget(config, entry, g, s.driver),
      retarget: (l) => layoutTarget(config, entry, g, s.driver, l),
    };
  };
}

export async function prepare(
  link: Link,
  targeter: (s: NodeSnapshot) => Targeter | Promise<Targeter>,
  o: SessionOptions,
  journal: Prepared["journal"] = null,
): Promise<Prepared | NodeReport> {
  const t = link.t;
  if (!t) return errorReport(link.spec.name, link.error, "unreachable");
  try {
    const snapshot = await readNode(t, link.spec);
    const forGpu = await targeter(snapshot);
    const placementSyntax = supportsPlacementSyntax(snapshot.driver);
    const gpus: PreparedGpu[] = snapshot.gpus.map((gpu) => {
      const modeNeedsReset = modeChangeNeedsReset(gpu);
      const tg = forGpu(snapshot, gpu);
      if (!tg) return { gpu, target: null, plan: null, modeNeedsReset, retarget: null };
      const plan = changePlan(gpu, tg.target, { modeNeedsReset, placementSyntax });
      return { gpu, target: tg.target, plan, modeNeedsReset, retarget: tg.retarget };
    });
    const changing: GpuToChange[] = gpus.flatMap((g) =>
      g.plan && g.plan.commands.length > 0
        ? [{ gpu: g.gpu, plan: g.plan, modeNeedsReset: g.modeNeedsReset }]
        : [],
    );
    const refusals = interlocks(snapshot, changing, { allowReset: o.allowReset ?? false });
    return { t, snapshot, gpus, refusals, journal };
  } catch (e) {
    return errorReport(link.spec.name, e);
  }
}

export function isReport(p: Prepared | NodeReport): p is NodeReport {
  return "status" in p;
}

function plannedReport(g: PreparedGpu, dryRun: boolean): GpuReport {
  const r = emptyReport(g.gpu, g.plan);
  if (!g.target) r.status = "not-in-layout";
  else if (g.plan && g.plan.commands.length > 0) r.status = dryRun ? "would-change" : "unchanged";
  r.notes.push(...(g.target?.notes ?? []));
  return r;
}

function nodeReport(p: Prepared, status: NodeStatus, gpus: GpuReport[]): NodeReport {
  return { node: p.snapshot.node, status, error: null, refusals: p.refusals, journal: null, gpus };
}

/** Journal, then converge each GPU that needs it, one after the other. */
async function execute(p: Prepared, o: SessionOptions, restoring: boolean): Promise<NodeReport> {
  const reports = p.gpus.map((g) => plannedReport(g, false));
  const report = nodeReport(p, "changed", reports);
  try {
    if (!restoring) {
      const j = await ensureJournal(p.t, p.snapshot, o.journalDir, {
        runId: o.runId,
        keep: o.keep ?? false,
        layout: o.layout ?? null,
      });
      report.journal = { local: j.local, remote: j.remote, reused: j.reused, removed: false };
    }
  } catch (e) {
    return errorReport(p.snapshot.node, e);
  }
  const placementSyntax = supportsPlacementSyntax(p.snapshot.driver);
  for (const [i, g] of p.gpus.entries()) {
    const target = g.target;
    if (!target || !g.plan || g.plan.commands.length === 0) continue;
    reports[i] = await converge({
      t: p.t,
      gpu: g.gpu,
      target,
      plan: g.plan,
      allowReset: o.allowReset ?? false,
      modeNeedsReset: g.modeNeedsReset,
      placementSyntax,
      retarget: g.retarget ?? (() => target),
    });
  }
  if (reports.some((r) => r.status === "failed")) report.status = "failed";
  else if (reports.some((r) => r.status === "mismatch")) report.status = "mismatch";
  return report;
}

function changes(p: Prepared): boolean {
  return p.gpus.some((g) => g.plan && g.plan.commands.length > 0);
}

/** Shared by apply and restore: prepare every node, refuse all if any is refused, then change. */
export async function changeNodes(
  prepared: (Prepared | NodeReport)[],
  o: SessionOptions,
  restoring: boolean,
): Promise<NodeReport[]> {
  // A node this controller lost the lease of is somebody else's now: it holds back no other.
  const blocked = prepared.some((p) =>
    isReport(p)
      ? p.status !== "no-journal" && p.error?.code !== "LEASE_LOST"
      : p.refusals.length > 0,
  );
  return Promise.all(
    prepared.map(async (p): Promise<NodeReport> => {
      if (isReport(p)) return p;
      const planned = p.gpus.map((g) => plannedReport(g, o.dryRun ?? false));
      if (p.refusals.length > 0) return nodeReport(p, "refused", planned);
      if (!changes(p)) return nodeReport(p, "unchanged", planned);
      if (o.dryRun) return nodeReport(p, "dry-run", planned);
      // Another node was refused or could not be read: change none, so none is half-done.
      if (blocked) return nodeReport(p, "held", planned);
      return execute(p, o, restoring);
    }),
  );
}

export async function applyLayout(
  nodes: readonly NodeSpec[],
  config: LayoutConfig,
  o: SessionOptions,
): Promise<NodeReport[]> {
  return withLinks(
    nodes,
    o.runId,
    async (links) => {
      const prepared = await Promise.all(
        links.map((l) => prepare(l, (s) => layoutTargeter(config, s), o)),
      );
      return changeNodes(prepared, o, false);
    },
    o.transports,
  );
}

export async function assertLayout(
  nodes: readonly NodeSpec[],
  config: LayoutConfig,
  o: SessionOptions,
): Promise<NodeReport[]> {
  return withLinks(
    nodes,
    o.runId,
    async (links) => {
      const prepared = await Promise.all(
        links.map((l) => prepare(l, (s) => layoutTargeter(config, s), o)),
      );
      return prepared.map((p) => {
        if (isReport(p)) return p;
        const gpus = p.gpus.map((g) => {
          const r = plannedReport(g, false);
          if (g.target) r.status = r.drift.length > 0 ? "drift" : "match";
          r.planned = [];
          return r;
        });
        const drift = gpus.some((g) => g.status === "drift");
        return { ...nodeReport(p, drift ? "drift" : "match", gpus), refusals: [] };
      });
    },
    o.transports,
  );
}

/** The exit code a node contributes: 3 bad input, 2 could not do it, 1 a mismatch or drift. */
export function nodeExitCode(r: NodeReport): number {
  switch (r.status) {
    case "bad-input":
      return 3;
    case "unreachable":
    case "failed":
    case "refused":
      return 2;
    case "mismatch":
    case "drift":
      return 1;
    default:
      return 0;
  }
}
