// What the slurm suite and run --drain read from Slurm, parsed, and compared with the live MIG
// instances. Pure: text in, data out (tested on captures of Debian's Slurm 22.05). Users'
// suites get it from slicecheck/suite.

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
  type: string | null;
  file: string | null;
  count: number;
}

/** The gpu lines of gres.conf that apply to `node`, and AutoDetect if set. */
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
    if (f.get("name") !== "gpu") continue;
    const file = f.get("file") ?? null;
    // `File=/dev/nvidia[0-3]` is four devices of one line.
    const count = Number(f.get("count") ?? (file ? expandHostlist(file).length : 1));
    lines.push({ type: f.get("type") ?? null, file, count });
  }
  return { lines, autoDetect };
}

/** A MIG profile as a gres type: Slurm's types are what nvidia-smi names, `+` spelled `_`. */
export const gresType = (profile: string) => profile.replace(/\+/g, "_").toLowerCase();
export const isMigType = (t: string | null) => t !== null && /^\d+g\.\d+gb/.test(t);

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
  offered: readonly { type: string | null; count: number }[],
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
  cvd: string | null;
  uuid: string | null;
  tflops: number | null;
  errors: number | null;
}

/** What the probe job printed (its SLICECHECK_PROBE line and the stress's final line). */
export function parseProbe(stdout: string): ProbeAnswer {
  const p = /^SLICECHECK_PROBE node=(\S*) job=\S* cvd=(\S*) uuid=(\S*)/m.exec(stdout);
  const s = /^SLICECHECK stress-final tflops=([\d.]+) errors=(\d+)/m.exec(stdout);
  return {
    node: p?.[1] || null,
    cvd: p?.[2] || null,
    uuid: p?.[3] || null,
    tflops: s ? Number(s[1]) : null,
    errors: s ? Number(s[2]) : null,
  };
}

/**
 * What the probe's answer says about its device: one instance UUID, or why none can be named.
 * `unmapped`: a device Slurm gave, but no UUID to tie it to an instance (gres.conf Files like
 * /dev/nvidia-caps/nvidia-cap21 on a real node without AutoDetect=nvml): the harness cannot
 * decide, which is not the node breaking a promise.
 */
export function probeDevice(
  p: ProbeAnswer,
): { kind: "uuid"; uuid: string } | { kind: "none" | "several" | "unmapped"; why: string } {
  if (!p.cvd) return { kind: "none", why: "CUDA_VISIBLE_DEVICES is unset: Slurm gave no GPU" };
  if (p.cvd.includes(",")) return { kind: "several", why: `CUDA_VISIBLE_DEVICES=${p.cvd}` };
  if (p.uuid && /^(MIG|GPU)-/.test(p.uuid)) return { kind: "uuid", uuid: p.uuid };
  return {
    kind: "unmapped",
    why: `CUDA_VISIBLE_DEVICES=${p.cvd} maps to ${p.uuid || "no gres.conf File"}, which names no instance UUID (set AutoDetect=nvml so that Slurm gives MIG UUIDs)`,
  };
}

/**
 * The job's own script: which device Slurm gave it (CUDA_VISIBLE_DEVICES: a MIG UUID where
 * slurmd sets one, else the index of the node's gres in gres.conf order, mapped to the File it
 * names; the simulated cluster names each File after its instance's UUID), then a short
 * stress on exactly that device.
 */
export function probeScript(stressS: number): string {
  return [
    'idx="$CUDA_VISIBLE_DEVICES"',
    'case "$idx" in',
    '  MIG-*|GPU-*) uuid="$idx" ;;',
    "  *,*|'') uuid= ;;",
    `  *) uuid=$(awk -v n="$SLURMD_NODENAME" '$1 == "NodeName=" n && / Name=gpu / { for (i = 1; i <= NF; i++) if ($i ~ /^File=/) print substr($i, 6) }' "$(dirname "\${SLURM_CONF:-/etc/slurm/slurm.conf}")/gres.conf" 2>/dev/null | sed -n "$((idx + 1))p" | xargs -r basename | tr + /) ;;`,
    "esac",
    'echo "SLICECHECK_PROBE node=$SLURMD_NODENAME job=$SLURM_JOB_ID cvd=$idx uuid=$uuid"',
    '[ -n "$uuid" ] || exit 0',
    `CUDA_VISIBLE_DEVICES="$uuid" exec slicecheck-stress --duration ${stressS} --interval ${Math.max(0.2, stressS / 4)}`,
  ].join("\n");
}
