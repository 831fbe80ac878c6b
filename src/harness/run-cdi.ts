// The container toolkit after the run's layout changed the MIG devices (issue 23): the CDI spec
// still naming the old devices is the commonest way tenants' containers break after a relayout,
// so after the apply the run checks it (a check of the layout, `CDI spec follows config X`,
// failed CDI_STALE with its fix), and after the restore it says so. With `--regenerate-cdi` or
// the inventory's `regenerate_cdi: true` it runs `nvidia-ctk cdi generate` first, as the GPU
// Operator does after a MIG change, and checks what that wrote.
import { APPLY_CHECK_SUITE } from "../util/suite-registry.js";
import type { PreCheck } from "./mocha-run.js";
import { errText } from "./run-reports.js";
import type { NodeSession } from "./session.js";
import { readToolkit, regenerateCdi, type ToolkitState } from "./toolkit.js";

export interface CdiOptions {
  /** `--regenerate-cdi` (a node's inventory `regenerate_cdi` asks for it too). */
  regenerate: boolean;
  err(line: string): void;
}

/** One node: read, regenerate where asked (and there is a toolkit), read again. */
async function settle(
  s: NodeSession,
  o: CdiOptions,
): Promise<{ state: ToolkitState; regenerated: string | null }> {
  const state = await readToolkit(s);
  if (!(o.regenerate || s.node.regenerateCdi) || state.ctk === null)
    return { state, regenerated: null };
  const file = await regenerateCdi(s, state);
  return { state: await readToolkit(s), regenerated: file };
}

/** The check after the apply; null where there is nothing to judge (no spec, no toolkit). */
export function cdiCheck(
  node: string,
  config: string,
  r: { state: ToolkitState; regenerated: string | null },
): PreCheck | null {
  const v = r.state.cdi;
  const title = `CDI spec follows config ${config}`;
  if (!v)
    return {
      suite: APPLY_CHECK_SUITE,
      node,
      title,
      status: "broken",
      code: "NODE_COMMAND",
      message: `the CDI spec could not be judged: ${r.state.errors.join("; ")}`,
    };
  if (v.status === "absent") return null;
  const by = r.regenerated
    ? ` (regenerated: nvidia-ctk cdi generate --output=${r.regenerated})`
    : "";
  if (v.status === "stale")
    return {
      suite: APPLY_CHECK_SUITE,
      node,
      title,
      status: "failed",
      code: "CDI_STALE",
      message: `${v.message}${by}`,
    };
  return {
    suite: APPLY_CHECK_SUITE,
    node,
    title,
    status: "passed",
    code: "OK",
    message: `${v.message}${by}`,
  };
}

/** After the apply: each node's CDI check. A node whose toolkit could not be read or regenerated
 * is a broken check (its containers' state is unknown), never a pass. */
export async function cdiAfterApply(
  sessions: readonly NodeSession[],
  config: string,
  o: CdiOptions & { early(c: PreCheck): void },
): Promise<void> {
  await Promise.all(
    sessions.map(async (s) => {
      try {
        const r = await settle(s, o);
        const c = cdiCheck(s.node.name, config, r);
        if (c) o.early(c);
        else if (r.state.ctk === null && (o.regenerate || s.node.regenerateCdi))
          o.err(`${s.node.name}: no container toolkit (nvidia-ctk): no CDI spec to regenerate`);
      } catch (e) {
        o.early({
          suite: APPLY_CHECK_SUITE,
          node: s.node.name,
          title: `CDI spec follows config ${config}`,
          status: "broken",
          code: "NODE_COMMAND",
          message: errText(e),
        });
      }
    }),
  );
}

/** After the restore: the checks are written by then, so a stale spec is said, with its fix. */
export async function cdiAfterRestore(
  sessions: readonly NodeSession[],
  o: CdiOptions,
): Promise<void> {
  await Promise.all(
    sessions.map(async (s) => {
      try {
        const r = await settle(s, o);
        if (r.regenerated)
          o.err(`${s.node.name}: CDI spec regenerated after the restore (${r.regenerated})`);
        if (r.state.cdi?.status === "stale")
          o.err(`${s.node.name}: after the restore: ${r.state.cdi.message}`);
      } catch (e) {
        o.err(`${s.node.name}: the CDI spec could not be checked after the restore: ${errText(e)}`);
      }
    }),
  );
}
