// `slicecheck observe -i INV [--nodes SEL] --duration D [--interval S] [--label NAME] [--db …]
// [--json] [--svg FILE]`: what the node's real tenants do. Per node, per GPU and per GPU
// instance, a sample every interval (DCGM where nv-hostengine answers, else nvidia-smi), then
// the seed's figures: share of the time under 50 % busy, busy mean/p50/p95, memory in use
// against what is offered, idle time. Recorded as a run (its label is what `diff --before
// --after` names), so an observation before slicing compares with one after.
// It takes no node lock: it starts no workload and changes no layout, it only reads what
// nvidia-smi and dcgmi show, which any number of readers may do alongside a run.
// Ctrl-C ends the observation early; what was gathered is still reported and recorded (the run
// reads `interrupted`), and the exit is 130. Exit 2 when a node or one of its GPUs (fallen off
// the bus) could not be observed; the others are still reported and recorded.
import { writeFileSync } from "node:fs";
import { SlicecheckError } from "../../errors.js";
import { utilizationSvg } from "../../report/svg/utilization.js";
import { dbPath } from "../../store/db.js";
import { OBSERVE_SUITE } from "../../store/observe.js";
import { Recorder } from "../../store/recorder.js";
import { fanOut, newRunId } from "../../transport/open.js";
import { sharedAbort } from "../../util/abort.js";
import type { Measurement } from "../../workloads/launcher.js";
import { type NodeObserver, type ObservedUnit, observeNode } from "../../workloads/observe.js";
import {
  figureMetrics,
  summaryLine,
  type UnitFigures,
  unitFigures,
  unitName,
} from "../../workloads/observe-figures.js";
import { loadSelected, type NodeOptions, type Out, table } from "../context.js";
import { observeProgress } from "../observe-progress.js";
import { viewMode } from "../progress-view.js";

export interface ObserveCliOptions extends NodeOptions {
  /** Seconds. */
  duration: number;
  /** Seconds between samples. */
  interval: number;
  label?: string;
  db?: string;
  /** Seconds. */
  dbTimeout?: number;
  json?: boolean;
  svg?: string;
}

interface NodeResult {
  node: string;
  error: string | null;
  observer: NodeObserver | null;
  units: { unit: ObservedUnit; figures: UnitFigures }[];
}

function check(o: ObserveCliOptions): void {
  if (o.interval > o.duration)
    throw new SlicecheckError(
      "USAGE",
      `--interval ${o.interval} s is longer than --duration ${o.duration} s: an observation needs several samples`,
      { option: "--interval" },
    );
}

/** The first Ctrl-C (or SIGTERM) ends the observation early; a second one exits at once. */
function onInterrupt(abort: AbortController): () => void {
  const h = (sig: NodeJS.Signals) => {
    if (abort.signal.aborted) process.exit(sig === "SIGINT" ? 130 : 143);
    abort.abort(sig);
  };
  process.on("SIGINT", h);
  process.on("SIGTERM", h);
  return () => {
    process.removeListener("SIGINT", h);
    process.removeListener("SIGTERM", h);
  };
}

export async function observeCommand(o: ObserveCliOptions, io: Out): Promise<number> {
  check(o);
  const { nodes } = loadSelected(o, io);
  const runId = newRunId();
  const recorder = await Recorder.start(dbPath(o.db), {
    runId,
    label: o.label,
    argv: process.argv.slice(2),
    timeoutMs: o.dbTimeout === undefined ? undefined : o.dbTimeout * 1000,
  });
  const durationMs = o.duration * 1000;
  const progress = await observeProgress(
    viewMode(o, io),
    io,
    nodes.map((n) => n.name),
    durationMs,
  );
  if (!o.json)
    progress.message(
      `observe: run ${runId}, ${nodes.length} node(s), ${o.duration} s every ${o.interval} s`,
    );
  const abort = sharedAbort();
  const release = onInterrupt(abort);
  let results: NodeResult[];
  try {
    const fanned = await fanOut(nodes, { runId }, (t) =>
      observeNode(t, {
        durationMs,
        intervalMs: o.interval * 1000,
        signal: abort.signal,
        onTick: (ms, obs) =>
          progress.tick(
            t.node.name,
            ms,
            Math.max(0, ...[...obs.samples.values()].map((s) => s.length)),
          ),
      }),
    );
    results = fanned.map((r) => resultOf(r.node.name, r.value ?? null, r.error));
  } finally {
    release();
    progress.stop();
  }
  const interrupted = abort.signal.aborted;
  for (const r of results) record(recorder, r);
  // A GPU lost at discovery was not observed either: the observation is incomplete.
  const failed = results.some((r) => r.error !== null || (r.observer?.lost.length ?? 0) > 0);
  const failure = await recorder.finish(interrupted ? "interrupted" : failed ? "broken" : "passed");
  if (failure)
    io.err(`slicecheck observe: warning: the records were not all written: ${failure.message}`);
  if (o.svg) writeFileSync(o.svg, svgOf(results, o.label ?? runId));
  print(results, { runId, label: o.label ?? null, interrupted, json: o.json }, io);
  return interrupted ? 130 : failed ? 2 : 0;
}

