// doctor's view of a node's intended layout (inventory mig_config): read with the same assert
// that `slicecheck assert` makes, on doctor's own connection. A node that differs is a warning
// with its fix, not a readiness problem: apply and the suites can still run on it, but a node
// back from maintenance in the wrong layout must not go unnoticed.

import { assertLayout, DEFAULT_JOURNAL_DIR } from "../../mig/apply/index.js";
import { type IntendedGroup, intendedName } from "../../mig/apply/intended.js";
import type { Transport } from "../../transport/types.js";

export interface DoctorLayout {
  /** `config 'x' of FILE` */
  intended: string;
  status: "intended" | "not-intended" | "unread";
  /** What differs, per GPU (`GPU 0: …`), or why it could not be read. */
  details: string[];
}

export async function intendedState(
  t: Transport,
  groups: readonly IntendedGroup[],
): Promise<DoctorLayout | null> {
  const g = groups.find((x) => x.nodes.some((n) => n.name === t.node.name));
  if (!g) return null;
  const intended = intendedName({ file: g.file, config: g.config.name });
  try {
    const [r] = await assertLayout([t.node], g.config, {
      runId: t.runId,
      journalDir: DEFAULT_JOURNAL_DIR,
      transports: new Map([[t.node.name, t]]),
    });
    if (!r || r.error)
      return { intended, status: "unread", details: [r?.error?.message ?? "no answer"] };
    const details = r.gpus.flatMap((x) => x.drift.map((d) => `GPU ${x.index}: ${d}`));
    return { intended, status: details.length ? "not-intended" : "intended", details };
  } catch (e) {
    return { intended, status: "unread", details: [(e as Error).message] };
  }
}

/** doctor's warnings for it: the difference and the command that fixes it. */
export function layoutWarnings(node: string, l: DoctorLayout | null): string[] {
  if (!l || l.status === "intended") return [];
  if (l.status === "unread")
    return [`the intended layout, ${l.intended}, could not be checked: ${l.details.join("; ")}`];
  return [
    `not in its intended layout, ${l.intended} [LAYOUT_NOT_INTENDED]: ${l.details.join("; ")}; fix: slicecheck apply --intended --nodes ${node}`,
  ];
}
