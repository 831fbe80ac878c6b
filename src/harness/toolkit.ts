// The node's container toolkit, read in one round trip: `nvidia-ctk --version`, `nvidia-container-cli
// info` (the driver and CUDA it reports), the CDI specs in /etc/cdi and /var/run/cdi, the forward-
// compatibility libraries, and `nvidia-smi -L` to judge the specs against. Used by doctor (on its
// own connection) and by the run after its layout's apply and restore; `regenerateCdi` is what
// `--regenerate-cdi` runs, as the GPU Operator regenerates the spec after a MIG change.
import { SlicecheckError } from "../errors.js";
import {
  type CdiSpec,
  type ContainerCliInfo,
  parseCdiSpec,
  parseContainerCliInfo,
  parseCtkVersion,
} from "../nvsmi/ctk.js";
import { parseGpus, splitLostGpus } from "../nvsmi/index.js";
import type { Transport } from "../transport/types.js";
import { CDI_SPEC_DIRS, type CdiVerdict, judgeCdi } from "../verdicts/cdi.js";

/** SLICECHECK_CDI_DIRS on the node overrides where the specs are read (a simulated node keeps
 * its own under its state directory, as SLICECHECK_PROC stands for /proc). */
const PROBE = `
dirs=\${SLICECHECK_CDI_DIRS:-${CDI_SPEC_DIRS.join(" ")}}
echo "cdi_dirs=$dirs"
if command -v nvidia-ctk >/dev/null 2>&1; then v=$(nvidia-ctk --version 2>&1); echo "ctk_rc=$?"; printf '%s\\n' "$v" | sed 's/^/ctk=/'; else echo ctk_rc=127; fi
if command -v nvidia-container-cli >/dev/null 2>&1; then v=$(nvidia-container-cli info 2>&1); echo "cli_rc=$?"; printf '%s\\n' "$v" | sed 's/^/cli=/'; else echo cli_rc=127; fi
for d in $dirs; do for f in "$d"/*.yaml "$d"/*.yml "$d"/*.json; do [ -f "$f" ] || continue; echo "spec_file=$f"; sed 's/^/spec=/' "$f"; done; done
for f in "\${CUDA_HOME:-/usr/local/cuda}"/compat/libcuda.so.*; do [ -e "$f" ] && { echo "compat=$f"; break; }; done
v=$(nvidia-smi -L 2>&1); echo "smi_rc=$?"; printf '%s\\n' "$v" | sed 's/^/smi=/'
`;

export interface ToolkitState {
  /** `nvidia-ctk --version`'s release; null: no toolkit CLI on the node. */
  ctk: string | null;
  /** What `nvidia-container-cli info` reported; null: not installed or it failed. */
  containerCli: ContainerCliInfo | null;
  /** The CDI specs against the live MIG devices; null: nvidia-smi -L could not be read. */
  cdi: CdiVerdict | null;
  /** Where `nvidia-ctk cdi generate` writes when no spec exists yet (the first spec folder). */
  cdiDir: string;
  /** A forward-compatibility libcuda (cuda-compat package) in $CUDA_HOME/compat, if any. */
  compat: string | null;
  /** What could not be read, in words. */
  errors: string[];
}

/** The probe's `key=value` lines, grouped: each spec file with its own lines. */
export function interpretToolkit(out: string): ToolkitState {
  const lines = new Map<string, string[]>();
  const specs: { file: string; lines: string[] }[] = [];
  for (const line of out.split("\n")) {
    const i = line.indexOf("=");
    if (i <= 0) continue;
    const k = line.slice(0, i);
    const v = line.slice(i + 1);
    if (k === "spec_file") specs.push({ file: v, lines: [] });
    else if (k === "spec") specs.at(-1)?.lines.push(v);
    else lines.set(k, [...(lines.get(k) ?? []), v]);
  }
  const one = (k: string) => lines.get(k)?.[0] ?? null;
  const text = (k: string) => (lines.get(k) ?? []).join("\n");
  const errors: string[] = [];
  const ctk = one("ctk_rc") === "0" ? parseCtkVersion(text("ctk")) : null;
  let containerCli: ContainerCliInfo | null = null;
  if (one("cli_rc") === "0")
    containerCli = tryParse(() => parseContainerCliInfo(text("cli")), errors);
  else if (one("cli_rc") !== "127" && ctk)
    errors.push(
      `nvidia-container-cli info failed (exit ${one("cli_rc")}): ${text("cli").slice(0, 200)}`,
    );
  const parsed = specs
    .map((s) => ({
      file: s.file,
      spec: tryParse(() => parseCdiSpec(s.lines.join("\n"), s.file), errors),
    }))
    .filter((s): s is { file: string; spec: CdiSpec } => s.spec !== null);
  let cdi: CdiVerdict | null = null;
  const smiAnswered = one("smi_rc") === "0" || one("smi_rc") === "15";
  // A spec that does not parse is not judged absent (the engines refuse it too): left unjudged.
  if (smiAnswered && parsed.length === specs.length) {
    const live = tryParse(() => parseGpus(splitLostGpus(text("smi")).rest).gpus, errors);
    if (live) cdi = judgeCdi(parsed, live);
  } else if (!smiAnswered)
    errors.push(`nvidia-smi -L failed (exit ${one("smi_rc")}): the CDI spec cannot be judged`);
  return {
    ctk,
    containerCli,
    cdi,
    cdiDir: (one("cdi_dirs") ?? CDI_SPEC_DIRS[0]).split(/\s+/)[0] || CDI_SPEC_DIRS[0],
    compat: one("compat"),
    errors,
  };
}

function tryParse<T>(fn: () => T, errors: string[]): T | null {
  try {
    return fn();
  } catch (e) {
    errors.push((e as Error).message);
    return null;
  }
}

export async function readToolkit(t: Transport, timeoutMs = 30_000): Promise<ToolkitState> {
  const r = await t.exec({ shell: PROBE }, { timeoutMs });
  if (r.timedOut)
    throw new SlicecheckError(
      "COMMAND_TIMEOUT",
      `the container toolkit probe did not finish within ${timeoutMs / 1000} s`,
    );
  return interpretToolkit(r.stdout);
}

/**
 * `nvidia-ctk cdi generate --output=FILE` (the spec it found stale, else the first spec folder's
 * nvidia.yaml), privileged as the node's other changes are, under the run's lease.
 */
export async function regenerateCdi(t: Transport, state: ToolkitState): Promise<string> {
  const file = state.cdi?.file ?? `${state.cdiDir}/nvidia.yaml`;
  const r = await t.exec(
    { argv: ["nvidia-ctk", "cdi", "generate", `--output=${file}`] },
    { privileged: true, leased: true, timeoutMs: 120_000 },
  );
  if (r.exitCode !== 0)
    throw new SlicecheckError(
      "NODE_COMMAND",
      `nvidia-ctk cdi generate --output=${file} failed (exit ${r.exitCode}): ${(r.stderr || r.stdout).trim().slice(-300)}`,
    );
  return file;
}
