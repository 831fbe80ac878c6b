// The small value formats inside `sacct -P` fields: TRES lists, sizes, elapsed times.
//
// TRES lists (AllocTRES, ReqTRES, TRESUsageInMax) are `name=value` pairs joined by commas, e.g.
// `billing=8,cpu=8,gres/gpu=1,gres/gpu:a100=1,mem=64G,node=1` (slurm.schedmd.com/tres.html; a
// typed `gres/gpu:TYPE` is accounted beside the untyped `gres/gpu` where AccountingStorageTRES
// names both). GPU memory and utilization are the `gres/gpumem` and `gres/gpuutil` TRES of a
// step's TRESUsageIn* fields, gathered through NVML where gres.conf has AutoDetect=nvml
// (slurm.schedmd.com/gres.html, "GPU Management"). Sizes carry sacct's unit suffix (K, M, G,
// T, P; powers of 1024) unless `--noconvert` was given. Elapsed is
// `[days-]hours:minutes:seconds[.microseconds]` (sacct(1), "Elapsed time fields").

const UNITS: Readonly<Record<string, number>> = { K: 1, M: 2, G: 3, T: 4, P: 5, E: 6 };

export type Tres = ReadonlyMap<string, string>;

/** `a=1,b=2` → {a: "1", b: "2"}; null when a pair has no `=` (the caller names the line). */
export function parseTres(field: string): Map<string, string> | null {
  const out = new Map<string, string>();
  if (field.trim() === "") return out;
  for (const pair of field.split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) return null;
    out.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
  }
  return out;
}

/**
 * A size in bytes. `bare` is the unit of a number without a suffix: TRES `mem` counts
 * megabytes (slurm.conf's RealMemory unit) and usage TRES count bytes.
 */
export function sizeBytes(value: string, bare: "bytes" | "MiB"): number | null {
  const m = /^(\d+(?:\.\d+)?)([KMGTPE])?$/i.exec(value.trim());
  if (!m) return null;
  const n = Number(m[1]);
  const unit = m[2]?.toUpperCase();
  if (unit) return n * 1024 ** (UNITS[unit] ?? 0);
  return bare === "MiB" ? n * 1024 ** 2 : n;
}

/** `1-02:03:04`, `02:03:04`, `03:04` (with an optional `.fraction`) → seconds; null if not one. */
export function elapsedSeconds(value: string): number | null {
  const m = /^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)(?:\.\d+)?$/.exec(value.trim());
  if (!m) return null;
  const [days, hours, minutes, seconds] = [m[1], m[2], m[3], m[4]].map((v) => Number(v ?? 0)) as [
    number,
    number,
    number,
    number,
  ];
  if (minutes > 59 || seconds > 59) return null;
  return ((days * 24 + hours) * 60 + minutes) * 60 + seconds;
}

/** The GPUs a TRES list counts: `gres/gpu`, else its typed `gres/gpu:TYPE` entries added up. */
export function gpuCount(tres: Tres): number | null {
  const total = tres.get("gres/gpu");
  if (total !== undefined) return /^\d+$/.test(total) ? Number(total) : null;
  let sum = 0;
  for (const [k, v] of tres) {
    if (!k.startsWith("gres/gpu:")) continue;
    if (!/^\d+$/.test(v)) return null;
    sum += Number(v);
  }
  return sum;
}

/** The first `gres/gpu:TYPE` of the list (`a100`, `a100_1g.10gb`), or null. */
export function gpuType(tres: Tres): string | null {
  for (const k of tres.keys()) if (k.startsWith("gres/gpu:")) return k.slice("gres/gpu:".length);
  return null;
}

/**
 * A MIG GRES type names what the job asked for: `1g.10gb`, `a100_3g.20gb` (the names Slurm's
 * AutoDetect=nvml gives MIG devices) → compute slices and GiB; null for a whole-card type.
 */
export function migTypeRequest(type: string | null): { slices: number; gib: number } | null {
  const m = /(\d+)g\.(\d+)gb/i.exec(type ?? "");
  return m ? { slices: Number(m[1]), gib: Number(m[2]) } : null;
}
