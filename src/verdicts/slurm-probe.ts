// The slurm suite's probe job: the script each job runs on its instance and what it printed,
// parsed (which device Slurm gave it, what it could see and reach). Pure, like slurm.ts, which
// re-exports it (slicecheck/suite's `slurm`); apart so that slurm.ts stays a readable size.
import { quote } from "../util/shell.js";

export interface ProbeAnswer {
  node: string | null;
  job: string | null;
  /** CUDA_VISIBLE_DEVICES as Slurm set it. */
  cvd: string | null;
  /** The device's index among the node's gpu gres (SLURM_STEP_GPUS, SLURM_JOB_GPUS, else cvd). */
  gpus: string | null;
  /** The gres.conf File(s) of that index, comma-separated. */
  file: string | null;
  /** `gpu0/gi7/ci0`: the MIG instance a /dev/nvidia-caps File is, by the node's mig-minors. */
  mig: string | null;
  uuid: string | null;
  tflops: number | null;
  errors: number | null;
  /** Whether CUDA_VISIBLE_DEVICES was set at all in the job (`cvd` empty either way). */
  cvdSet: boolean;
  /** `nvidia-smi -L` as the job ran it. */
  smi: string[];
  /** Every /dev/nvidia-caps file the job tried to open, with its mig-minors key. */
  caps: ProbeCap[];
  /** The device the job's CUDA gave its stress (its `slicecheck-device` line); null: none. */
  cudaUuid: string | null;
  /** The stress's CUDA error line where it got no device. */
  cudaError: string | null;
  stressExit: number | null;
  /** The stress started on each other instance of the node by its UUID. */
  reach: ProbeReach[];
}

export interface ProbeCap {
  minor: number;
  /** `gpu0/gi7/ci0/access`, `config`; null where mig-minors does not list the minor. */
  key: string | null;
  open: boolean;
  /** The shell's words where the open failed. */
  why: string;
}

export interface ProbeReach {
  target: string;
  exit: number;
  /** The device that stress got a context on; null: refused. */
  device: string | null;
  why: string;
}

const field = (line: string, key: string) =>
  new RegExp(`(?:^| )${key}=(\\S*)`).exec(line)?.[1] || null;

const CAP = /^SLICECHECK_CAP (\d+) (\S+) (open|denied) ?(.*)$/;
const REACH = /^SLICECHECK_REACH (\S+) exit=(\d+) device=(\S+) ?(.*)$/;
const DEVICE = /^slicecheck-device .*?\buuid=(\S+)/m;

/** What the probe job printed (its SLICECHECK_* lines and the stress's own lines). */
export function parseProbe(stdout: string): ProbeAnswer {
  const line = /^SLICECHECK_PROBE .*$/m.exec(stdout)?.[0] ?? null;
  const s = /^SLICECHECK stress-final tflops=([\d.]+) errors=(\d+)/m.exec(stdout);
  const f = (k: string) => (line ? field(line, k) : null);
  const lines = stdout.split("\n");
  const stressExit = /^SLICECHECK_STRESS exit=(\d+)/m.exec(stdout)?.[1];
  const caps: ProbeCap[] = [];
  const reach: ProbeReach[] = [];
  for (const l of lines) {
    const c = CAP.exec(l);
    if (c)
      caps.push({
        minor: Number(c[1]),
        key: c[2] === "-" ? null : (c[2] ?? null),
        open: c[3] === "open",
        why: (c[4] ?? "").trim(),
      });
    const r = REACH.exec(l);
    if (r)
      reach.push({
        target: r[1] ?? "",
        exit: Number(r[2]),
        device: r[3] === "-" ? null : (r[3] ?? null),
        why: (r[4] ?? "").trim(),
      });
  }
  const cudaUuid = DEVICE.exec(stdout)?.[1] ?? null;
  return {
    node: f("node"),
    job: f("job"),
    cvd: f("cvd"),
    gpus: f("gpus"),
    file: f("file"),
    mig: f("mig"),
    uuid: f("uuid"),
    tflops: s ? Number(s[1]) : null,
    errors: s ? Number(s[2]) : null,
    cvdSet: f("cvdset") === "1",
    smi: lines.filter((l) => l.startsWith("SLICECHECK_SMI ")).map((l) => l.slice(15)),
    caps,
    cudaUuid,
    cudaError: cudaUuid ? null : (lines.find((l) => /CUDA error|no CUDA/i.test(l)) ?? null),
    stressExit: stressExit === undefined ? null : Number(stressExit),
    reach,
  };
}

