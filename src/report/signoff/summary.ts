// The sign-off in a few lines for the terminal and `--json`, from the same model the compliance
// page draws, so the headline a run prints is the one its page opens with.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describePolicy } from "../../verdicts/coverage.js";
import { CHECKS_FILE, RUN_CONTEXT_FILE, readRunContext } from "../context.js";
import { type SignoffModel, signoffModel } from "./model.js";

export interface SignoffSummary {
  headline: SignoffModel["headline"];
  tagline: string;
  policy: { source: string; name: string | null; text: string };
  /** Why it is not COMPLIANT (what failed, what was not covered or not decided). */
  reasons: string[];
  tested: number;
  required: number;
  /** Per GPU: tenants, verified isolated, aggressors used, fault kinds run. */
  gpus: {
    node: string;
    gpu: number;
    tenants: number;
    verified: number;
    aggressors: number;
    faults: string[];
  }[];
  suites: { suite: string; state: string }[];
  /** Per node with a MIG GPU: tenant confinement assessed, failed, or not assessed and why. */
  confinement: { node: string; state: string; why: string }[];
  windowS: number | null;
}

export function summaryOfModel(m: SignoffModel): SignoffSummary {
  return {
    headline: m.headline,
    tagline: m.tagline,
    policy: { source: m.policy.source, name: m.policy.name, text: describePolicy(m.policy) },
    reasons: m.reasons,
    tested: m.judgement.tested,
    required: m.judgement.required,
    gpus: m.gpus
      .filter((g) => g.partitioned)
      .map((g) => ({
        node: g.node,
        gpu: g.gpu,
        tenants: g.tenants,
        verified: g.verified,
        aggressors: g.aggressors,
        faults: g.faults,
      })),
    suites: m.coverage.suites.map((s) => ({ suite: s.suite, state: s.state })),
    confinement: m.coverage.confinement.map((n) => ({ ...n })),
    windowS: m.coverage.windowS,
  };
}

/** The sign-off of the run written in `outDir`; null when its run.json or its check records
 * are missing (reports that could not be written: the run's end says so elsewhere). */
export function signoffOfRun(outDir: string): SignoffSummary | null {
  if (![RUN_CONTEXT_FILE, CHECKS_FILE].every((f) => existsSync(join(outDir, f)))) return null;
  try {
    return summaryOfModel(signoffModel(readRunContext(outDir)));
  } catch {
    // A run.json cut short (a full disk): the run's end already reports the write that failed,
    // and no headline can be claimed from a half-written run.
    return null;
  }
}

export const policyName = (p: SignoffSummary["policy"]) =>
  `${p.name ? `${p.name}, ` : ""}${p.source}`;

/** The lines the terminal prints: the headline and why. */
export function signoffLines(s: SignoffSummary): string[] {
  const out = [`sign-off: ${s.headline}: ${s.tagline} (policy: ${policyName(s.policy)})`];
  for (const r of s.reasons.slice(0, 8)) out.push(`  ${r}`);
  if (s.reasons.length > 8) out.push(`  … ${s.reasons.length - 8} more on the compliance page`);
  return out;
}
