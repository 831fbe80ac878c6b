// What the slurm suite and run --drain read from Slurm, parsed, and compared with the live MIG
// instances. Pure: text in, data out (tested on captures of Debian's Slurm 22.05). Users'
// suites get it from slicecheck/suite.
import { quote } from "../util/shell.js";

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

/** Slurm's hostlist syntax: `sim[01-03,07],gpu1`. */
export function expandHostlist(s: string): string[] {
  if (!s || s === "(null)") return [];
  const out: string[] = [];
  for (const part of s.split(/,(?![^[]*\])/)) {
    const m = /^(.*)\[([^\]]+)\](.*)$/.exec(part);
    if (!m) {
      out.push(part);
      continue;
    }
    for (const r of (m[2] ?? "").split(",")) {
      const [lo, hi] = r.split("-");
      const width = lo?.length ?? 0;
      for (let i = Number(lo); i <= Number(hi ?? lo); i++)
        out.push(`${m[1]}${String(i).padStart(width, "0")}${m[3]}`);
    }
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
}

const field = (line: string, key: string) =>
  new RegExp(`(?:^| )${key}=(\\S*)`).exec(line)?.[1] || null;

/** What the probe job printed (its SLICECHECK_PROBE line and the stress's final line). */
export function parseProbe(stdout: string): ProbeAnswer {
  const line = /^SLICECHECK_PROBE .*$/m.exec(stdout)?.[0] ?? null;
  const s = /^SLICECHECK stress-final tflops=([\d.]+) errors=(\d+)/m.exec(stdout);
  const f = (k: string) => (line ? field(line, k) : null);
  return {
    node: f("node"),
    cvd: f("cvd"),
    gpus: f("gpus"),
    file: f("file"),
    mig: f("mig"),
    uuid: f("uuid"),
    tflops: s ? Number(s[1]) : null,
    errors: s ? Number(s[2]) : null,
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
 * The job's own script. Which device Slurm gave it: a MIG UUID in CUDA_VISIBLE_DEVICES where
 * slurmd sets one; else the device's index among the node's gpu gres (SLURM_STEP_GPUS or
 * SLURM_JOB_GPUS: CUDA_VISIBLE_DEVICES is renumbered from 0 under device cgroups), the File(s)
 * gres.conf names for that index, and for a `/dev/nvidia-caps/nvidia-capN` File the GI/CI the
 * node's mig-minors gives minor N (`gpu0/gi7/ci0`, as the driver publishes it), looked up in
 * `instances` (label → UUID, from this run's discovery). Then a short stress on exactly that
 * device with `stress` (the built-in stress binary on the node).
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
  return [
    'cvd="$CUDA_VISIBLE_DEVICES"',
    gresName === "gpu"
      ? `g="\${SLURM_STEP_GPUS:-\${SLURM_JOB_GPUS:-$cvd}}"`
      : // A generic gres sets no variable: the job's own record says which index it holds.
        String.raw`g=$(scontrol show job -d "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/.*GRES=[^ ]*(IDX:\([0-9,-]*\)).*/\1/p' | head -n 1)`,
    "file= mig= uuid=",
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
    `      k=$(awk -v m="$m" '$2 == m && $1 ~ /\\/ci[0-9]+\\/access$/ { sub(/\\/access$/, "", $1); print $1 }' "\${SLICECHECK_PROC:-/proc}/driver/nvidia-caps/mig-minors" 2>/dev/null)`,
    '      [ -n "$k" ] && mig="$k"',
    "    done",
    `    [ -n "$mig" ] && uuid=$(printf '${table}\n' | awk -v k="$mig" '$1 == k { print $2 }')`,
    "  fi ;;",
    "esac",
    'echo "SLICECHECK_PROBE node=$SLURMD_NODENAME job=$SLURM_JOB_ID cvd=$cvd gpus=$g file=$file mig=$mig uuid=$uuid"',
    '[ -n "$uuid" ] || exit 0',
    `CUDA_VISIBLE_DEVICES="$uuid" exec ${quote(stress)} --duration ${stressS} --interval ${Math.max(0.2, stressS / 4)}`,
  ].join("\n");
}
