// The progress of a run, per node: the steps planned for it (connect, discover, layout, each
// suite with the workload time it declared, restore), which one it is in, how many of that
// step's tests are done, and from that an estimate of the time left. Pure: it takes events and
// a clock reading and returns numbers, so the arithmetic is tested without a run; the terminal
// (src/cli/progress-view.ts) only draws what it returns.
import { MEMCHECK_WINDOW_S } from "../chaos/faults.js";
import type { HarnessOptions } from "./api-types.js";

export interface PlannedStep {
  /** Stable name the events refer to: "connect", "layout", a suite's name, "restore". */
  key: string;
  label: string;
  /** Expected seconds, from the suite's declared workloads (or a fixed guess for the harness's
   * own steps). */
  expectedS: number;
  /** Tests this step runs on the node (0 when it runs none: connect, restore). */
  units: number;
}

export type ProgressEvent =
  /** The node's planned steps; a later plan replaces an earlier one (once the suites are
   * loaded their declared durations are known), keeping what is done. */
  | { kind: "plan"; node: string; steps: PlannedStep[]; concurrency?: number }
  /** The node entered a step (or, with the same key, a new part of it: `detail`). `announce`
   * marks a part worth a line of its own in a plain log (an isolation scenario's fault). */
  | { kind: "phase"; node: string; key: string; detail?: string; announce?: boolean; atMs: number }
  /** One test of the step finished on the node. */
  | { kind: "unit"; node: string; key: string }
  /** Nothing more will happen on the node (done, or it could not be checked). */
  | { kind: "end"; node: string; atMs: number; error?: string };

export interface NodeProgress {
  node: string;
  /** The current step's label ("waiting" before the first, "done" after the end). */
  label: string;
  detail: string | null;
  done: number;
  units: number;
  /** Seconds left on this node; 0 once it ended. */
  etaS: number;
  ended: boolean;
  error: string | null;
}

interface NodeState {
  steps: PlannedStep[];
  current: string | null;
  enteredMs: number;
  detail: string | null;
  done: Map<string, number>;
  ended: boolean;
  error: string | null;
}

/** What an event changed: `announce` when a plain log should print the node's line. */
export interface Applied {
  node: string;
  announce: boolean;
}

export class ProgressModel {
  private readonly nodes = new Map<string, NodeState>();
  /** Nodes at work at once (`--concurrency`); unbounded when no plan said. */
  private slots = Number.POSITIVE_INFINITY;

  private state(node: string): NodeState {
    let s = this.nodes.get(node);
    if (!s) {
      s = {
        steps: [],
        current: null,
        enteredMs: 0,
        detail: null,
        done: new Map(),
        ended: false,
        error: null,
      };
      this.nodes.set(node, s);
    }
    return s;
  }

  apply(e: ProgressEvent): Applied {
    const s = this.state(e.node);
    switch (e.kind) {
      case "plan":
        s.steps = e.steps.map((x) => ({ ...x }));
        if (e.concurrency !== undefined) this.slots = Math.max(1, e.concurrency);
        return { node: e.node, announce: false };
      case "phase": {
        // An ended node stays ended (a late event of a node that could not be checked), and a
        // step the plan does not have (the harness's own pre-checks) changes nothing shown.
        if (s.ended || !s.steps.some((x) => x.key === e.key))
          return { node: e.node, announce: false };
        const entered = s.current !== e.key;
        if (entered) {
          s.current = e.key;
          s.enteredMs = e.atMs;
        }
        const detailChanged = (e.detail ?? null) !== s.detail;
        s.detail = e.detail ?? (entered ? null : s.detail);
        return { node: e.node, announce: entered || (e.announce === true && detailChanged) };
      }
      case "unit":
        s.done.set(e.key, (s.done.get(e.key) ?? 0) + 1);
        return { node: e.node, announce: false };
      case "end": {
        const announce = !s.ended;
        s.ended = true;
        s.error = e.error ?? null;
        s.detail = null;
        return { node: e.node, announce };
      }
    }
  }

