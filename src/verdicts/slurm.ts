// What the slurm suite and run --drain read from Slurm, parsed, and compared with the live MIG
// instances. Pure: text in, data out (tested on captures of Debian's Slurm 22.05). Users'
// suites get it from slicecheck/suite.
import { expandHostlist } from "../inventory/slurm-hostlist.js";
import { quote } from "../util/shell.js";

// Part of this module's API (slicecheck/suite's `slurm`), owned by the inventory layer where
// mig/apply reads it too.
export { expandHostlist };

export interface GresEntry {
  name: string;
  /** null: an untyped gres (`gpu:4`). */
  type: string | null;
  count: number;
}

export interface SlurmNodeInfo {
  name: string;
  state: string;
  reason: string | null;
  partitions: string[];
  gres: GresEntry[];
  version: string | null;
}

/** `key=value` fields of one `-o` line; values run to the next ` Key=` (Reason has spaces). */
export function fields(line: string): Map<string, string> {
  const out = new Map<string, string>();
  const re = /(?:^|\s)([A-Za-z_]+)=/g;
  const marks: { key: string; start: number; end: number }[] = [];
  for (let m = re.exec(line); m; m = re.exec(line))
    marks.push({ key: m[1] ?? "", start: m.index, end: re.lastIndex });
  marks.forEach((k, i) => {
    const next = marks[i + 1];
    out.set(k.key, line.slice(k.end, next ? next.start : undefined).trim());
  });
  return out;
}

/** `gpu:1g.10gb:2,gpu:3g.40gb:1(S:0)`, `gpu:4`, `(null)`. */
export function parseGres(s: string | undefined): GresEntry[] {
  if (!s || s === "(null)") return [];
  const out: GresEntry[] = [];
  for (const raw of s.split(/,(?![^(]*\))/)) {
    const [name, a, b] = raw.replace(/\(.*\)$/, "").split(":");
    if (!name) continue;
    if (b !== undefined) out.push({ name, type: a ?? null, count: Number(b) });
    else if (a !== undefined && /^\d+$/.test(a)) out.push({ name, type: null, count: Number(a) });
    else out.push({ name, type: a ?? null, count: 1 });
  }
  return out;
}

/** Every node of `scontrol show node -o`. */
export function parseNodes(text: string): SlurmNodeInfo[] {
  return text
    .split("\n")
    .filter((l) => l.startsWith("NodeName="))
    .map((l) => {
      const f = fields(l);
      const reason = f.get("Reason");
      return {
        name: f.get("NodeName") ?? "",
        state: f.get("State") ?? "",
        reason: reason ? reason.replace(/\s*\[[^\]]*\]$/, "") : null,
        partitions: (f.get("Partitions") ?? "").split(",").filter(Boolean),
        gres: parseGres(f.get("Gres")),
        version: f.get("Version") ?? null,
      };
    });
}

/** Partition → its node list, as `scontrol show partition -o` prints it (`sim[01-03],gpu7`). */
export function parsePartitions(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const l of text.split("\n").filter((x) => x.startsWith("PartitionName="))) {
    const f = fields(l);
    out.set(f.get("PartitionName") ?? "", expandHostlist(f.get("Nodes") ?? ""));
  }
  return out;
}

export interface GresConfLine {
  /** `gpu`, or `mig` where the site names its MIG instances so (`mig:2g.20gb`). */
  name: string;
  type: string | null;
  file: string | null;
  count: number;
}