function resultOf(node: string, obs: NodeObserver | null, error: unknown): NodeResult {
  if (!obs)
    return {
      node,
      error: error instanceof Error ? error.message : String(error ?? "not observed"),
      observer: null,
      units: [],
    };
  const units = obs.units.map((unit) => ({
    unit,
    figures: unitFigures(obs.samples.get(unit.key) ?? [], unit.memoryMiB),
  }));
  // A node none of whose readings worked is not observed: its last trouble says why.
  const none = units.every((u) => u.figures.samples === 0);
  return { node, error: none ? (obs.problem ?? "no sample was read") : null, observer: obs, units };
}

/** The node's GPUs, each unit's figures and its raw samples (sample_busy, sample_memory_used,
 * repetition = the sample's number), one write per unit. */
function record(rec: Recorder, r: NodeResult): void {
  if (!r.observer) return;
  const gpus = r.units
    .filter((u) => u.unit.gpuInstanceId === null)
    .map((u) => ({ uuid: u.unit.gpuUuid, index: u.unit.gpu, name: u.unit.gpuName }));
  rec.observedNode(r.node, r.observer.versions, gpus);
  for (const { unit, figures } of r.units) {
    if (figures.samples === 0) continue;
    const base = {
      node: r.node,
      gpuUuid: unit.gpuUuid,
      instanceUuid: unit.key,
      profile: unit.profile,
      placement: unit.placement,
      workload: OBSERVE_SUITE,
    };
    const ms: Measurement[] = figureMetrics(figures).map((m) => ({ ...base, ...m, repetition: 1 }));
    (r.observer.samples.get(unit.key) ?? []).forEach((s, i) => {
      if (s.busyPct !== null)
        ms.push({ ...base, metric: "sample_busy", value: s.busyPct, unit: "%", repetition: i + 1 });
      if (s.memUsedMiB !== null)
        ms.push({
          ...base,
          metric: "sample_memory_used",
          value: s.memUsedMiB,
          unit: "MiB",
          repetition: i + 1,
        });
    });
    rec.measurements(OBSERVE_SUITE, ms, unit.gpuName);
  }
}

const share = (x: number | null) => (x === null ? "n/a" : `${Math.round(100 * x)}%`);
const val = (x: number | null, unit = "") => (x === null ? "n/a" : `${x}${unit}`);

function print(
  results: readonly NodeResult[],
  o: { runId: string; label: string | null; interrupted: boolean; json?: boolean },
  io: Out,
): void {
  // What was not observed goes to stderr, with --json too.
  for (const r of results) {
    if (r.error) io.err(`${r.node}: not observed: ${r.error}`);
    for (const l of r.observer?.lost ?? []) io.err(`${r.node}: ${l}: not observed`);
  }
  if (o.json) {
    const nodes = results.map((r) => ({
      node: r.node,
      source: r.observer?.source ?? null,
      error: r.error,
      lost: r.observer?.lost ?? [],
      problem: r.observer?.problem ?? null,
      units: r.units.map(({ unit, figures }) => ({
        ...unit,
        figures,
        summary: summaryLine(unit, figures),
        samples: r.observer?.samples.get(unit.key) ?? [],
      })),
    }));
    io.out(
      JSON.stringify(
        { runId: o.runId, label: o.label, interrupted: o.interrupted, nodes },
        null,
        2,
      ),
    );
    return;
  }
  const rows = [
    [
      "node",
      "unit",
      "source",
      "samples",
      "<50% busy",
      "mean",
      "p50",
      "p95",
      "idle",
      "memory used/offered (MiB)",
    ],
  ];
  for (const r of results)
    for (const { unit, figures: f } of r.units)
      rows.push([
        r.node,
        unitName(unit),
        r.observer?.source ?? "-",
        String(f.samples),
        share(f.under50Share),
        val(f.busyMean, "%"),
        val(f.busyP50, "%"),
        val(f.busyP95, "%"),
        share(f.idleShare),
        `${val(f.memUsedMean)}/${val(f.memOfferedMiB)}`,
      ]);
  if (rows.length > 1) io.out(table(rows));
  for (const r of results)
    for (const { unit, figures } of r.units) io.out(`${r.node} ${summaryLine(unit, figures)}`);
  io.out(
    `observe: run ${o.runId}${o.label ? ` (label ${o.label})` : ""}${o.interrupted ? ", interrupted: the figures cover the time observed" : ""}; compare two with \`slicecheck diff --before LABEL --after LABEL\``,
  );
}

function svgOf(results: readonly NodeResult[], title: string): string {
  const strips = results.flatMap((r) =>
    r.units.map(({ unit, figures: f }) => {
      const s = r.observer?.samples.get(unit.key) ?? [];
      return {
        label: `${r.node} ${unitName(unit)}`,
        busy: s.map((x) => x.busyPct),
        memUsed: s.map((x) => x.memUsedMiB),
        memOffered: unit.memoryMiB,
        figures: `under 50 %: ${share(f.under50Share)} · mean ${val(f.busyMean, " %")} · p95 ${val(f.busyP95, " %")} · idle ${share(f.idleShare)} · memory ${val(f.memUsedMean)}/${val(f.memOfferedMiB)} MiB`,
      };
    }),
  );
  return utilizationSvg(`slicecheck observe: ${title}`, strips);
}