  names(): string[] {
    return [...this.nodes.keys()];
  }

  /** Seconds left on the node at `nowMs`: what the current step still expects (its expected
   * time less the time spent in it, nothing once all its tests are done, never below zero),
   * plus every later step's. Steps before the current one are done. */
  remainingS(node: string, nowMs: number): number {
    const s = this.nodes.get(node);
    if (!s || s.ended) return 0;
    const at = s.current === null ? -1 : s.steps.findIndex((x) => x.key === s.current);
    let left = 0;
    s.steps.forEach((step, i) => {
      if (i < at) return;
      if (i > at) {
        left += step.expectedS;
        return;
      }
      const finished = step.units > 0 && (s.done.get(step.key) ?? 0) >= step.units;
      if (!finished) left += Math.max(0, step.expectedS - (nowMs - s.enteredMs) / 1000);
    });
    return left;
  }

  node(node: string, nowMs: number): NodeProgress {
    const s = this.state(node);
    const step = s.steps.find((x) => x.key === s.current);
    return {
      node,
      label: s.ended ? (s.error ? "not checked" : "done") : (step?.label ?? "waiting"),
      detail: s.ended ? s.error : s.detail,
      done: step ? (s.done.get(step.key) ?? 0) : 0,
      units: step?.units ?? 0,
      etaS: this.remainingS(node, nowMs),
      ended: s.ended,
      error: s.error,
    };
  }

  /** The nodes run side by side, at most `--concurrency` at once: the run ends when the last
   * slot does (with a slot per node, with its slowest node). */
  overallS(nowMs: number): number {
    return slotsS(
      this.names().map((n) => this.remainingS(n, nowMs)),
      this.slots,
    );
  }
}

/** The time `slots` workers take for these jobs, each job given to the least busy worker, the
 * longest first (Graham's LPT: never more than 4/3 of the best order). More slots than jobs:
 * the longest job. */
export function slotsS(jobsS: readonly number[], slots: number): number {
  const left = jobsS.filter((x) => x > 0).sort((a, b) => b - a);
  if (left.length <= slots) return Math.max(0, ...left);
  const load: number[] = Array.from({ length: slots }, () => 0);
  for (const j of left) {
    let k = 0;
    for (let i = 1; i < load.length; i++) if (load[i]! < load[k]!) k = i;
    load[k]! += j;
  }
  return Math.max(0, ...load);
}