/** The gpu (and mig) lines of gres.conf that apply to `node`, and AutoDetect if set. */
export function parseGresConf(
  text: string,
  node: string,
): { lines: GresConfLine[]; autoDetect: string | null } {
  const lines: GresConfLine[] = [];
  let autoDetect: string | null = null;
  for (const raw of text.split("\n")) {
    const l = raw.replace(/#.*/, "").trim();
    if (!l) continue;
    const f = new Map(
      l.split(/\s+/).map((w) => {
        const i = w.indexOf("=");
        return [w.slice(0, i).toLowerCase(), w.slice(i + 1)] as const;
      }),
    );
    const names = f.get("nodename");
    if (names && !expandHostlist(names).includes(node)) continue;
    if (f.has("autodetect")) autoDetect = f.get("autodetect") ?? null;
    const name = f.get("name");
    if (name !== "gpu" && name !== "mig") continue;
    const file = f.get("file") ?? f.get("multiplefiles") ?? null;
    // MultipleFiles is one device of several files; File with a range is several devices.
    const devices = f.has("file") && file ? expandHostlist(file).length : 1;
    lines.push({
      name,
      type: f.get("type") ?? null,
      file,
      count: Number(f.get("count") ?? devices),
    });
  }
  return { lines, autoDetect };
}

/** A MIG profile as a gres type: Slurm's types are what nvidia-smi names, `+` spelled `_`. */
export const gresType = (profile: string) => profile.replace(/\+/g, "_").toLowerCase();
export const isMigType = (t: string | null) => t !== null && /^\d+g\.\d+gb/.test(t);

/** The gres that can carry MIG instances: Slurm's typed `gpu`, or a site's own `mig`. */
export const isMigCapableGres = (name: string) => name === "gpu" || name === "mig";

/**
 * The gres name a site gives its MIG instances: `mig` where the node offers typed `mig` gres
 * (`Gres=gpu:8,mig:2g.20gb:4`, the source document's naming), else Slurm's own typed `gpu`.
 */
export function migGresName(gres: readonly { name: string; type: string | null }[]): "gpu" | "mig" {
  return gres.some((g) => g.name === "mig" && isMigType(g.type)) ? "mig" : "gpu";
}

export interface GresComparison {
  ok: boolean;
  /** One line per difference: `1g.10gb: Slurm has 2, the GPUs have 3`. */
  problems: string[];
  figures: Record<string, number>;
}

/**
 * Counts per type: what Slurm (or gres.conf) offers against the MIG instances the node has, and
 * no whole-card gpu gres while the node's GPUs are in MIG mode (a job would get a "GPU" that is
 * in fact partitioned, or a card whose instances other jobs hold).
 */
export function compareGres(
  source: string,
  offered: readonly { name?: string; type: string | null; count: number }[],
  live: { profiles: readonly string[]; wholeCards: number; migGpus: number },
): GresComparison {
  const want = new Map<string, number>();
  for (const p of live.profiles) want.set(gresType(p), (want.get(gresType(p)) ?? 0) + 1);
  const have = new Map<string, number>();
  let whole = 0;
  for (const g of offered) {
    if (isMigType(g.type)) {
      const t = g.type as string;
      have.set(t, (have.get(t) ?? 0) + g.count);
    } else if (g.name === "mig") {
      // An untyped `mig:4` names no profile: it cannot match any instance.
      have.set("mig (untyped)", (have.get("mig (untyped)") ?? 0) + g.count);
    } else whole += g.count;
  }
  const problems: string[] = [];
  const figures: Record<string, number> = {};
  for (const t of [...new Set([...want.keys(), ...have.keys()])].sort()) {
    const w = want.get(t) ?? 0;
    const h = have.get(t) ?? 0;
    figures[`${source}:${t}`] = h;
    figures[`live:${t}`] = w;
    if (w !== h) problems.push(`${t}: ${source} has ${h}, the GPUs have ${w}`);
  }
  if (live.migGpus > 0 && whole > live.wholeCards)
    problems.push(
      `${source} offers ${whole} whole-card gpu gres, but ${live.migGpus} GPU(s) are in MIG mode and only ${live.wholeCards} whole card(s) remain`,
    );
  figures[`${source}:whole`] = whole;
  return { ok: problems.length === 0, problems, figures };
}

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

/** cgroup.conf's ConstrainDevices as written (`yes`, `no`); null where the file does not set it
 * (Slurm's default is no). Case-insensitive key, `#` comments, the last setting wins. */
export function parseCgroupConf(text: string): { constrainDevices: string | null } {
  let v: string | null = null;
  for (const raw of text.split("\n")) {
    const m = /^\s*constraindevices\s*=\s*(\S+)/i.exec(raw.replace(/#.*/, ""));
    if (m) v = (m[1] ?? "").toLowerCase();
  }
  return { constrainDevices: v };
}

/** The slurm suite's confinement check, by its title: the sign-off's coverage ledger finds the
 * tenant-confinement verdict of each node by it (src/verdicts/coverage.ts). */
export const CONFINEMENT_TITLE = "a job reaches only its own instance";

/** One probe job as the confinement check reads it. */
export interface ConfinementInput {
  /** `gpu:2g.20gb:1`. */
  asked: string;
  /** The instance Slurm's records give the job (probeDevice), null where unknown. */
  allocated: string | null;
  answer: ProbeAnswer;
}

export interface ConfinementVerdict {
  /** One line per job that reached more than its own instance; empty: confined. */
  problems: string[];
  /** Whether anything was observed at all (a listing, a cap, a neighbour tried). */
  observed: boolean;
  figures: {
    jobs: number;
    listedForeign: number;
    capsForeign: number;
    neighboursTried: number;
    neighboursReached: number;
  };
}

const MIG_UUID = /\(UUID: (MIG-[^)\s]+)\)/;
/** `gpu0/gi7/ci0/access` or `gpu0/gi7/access` → `gpu0/gi7`; null for config, monitor. */
const giOfKey = (key: string | null) =>
  key ? (/^(gpu\d+\/gi\d+)\//.exec(key)?.[1] ?? null) : null;

/**
 * Whether each probe job reached only its own instance, as the job itself saw it: the MIG
 * devices its `nvidia-smi -L` listed, the GI/CI access caps it could open, and the neighbours'
 * UUIDs its CUDA accepted. Its own instance is Slurm's record of it, else the device its CUDA
 * gave it; with neither, any one instance is taken as its own and only the rest count.
 */
export function judgeConfinement(
  jobs: readonly ConfinementInput[],
  instances: readonly { label: string; uuid: string }[],
): ConfinementVerdict {
  const labelOf = (u: string) => instances.find((i) => i.uuid === u)?.label ?? u;
  const figures = {
    jobs: jobs.length,
    listedForeign: 0,
    capsForeign: 0,
    neighboursTried: 0,
    neighboursReached: 0,
  };
  const problems: string[] = [];
  let observed = false;
  for (const j of jobs) {
    const a = j.answer;
    const own = j.allocated ?? a.cudaUuid;
    const ownGi = own ? giOfKey(`${labelOf(own)}/`) : null;
    const listed = [...new Set(a.smi.map((l) => MIG_UUID.exec(l)?.[1]).filter((u) => u))];
    const foreign = listed.filter((u) => u !== own).slice(own ? 0 : 1) as string[];
    const gis = [...new Set(a.caps.filter((c) => c.open).map((c) => giOfKey(c.key)))].filter(
      (g): g is string => g !== null,
    );
    const foreignGis = gis.filter((g) => g !== ownGi).slice(ownGi ? 0 : 1);
    const reached = a.reach.filter((r) => r.device !== null && r.device === r.target);
    observed ||= listed.length > 0 || a.caps.length > 0 || a.reach.length > 0;
    figures.listedForeign += foreign.length;
    figures.capsForeign += foreignGis.length;
    figures.neighboursTried += a.reach.length;
    figures.neighboursReached += reached.length;
    const parts: string[] = [];
    if (foreign.length)
      parts.push(
        `its nvidia-smi -L lists ${foreign.length} instance(s) not its own (${foreign.map(labelOf).join(", ")})`,
      );
    if (foreignGis.length)
      parts.push(
        `it opens the /dev/nvidia-caps access of ${foreignGis.length} other GPU instance(s) (${foreignGis.join(", ")})`,
      );
    if (reached.length)
      parts.push(
        `its CUDA computes on ${reached.length} neighbour(s) named by UUID (${reached.map((r) => `${labelOf(r.target)} ${r.target}`).join(", ")})`,
      );
    if (parts.length)
      problems.push(
        `job ${a.job ?? "?"} (${j.asked}, its instance ${own ? labelOf(own) : "unknown"}): ${parts.join("; ")}`,
      );
  }
  return { problems, observed, figures };
}
