// What a run writes into the records as it goes: each node's inventory and live catalogue
// (while the run's layout is in place), every measurement as it arrives (and to
// measurements.jsonl), and the Xid lines the kernel log gained during the run.
import { appendFileSync } from "node:fs";
import { parseXid } from "../nvsmi/xid.js";
import type { Recorder } from "../store/recorder.js";
import { type GpuTopology, readTopology, topologyOf } from "../store/topology.js";
import type { BesideLockOptions } from "../transport/types.js";
import type { InstanceOutcome } from "../workloads/launcher.js";
import type { NodeSession } from "./session.js";

/** The key of the catalogue's reads in SessionOpenOptions.withDiscovery. */
export const TOPOLOGY_KEY = "topology";

/** null: read with a discovery that failed, to be read again where still wanted. */
const early = new WeakMap<NodeSession, Promise<Map<number, GpuTopology> | null>>();

/** The node's live catalogue read beside its discovery, for recordNodes: only where the run
 * applies no layout, so that what is read then is the run's (else recordNodes reads it after the
 * apply). Off the run's path, as discovery's own `-lgi` read is: used only if the node shows MIG
 * instances (a read that fails is no topology, as in readTopology). Started once: in the call of
 * the discovery started beside the node lock where the run asked for it there
 * (SessionOpenOptions.withDiscovery: TOPOLOGY_READS as TOPOLOGY_KEY), else beside the lock on
 * its own (`exec`: NodeSession.readsBesideLock), else beside discovery. */
export function readTopologyEarly(s: NodeSession, exec?: BesideLockOptions): void {
  if (early.has(s)) return;
  const along = s.alongDiscovery(TOPOLOGY_KEY);
  early.set(
    s,
    along
      ? along.then(
          ([lgip, lgipp]) => topologyOf(lgip, lgipp),
          () => null,
        )
      : readTopology(s, exec),
  );
}

export async function recordNodes(
  recorder: Recorder,
  sessions: readonly NodeSession[],
  layout: string | null,
  errText: (e: unknown) => string,
): Promise<void> {
  await Promise.all(
    sessions.map(async (s) => {
      if (s.error) {
        recorder.node(
          { node: s.node.name, inventory: null, suites: [], error: errText(s.error) },
          new Map(),
          null,
        );
        return;
      }
      const inv = s.discovered;
      const migOn = inv?.instances.some((i) => i.gpuInstanceId !== null) ?? false;
      const read = early.get(s);
      early.delete(s);
      const topology = migOn ? ((await read) ?? (await readTopology(s))) : new Map();
      recorder.node(
        { node: s.node.name, inventory: inv, suites: [], error: null },
        topology,
        layout,
      );
    }),
  );
}

/** One transaction per instance's figures: what was measured before an interrupt stays, whole. */
export function recordMeasurements(
  recorder: Recorder | null,
  file: string,
  runId: string,
  suite: string,
  outcomes: readonly InstanceOutcome[],
): void {
  for (const out of outcomes) {
    for (const m of out.measurements) {
      try {
        appendFileSync(file, `${JSON.stringify({ runId, suite, ...m })}\n`);
      } catch {
        /* a full disk under --out: the records still get it */
      }
    }
    recorder?.measurements(suite, out.measurements, out.instance.gpuName);
  }
}

export async function recordXids(
  recorder: Recorder,
  sessions: readonly NodeSession[],
  dmesgAtStart: ReadonlyMap<string, string[] | null>,
): Promise<void> {
  for (const s of sessions) {
    const before = new Set(dmesgAtStart.get(s.node.name) ?? []);
    const r = await s.exec({ argv: ["dmesg"] }, { timeoutMs: 30_000 }).catch(() => null);
    for (const line of r?.stdout.split("\n") ?? []) {
      if (!line || before.has(line)) continue;
      try {
        for (const x of parseXid(line).events)
          recorder.xid(s.node.name, {
            pci: x.pci,
            xid: x.xid,
            gpuInstanceId: x.gpuInstanceId,
            computeInstanceId: x.computeInstanceId,
            line,
          });
      } catch {
        /* not an Xid line */
      }
    }
  }
}
