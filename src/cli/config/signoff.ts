// The `signoff:` section of slicecheck.config.yaml: the site's sign-off policy, which decides
// when a compliance page may say COMPLIANT (src/verdicts/coverage.ts). Every key is optional and
// falls back to the documented default; a bad value names the file and line, before any node
// is touched. The policy goes into run.json, so the page, the terminal and `--json` judge the
// run by the same policy, and the page names it.
import { isMap, isScalar, LineCounter, type Node, parseDocument } from "yaml";
import { z } from "zod";
import { FAULTS } from "../../chaos/history.js";
import { SlicecheckError } from "../../errors.js";
import { durationSeconds } from "../../util/duration.js";
import { POLICY_SUITES, suiteOf } from "../../util/suite-registry.js";
import { DEFAULT_POLICY, type SignoffPolicy } from "../../verdicts/coverage.js";

const list = z.union([z.string(), z.array(z.string())], {
  error: "expected a comma list or a YAML list of names",
});

export const SIGNOFF_SCHEMA = z.strictObject({
  name: z.string({ error: "expected a name (a string)" }).optional(),
  aggressors: z
    .union(
      [
        z.literal("all"),
        z
          .number()
          .int()
          .min(1, "expected 'all' or a whole number of aggressors per GPU (1 or more)"),
      ],
      {
        error: "expected 'all' or a whole number of aggressors per GPU (1 or more)",
      },
    )
    .optional(),
  faults: list.optional(),
  suites: list.optional(),
  confinement: z
    .boolean({ error: "expected true (required, the default) or false (waived)" })
    .optional(),
  min_window: z
    .union([z.string(), z.number()], { error: "expected a duration (30, 30s, 5m)" })
    .optional(),
});

const names = (v: string | string[]) =>
  (Array.isArray(v) ? v : v.split(",")).map((x) => x.trim()).filter(Boolean);

function lineOf(text: string, key: string): number {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc });
  if (!isMap(doc.contents)) return 1;
  const top = doc.contents.items.find((p) => isScalar(p.key) && p.key.value === "signoff");
  const sub = top?.value;
  const item = isMap(sub)
    ? sub.items.find((p) => isScalar(p.key) && p.key.value === key)
    : undefined;
  const range = ((item?.key as Node | undefined) ?? (top?.key as Node | undefined))?.range;
  return range ? lc.linePos(range[0]).line : 1;
}

/** The policy from the `signoff:` value of `file` (its text `text`); `where` is the section's
 * `FILE:LINE`, the policy's source as the page names it. */
export function signoffPolicyFrom(
  value: unknown,
  file: string,
  text: string,
  where: string,
): SignoffPolicy {
  const bad = (key: string, what: string): never => {
    const line = lineOf(text, key);
    throw new SlicecheckError("CONFIG", `${file}:${line}: signoff.${key}: ${what}`, {
      file,
      line,
    });
  };
  const parsed = SIGNOFF_SCHEMA.safeParse(value ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    if (issue.code === "unrecognized_keys")
      bad(
        issue.keys[0]!,
        `unknown key; the keys are ${Object.keys(SIGNOFF_SCHEMA.shape).join(", ")}`,
      );
    bad(String(issue.path[0] ?? ""), `${issue.message}; fix the value or remove the line`);
  }
  const v = parsed.data!;
  const faults = v.faults === undefined ? [...DEFAULT_POLICY.faults] : names(v.faults);
  const unknown = faults.filter((f) => !(FAULTS as readonly string[]).includes(f));
  if (unknown.length || !faults.length)
    bad(
      "faults",
      `unknown fault kind ${unknown.join(", ") || "(none given)"}; the kinds are ${FAULTS.join(", ")}`,
    );
  const suites = v.suites === undefined ? [...DEFAULT_POLICY.suites] : names(v.suites);
  const known = POLICY_SUITES;
  const odd = suites.filter((s) => !known.includes(s));
  if (odd.length)
    bad(
      "suites",
      `unknown suite ${odd.join(", ")}; a policy can require ${known.join(", ")} (${suiteOf("matrix")} is always required)`,
    );
  let minWindowS = DEFAULT_POLICY.minWindowS;
  if (v.min_window !== undefined) {
    minWindowS = durationSeconds(String(v.min_window));
    if (!Number.isFinite(minWindowS) || minWindowS <= 0)
      bad("min_window", `expected a duration (30, 30s, 5m), got '${v.min_window}'`);
  }
  return {
    source: where,
    name: v.name ?? null,
    aggressors: v.aggressors ?? DEFAULT_POLICY.aggressors,
    faults,
    suites,
    minWindowS,
    confinement: v.confinement ?? true,
  };
}
