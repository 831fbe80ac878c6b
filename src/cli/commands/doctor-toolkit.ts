// doctor's view of the node's container toolkit, read on doctor's own connection: the toolkit's
// release, the driver and CUDA `nvidia-container-cli info` reports, and whether the CDI spec
// follows the live MIG layout. None of it makes a node "not ready" (slicecheck's own suites run
// no container); a stale spec is a warning with the command that fixes it, since every tenant
// container given a MIG device by it fails to start.
import { readRuntimeConfig } from "../../harness/runtime-config.js";
import { readToolkit, type ToolkitState } from "../../harness/toolkit.js";
import type { Transport } from "../../transport/types.js";
import type { RuntimeConfigVerdict } from "../../verdicts/runtime-config.js";

/** The node's container runtime as doctor shows it (`--json` toolkit.runtime). */
export interface DoctorRuntime {
  /** docker, podman, containerd, enroot; null: none on the PATH. */
  name: string | null;
  status: RuntimeConfigVerdict["status"];
  /** `nvidia runtime`, `CDI`: how it gives containers GPUs. */
  paths: string[];
  message: string;
  fix: string | null;
}

export interface DoctorToolkit {
  /** nvidia-ctk's release; null: no container toolkit. */
  ctk: string | null;
  /** `nvidia-container-cli info`'s driver and CUDA. */
  containerCli: { driver: string | null; cuda: string | null } | null;
  cdi: "fresh" | "stale" | "absent" | "unread";
  /** The spec judged, when there is one. */
  cdiFile: string | null;
  /** The stale spec's fix. */
  fix: string | null;
  compat: string | null;
  /** The CDI verdict in words (with its fix when stale). */
  message: string | null;
  /** What could not be read. */
  errors: string[];
  /** Whether the node's container runtime can give containers a GPU. */
  runtime: DoctorRuntime | null;
}

/** The runtime check on doctor's connection, the inventory's runtime first. */
async function runtimeOf(t: Transport, timeoutMs: number): Promise<DoctorRuntime> {
  const v = await readRuntimeConfig(async (shell) => {
    const r = await t.exec({ shell }, { timeoutMs });
    if (r.timedOut)
      throw new Error(`the runtime probe did not finish within ${timeoutMs / 1000} s`);
    return r;
  }, t.node.containerRuntime ?? null);
  return { name: v.runtime, status: v.status, paths: v.paths, message: v.message, fix: v.fix };
}

export async function toolkitState(t: Transport, timeoutMs: number): Promise<DoctorToolkit> {
  // Side by side on the node's connection: each read is a login, which a site's shell start-up
  // files make cost seconds (issue 25).
  const [runtime, read] = await Promise.all([
    runtimeOf(t, timeoutMs),
    readToolkit(t, timeoutMs).then(
      (s): { s: ToolkitState } | { e: unknown } => ({ s }),
      (e: unknown) => ({ e }),
    ),
  ]);
  if ("e" in read)
    return {
      ctk: null,
      containerCli: null,
      cdi: "unread",
      cdiFile: null,
      fix: null,
      compat: null,
      message: null,
      errors: [(read.e as Error).message],
      runtime,
    };
  const s = read.s;
  return {
    ctk: s.ctk,
    containerCli: s.containerCli
      ? { driver: s.containerCli.nvrm, cuda: s.containerCli.cuda }
      : null,
    cdi: s.cdi?.status ?? "unread",
    cdiFile: s.cdi?.file ?? null,
    fix: s.cdi?.fix ?? null,
    compat: s.compat,
    message: s.cdi?.message ?? null,
    errors: s.errors,
    runtime,
  };
}

/** doctor's warnings for it: a stale spec with its fix, a toolkit whose CUDA differs from the
 * driver's banner, a spec that could not be read. No toolkit at all is shown, not warned. */
export function toolkitWarnings(tk: DoctorToolkit | null, driverCuda: string | null): string[] {
  if (!tk) return [];
  const out: string[] = [];
  if (tk.cdi === "stale" && tk.message) out.push(tk.message);
  // A runtime that cannot give a GPU: every tenant container asking for one fails to start.
  if (tk.runtime?.status === "not-configured" || tk.runtime?.status === "unread")
    out.push(tk.runtime.message);
  if (tk.errors.length)
    out.push(`the container toolkit could not be read fully: ${tk.errors.join("; ")}`);
  const cliCuda = tk.containerCli?.cuda;
  if (cliCuda && driverCuda && cliCuda !== driverCuda)
    out.push(
      `nvidia-container-cli reports CUDA ${cliCuda} but nvidia-smi's banner ${driverCuda}: the toolkit sees another driver (a second driver root, or a stale libnvidia-ml)`,
    );
  return out;
}

const PATH_WORD: Record<string, string> = {
  "nvidia runtime": "nvidia",
  "gpus hook": "hook",
  CDI: "cdi",
};

/** The RUNTIME column: `docker:nvidia`, `docker:hook`, `podman:cdi`, `containerd:nvidia+cdi`; `docker:NO-GPU`
 * where it cannot give one; `none`; `?` unread; `enroot:?` not judged. */
function runtimeColumn(r: DoctorRuntime | null): string {
  if (!r || r.status === "unread") return "?";
  if (r.status === "none") return "none";
  if (r.status === "unjudged") return `${r.name}:?`;
  if (r.status === "not-configured") return `${r.name}:NO-GPU`;
  return `${r.name}:${r.paths.map((p) => PATH_WORD[p] ?? p).join("+")}`;
}

/** The CTK, CDI and RUNTIME columns: `1.17.8`/`none`, `fresh`/`STALE`/`absent`, runtimeColumn. */
export function toolkitColumns(tk: DoctorToolkit | null): [string, string, string] {
  if (!tk) return ["-", "-", "-"];
  return [tk.ctk ?? "none", tk.cdi === "stale" ? "STALE" : tk.cdi, runtimeColumn(tk.runtime)];
}