export type ProbeDevice =
  | { kind: "uuid"; uuid: string; via: "CUDA_VISIBLE_DEVICES" | "mig-minors" }
  | { kind: "none" | "several" | "unmapped"; why: string };

/**
 * What the probe's answer says about its device: one instance UUID, or why none can be named.
 * `unmapped`: a device Slurm gave, but nothing ties it to an instance (a File that is not a
 * /dev/nvidia-caps device, a minor the node's mig-minors does not list, an index with no
 * gres.conf line): the harness cannot decide, which is not the node breaking a promise.
 */
export function probeDevice(p: ProbeAnswer): ProbeDevice {
  const idx = p.gpus ?? p.cvd;
  if (!idx) return { kind: "none", why: "CUDA_VISIBLE_DEVICES is unset: Slurm gave no GPU" };
  if (idx.includes(","))
    return { kind: "several", why: `Slurm gave the job ${idx.split(",").length} GPUs (${idx})` };
  if (p.uuid && /^(MIG|GPU)-/.test(p.uuid))
    return {
      kind: "uuid",
      uuid: p.uuid,
      via: p.cvd && /^(MIG|GPU)-/.test(p.cvd) ? "CUDA_VISIBLE_DEVICES" : "mig-minors",
    };
  return {
    kind: "unmapped",
    why: p.mig
      ? `its File ${p.file} is ${p.mig}, which is no MIG instance the harness found on the node`
      : p.file
        ? `gres index ${idx} is File ${p.file}, which is no /dev/nvidia-caps device listed in the node's mig-minors (set AutoDetect=nvml, or name the CI's nvidia-cap File)`
        : `gres index ${idx} has no File in gres.conf (AutoDetect=nvml gives no Files; with it Slurm should set a MIG UUID in CUDA_VISIBLE_DEVICES)`,
  };
}

/**
 * The job's own script. It sets nothing: what a tenant's job gets is what it runs with.
 *
 * 1. Which device Slurm's records give it (the allocation): a MIG UUID in CUDA_VISIBLE_DEVICES
 *    where slurmd sets one (AutoDetect=nvml); else the device's index among the node's gres
 *    (SLURM_STEP_GPUS or SLURM_JOB_GPUS: CUDA_VISIBLE_DEVICES is renumbered from 0 under device
 *    cgroups; for a generic `mig` gres the job's own `scontrol show job -d` record), the File(s)
 *    gres.conf names for that index, and for a `/dev/nvidia-caps/nvidia-capN` File the GI/CI the
 *    node's mig-minors gives minor N (`gpu0/gi7/ci0`, as the driver publishes it), looked up in
 *    `instances` (label → UUID, from this run's discovery).
 * 2. What the job sees: CUDA_VISIBLE_DEVICES as Slurm left it, `nvidia-smi -L`, and which
 *    `/dev/nvidia-caps` files it can open (each with its mig-minors key).
 * 3. A short stress on what its CUDA gives it (its `slicecheck-device` line names the device).
 * 4. The same stress on every other instance of the node by its UUID
 *    (CUDA_VISIBLE_DEVICES=MIG-…), for 0.1 s: a confined job is refused (no CUDA device). Where
 *    the job is not confined this runs on a neighbour's instance for that long; the probes run
 *    on a node the run holds (drained, or its reservation), so no tenant's work is there.
 *
 * Not read: gres.conf lines whose NodeName is a hostlist (`gpu[01-04]`) or whose File is a
 * range (`/dev/nvidia[0-3]`): MIG lines name one device each; such a line shifts no index here,
 * so a site using them gets `unmapped` (broken), never a wrong instance.
 */