/** 0:42, 12:05, 1:02:03: whole seconds, rounded up (an estimate of 0.2 s left is not 0:00). */
export function formatEta(seconds: number): string {
  const t = Math.max(0, Math.ceil(seconds));
  const h = Math.floor(t / 3600);
  const m = Math.floor((t % 3600) / 60);
  const s = String(t % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

/** One node's line: `sim01  stress 1g.10gb (3/7)  ETA 0:42`. */
export function progressLine(p: NodeProgress, nameWidth = p.node.length): string {
  const what = [p.label, p.detail].filter(Boolean).join(" ");
  const count = p.units > 0 && !p.ended ? ` (${p.done}/${p.units})` : "";
  const eta = p.ended ? "" : `  ETA ${formatEta(p.etaS)}`;
  return `${p.node.padEnd(nameWidth)}  ${what}${count}${eta}`;
}

/** Guesses for the harness's own steps, which declare no duration: a connection and discovery
 * take a second or two over SSH; a layout change or restore a few nvidia-smi calls per GPU. */
export const HARNESS_STEP_S = { connect: 2, discover: 2, layout: 5, restore: 5 } as const;
/** Judging a suite's tests once its workloads are in (reading results, writing evidence). */
export const SUITE_OVERHEAD_S = 1;

/** A node's whole plan: the harness's steps around the suites'. */
export function planOf(o: { layout: boolean; restore: boolean; suites: PlannedStep[] }) {
  const fixed = (key: keyof typeof HARNESS_STEP_S, label: string): PlannedStep => ({
    key,
    label,
    expectedS: HARNESS_STEP_S[key],
    units: 0,
  });
  return [
    fixed("connect", "connect"),
    fixed("discover", "discover"),
    ...(o.layout ? [fixed("layout", "layout")] : []),
    ...o.suites,
    ...(o.restore ? [fixed("restore", "restore")] : []),
  ];
}

/** The events of one run, as the harness sends them: a plan per node (first a guess, then the
 * suites' declared durations), phases for many nodes at once, and the end. Kept here so that
 * the run's orchestration (run.ts) carries one call per phase. */
export class RunProgress {
  constructor(
    private readonly emit: (e: ProgressEvent) => void,
    private readonly o: { layout: boolean; restore: boolean; concurrency?: number },
    private readonly now: () => number = Date.now,
  ) {}

  /** Each node's plan with the suites' steps (and how many nodes work at once). */
  plan(node: string, suites: readonly PlannedStep[]): void {
    const steps = planOf({ layout: this.o.layout, restore: this.o.restore, suites: [...suites] });
    const c = this.o.concurrency;
    this.emit({ kind: "plan", node, steps, ...(c !== undefined ? { concurrency: c } : {}) });
  }

  /** Before the suites are loaded their declared work is unknown: a suite that declared it runs
   * workloads is guessed at one duration, any other at its overhead. */
  start(
    nodes: readonly string[],
    suites: readonly { name: string; needs?: HarnessOptions }[],
    durationS: number,
  ): void {
    const guess = suites.map((f) => ({
      key: f.name,
      label: f.name,
      expectedS: SUITE_OVERHEAD_S + (f.needs?.runsWorkloads ? durationS : 0),
      units: 0,
    }));
    for (const n of nodes) this.plan(n, guess);
    this.phase(nodes, "connect");
  }

  phase(nodes: readonly string[], key: string, detail?: string, announce?: boolean): void {
    const atMs = this.now();
    for (const node of nodes) this.emit({ kind: "phase", node, key, detail, announce, atMs });
  }

  /** A finished check counts as one of its step's tests on its node. */
  unit(c: { node: string | null; suite: string }): void {
    if (c.node) this.emit({ kind: "unit", node: c.node, key: c.suite });
  }

  end(node: string, error?: string): void {
    this.emit({ kind: "end", node, atMs: this.now(), error });
  }
}

/** Seconds of work each suite declared per node while it loaded (its workload batches and
 * isolation scenarios): the planned duration of its step. */
export class DeclaredWork {
  private readonly s = new Map<string, number>();
  add(suite: string, node: string, seconds: number): void {
    const k = `${suite}\0${node}`;
    this.s.set(k, (this.s.get(k) ?? 0) + seconds);
  }
  get(suite: string, node: string): number {
    return this.s.get(`${suite}\0${node}`) ?? 0;
  }
}

/** The seconds a node's isolation scenarios take, roughly: per aggressor a baseline of its
 * victims (one duration), then per fault the victims beside it (one duration, about two seconds
 * of setup and judging, and for an OOM the memory check's window); a whole-card instance's
 * exclusivity check runs its tenant once. (A 3 s run of 10 scenarios on the simulator: 70 s
 * estimated, 70 s taken.) */
export function isolationSeconds(
  scenarios: readonly { gpu: number; mode: string; fault: string; aggressor: { label: string } }[],
  durationS: number,
): number {
  const aggressors = new Set<string>();
  let s = 0;
  for (const sc of scenarios) {
    if (sc.mode === "exclusive") {
      s += durationS + 1;
      continue;
    }
    aggressors.add(`${sc.gpu} ${sc.aggressor.label}`);
    s += durationS + 2 + (sc.fault === "oom" ? MEMCHECK_WINDOW_S : 0);
  }
  return s + aggressors.size * durationS;
}
