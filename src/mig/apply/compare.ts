// Pure comparison of a GPU's state with its target: does it match (assert, verify), what
// differs in words, and which commands converge it (apply, restore, --dry-run). A GI matches a
// target GI when the profile and the compute-instance profiles are the same, and, for a pinned
// target, the start too; unpinned targets take the layout's meaning (mig-parted's): how many
// instances of which profile, wherever the driver put them.

import {
  type Argv,
  createGpuInstances,
  destroyComputeInstances,
  destroyGpuInstances,
  resetGpu,
  setMigMode,
} from "../../nvsmi/index.js";
import { type PlanStep, stepArgv } from "../planner/index.js";
import type { GiState, GpuChangePlan, GpuMigState, GpuTarget, TargetGi } from "./types.js";

function key(profileId: number, ciProfileIds: readonly number[]): string {
  return `${profileId}|${[...ciProfileIds].sort((a, b) => a - b).join(",")}`;
}

const giKey = (g: GiState) =>
  key(
    g.profileId,
    g.cis.map((c) => c.profileId),
  );
const targetKey = (t: TargetGi) =>
  key(
    t.profileId,
    t.cis.map((c) => c.profileId),
  );

export interface GeometryMatch {
  matched: [GiState, TargetGi][];
  missing: TargetGi[];
  extra: GiState[];
}

/** Pairs existing GIs with target GIs: pinned targets first, then by profile and CIs. */
export function matchGeometry(
  current: readonly GiState[],
  target: readonly TargetGi[],
): GeometryMatch {
  const free = new Set(current);
  const matched: [GiState, TargetGi][] = [];
  const missing: TargetGi[] = [];
  const take = (t: TargetGi, ok: (g: GiState) => boolean): boolean => {
    const g = [...free].find((x) => giKey(x) === targetKey(t) && ok(x));
    if (!g) return false;
    free.delete(g);
    matched.push([g, t]);
    return true;
  };
  const ordered = [...target].sort((a, b) => Number(b.pinned) - Number(a.pinned));
  for (const t of ordered) {
    const at = (g: GiState) => g.start === t.start && g.size === t.size;
    if (take(t, at)) continue;
    if (!t.pinned && take(t, () => true)) continue;
    missing.push(t);
  }
  return { matched, missing, extra: [...free] };
}

const onOff = (b: boolean) => (b ? "Enabled" : "Disabled");

function ciText(cis: readonly { profile: string }[], gi: string): string {
  if (cis.length === 1 && cis[0]?.profile === gi.replace(/(\+me(\.all)?|-me|\+gfx)$/, "")) {
    return "";
  }
  if (cis.length === 0) return " with no compute instance";
  const counts = new Map<string, number>();
  for (const c of cis) counts.set(c.profile, (counts.get(c.profile) ?? 0) + 1);
  return ` split into ${[...counts].map(([p, n]) => (n > 1 ? `${n} × ${p}` : p)).join(" + ")}`;
}

export function describeGi(g: GiState): string {
  return `${g.profile}@${g.start}:${g.size} (GI ${g.id})${ciText(g.cis, g.profile)}`;
}

function describeTarget(t: TargetGi): string {
  return `${t.profile}${t.pinned ? ` at ${t.start}:${t.size}` : ""}${ciText(t.cis, t.profile)}`;
}

/** What differs between the GPU and its target, in words; empty when it matches. */
export function driftOf(state: GpuMigState, target: GpuTarget): string[] {
  const out: string[] = [];
  if (state.migCurrent !== target.migEnabled) {
    out.push(
      `MIG mode is ${onOff(state.migCurrent)}; ${target.source} wants it ${onOff(target.migEnabled)}`,
    );
  }
  if (state.migPending !== state.migCurrent) {
    out.push(
      `a change of MIG mode to ${onOff(state.migPending)} is pending (it takes a GPU reset)`,
    );
  }
  if (!target.migEnabled) return out;
  const gis = state.migCurrent ? state.gis : [];
  const m = matchGeometry(gis, target.gis);
  const missing = new Map<string, number>();
  for (const t of m.missing) {
    const d = describeTarget(t);
    missing.set(d, (missing.get(d) ?? 0) + 1);
  }
  for (const [d, n] of missing) {
    out.push(`missing ${n > 1 ? `${n} GPU instances` : "GPU instance"} ${d}`);
  }
  for (const g of m.extra) out.push(`unexpected GPU instance ${describeGi(g)}`);
  return out;
}

export interface ChangeOptions {
  /** Whether a MIG mode change of this GPU goes through a GPU reset (Ampere). */
  modeNeedsReset: boolean;
  /** `-cgi ID:start` works (R525+): GIs that sit where the plan wants them can stay. */
  placementSyntax: boolean;
}