export function probeScript(
  stressS: number,
  instances: readonly { label: string; uuid: string }[],
  stress = "slicecheck-stress",
  gresName: "gpu" | "mig" = "gpu",
): string {
  const table = instances.map((i) => `${i.label} ${i.uuid}`).join("\n");
  const st = quote(stress);
  const deviceOf = String.raw`sed -n 's/^slicecheck-device .*uuid=\([^ ]*\).*/\1/p' | head -n 1`;
  return [
    'cvd="${CUDA_VISIBLE_DEVICES-}"',
    'cvdset="${CUDA_VISIBLE_DEVICES+1}"',
    gresName === "gpu"
      ? `g="\${SLURM_STEP_GPUS:-\${SLURM_JOB_GPUS:-$cvd}}"`
      : // A generic gres sets no variable: the job's own record says which index it holds.
        String.raw`g=$(scontrol show job -d "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/.*GRES=[^ ]*(IDX:\([0-9,-]*\)).*/\1/p' | head -n 1)`,
    "file= mig= uuid=",
    'minors="${SLICECHECK_PROC:-/proc}/driver/nvidia-caps/mig-minors"',
    'case "$cvd" in MIG-*|GPU-*) uuid="$cvd" ;; esac',
    'case "$g" in',
    "  *,*|'') ;;",
    "  *[!0-9]*) ;;",
    '  *) if [ -z "$uuid" ]; then',
    `    conf="$(dirname "\${SLURM_CONF:-/etc/slurm/slurm.conf}")/gres.conf"`,
    // Parameter names are case-insensitive in gres.conf; a line without NodeName is every node's.
    String.raw`    file=$(awk -v n="$SLURMD_NODENAME" '{ l = tolower($0) } l ~ /^[ \t]*#/ { next } (tolower(substr($1, 1, 9)) == "nodename=" ? substr($1, 10) == n : 1) && l ~ /(^|[ \t])name=${gresName}([ \t]|$)/ { for (i = 1; i <= NF; i++) if (tolower($i) ~ /^(file|multiplefiles)=/) { sub(/^[^=]*=/, "", $i); print $i } }' "$conf" 2>/dev/null | sed -n "$((g + 1))p")`,
    '    for f in $(echo "$file" | tr , " "); do',
    String.raw`      m=$(basename "$f" | sed -n 's/^nvidia-cap\([0-9][0-9]*\)$/\1/p')`,
    '      [ -n "$m" ] || continue',
    `      k=$(awk -v m="$m" '$2 == m && $1 ~ /\\/ci[0-9]+\\/access$/ { sub(/\\/access$/, "", $1); print $1 }' "$minors" 2>/dev/null)`,
    '      [ -n "$k" ] && mig="$k"',
    "    done",
    `    [ -n "$mig" ] && uuid=$(printf '${table}\n' | awk -v k="$mig" '$1 == k { print $2 }')`,
    "  fi ;;",
    "esac",
    'echo "SLICECHECK_PROBE node=$SLURMD_NODENAME job=$SLURM_JOB_ID cvd=$cvd cvdset=${cvdset:-0} gpus=$g file=$file mig=$mig uuid=$uuid"',
    "nvidia-smi -L 2>&1 | sed 's/^/SLICECHECK_SMI /'",
    'for f in "${SLICECHECK_DEV:-/dev}"/nvidia-caps/nvidia-cap*; do',
    '  [ -e "$f" ] || continue',
    '  m="${f##*nvidia-cap}"',
    `  k=$(awk -v m="$m" '$2 == m { print $1; exit }' "$minors" 2>/dev/null)`,
    '  if e=$( (: <"$f") 2>&1 ); then echo "SLICECHECK_CAP $m ${k:--} open"',
    `  else echo "SLICECHECK_CAP $m \${k:--} denied $(printf '%s' "$e" | tr '\n' ' ')"; fi`,
    "done",
    `out=$(${st} --duration ${stressS} --interval ${Math.max(0.2, stressS / 4)} 2>&1); rc=$?`,
    "printf '%s\n' \"$out\"",
    'echo "SLICECHECK_STRESS exit=$rc"',
    `own=$(printf '%s\n' "$out" | ${deviceOf})`,
    '[ -n "$own" ] || own="$uuid"',
    `for n in $(printf '${table}\n' | awk '{ print $2 }'); do`,
    '  [ "$n" = "$own" ] && continue',
    `  r=$(CUDA_VISIBLE_DEVICES="$n" ${st} --duration 0.1 --interval 0.1 2>&1); x=$?`,
    `  d=$(printf '%s\n' "$r" | ${deviceOf})`,
    `  echo "SLICECHECK_REACH $n exit=$x device=\${d:--} $(printf '%s\n' "$r" | grep -i -m 1 'error' | tr '\n' ' ')"`,
    "done",
    'exit "$rc"',
  ].join("\n");
}
