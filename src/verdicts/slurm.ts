// What the slurm suite and run --drain read from Slurm, parsed, and compared with the live MIG
// instances. Pure: text in, data out (tested on captures of Debian's Slurm 22.05). Users'
// suites get it from slicecheck/suite.
import { expandHostlist } from "../inventory/slurm-hostlist.js";
import type { ProbeAnswer } from "./slurm-probe.js";

// The probe job (its script and its answer) lives in slurm-probe.ts; it is part of this API.
export {
  type ProbeAnswer,
  type ProbeCap,
  type ProbeDevice,
  type ProbeReach,
  parseProbe,
  probeDevice,
  probeScript,
} from "./slurm-probe.js";
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