/**
 * The commands that take a GPU in `state` to `target`. Geometry that already matches is left
 * alone (no command at all when everything matches); otherwise GIs that sit exactly where the
 * plan puts them stay, every other GI goes (its CIs first), and the plan's remaining steps run.
 */
export function changePlan(state: GpuMigState, target: GpuTarget, o: ChangeOptions): GpuChangePlan {
  const gpu = target.gpu;
  const drift = driftOf(state, target);
  const plan: GpuChangePlan = {
    gpu,
    drift,
    setMode: null,
    resetPending: false,
    destroyCisOf: [],
    destroyGis: [],
    create: [],
    commands: [],
  };
  if (drift.length === 0) return plan;
  const want = target.migEnabled;
  // A change toward the target that is already pending needs only the reset (Ampere).
  const pendingToward = state.migCurrent !== want && state.migPending === want && o.modeNeedsReset;
  if (pendingToward) plan.resetPending = true;
  else if (state.migCurrent !== want || state.migPending !== want) plan.setMode = want;

  if (state.migCurrent) {
    const keep = new Set<GiState>();
    const m = matchGeometry(state.gis, want ? target.gis : []);
    const geometryOk = want && m.missing.length === 0 && m.extra.length === 0;
    if (want && !geometryOk && o.placementSyntax) {
      for (const t of target.gis) {
        const g = state.gis.find(
          (x) =>
            !keep.has(x) && x.start === t.start && x.size === t.size && giKey(x) === targetKey(t),
        );
        if (g) keep.add(g);
      }
    }
    if (!geometryOk) {
      const gone = state.gis.filter((g) => !keep.has(g));
      plan.destroyCisOf = gone.filter((g) => g.cis.length > 0).map((g) => g.id);
      plan.destroyGis = gone.map((g) => g.id);
      const kept = (p: { start: number; size: number }) =>
        [...keep].some((g) => g.start === p.start && g.size === p.size);
      plan.create = want
        ? target.steps.filter((s) => !kept(s.kind === "create-gi" ? s.placement : s.gi))
        : [];
    }
  } else if (want) {
    plan.create = [...target.steps];
  }
  plan.commands = commandsOf(plan, o.placementSyntax);
  return plan;
}

type GiStep = Extract<PlanStep, { kind: "create-gi" }>;
type CiStep = Extract<PlanStep, { kind: "create-ci" }>;

/** Several GPU instances made by one `-cgi a:s,b:s [-C]`, or the CIs of one GI by one `-cci`. */
export type CreateBatch =
  | { kind: "gis"; gpu: number; steps: GiStep[]; withDefaultCi: boolean }
  | { kind: "ci"; step: CiStep };

/**
 * The planner's steps as few calls as keep their meaning: with explicit starts the order of GIs
 * does not matter, so all GIs go in one `-cgi` per `-C` flavour, then the CIs; when the driver
 * places them, only neighbouring GIs are joined, so the planned order stays as it is.
 */
export function createBatches(steps: readonly PlanStep[], placementSyntax: boolean): CreateBatch[] {
  const out: CreateBatch[] = [];
  const ordered = placementSyntax
    ? [
        ...steps.filter((s) => s.kind === "create-gi" && s.withDefaultCi),
        ...steps.filter((s) => s.kind === "create-gi" && !s.withDefaultCi),
        ...steps.filter((s) => s.kind === "create-ci"),
      ]
    : steps;
  for (const s of ordered) {
    const last = out.at(-1);
    if (s.kind === "create-ci") out.push({ kind: "ci", step: s });
    else if (last?.kind === "gis" && last.withDefaultCi === s.withDefaultCi) last.steps.push(s);
    else out.push({ kind: "gis", gpu: s.gpu, steps: [s], withDefaultCi: s.withDefaultCi });
  }
  return out;
}

export function batchArgv(
  b: CreateBatch,
  giId?: (gi: { start: number; size: number }) => number | undefined,
): Argv {
  if (b.kind === "ci") return stepArgv(b.step, giId);
  const requests = b.steps.map((s) =>
    s.start === null ? s.profileId : { profile: s.profileId, start: s.start },
  );
  return createGpuInstances(b.gpu, requests, { defaultComputeInstance: b.withDefaultCi });
}

/** The change commands in the order the executor runs them. */
export function commandsOf(p: GpuChangePlan, placementSyntax: boolean): Argv[] {
  const out: Argv[] = [];
  if (p.destroyCisOf.length > 0) out.push(destroyComputeInstances(p.gpu, p.destroyCisOf));
  if (p.destroyGis.length > 0) out.push(destroyGpuInstances(p.gpu, p.destroyGis));
  if (p.setMode !== null) out.push(setMigMode(p.setMode, p.gpu));
  if (p.resetPending) out.push(resetGpu(p.gpu));
  for (const b of createBatches(p.create, placementSyntax)) out.push(batchArgv(b));
  return out;
}
