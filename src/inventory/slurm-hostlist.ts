// Slurm's hostlist syntax (`sim[01-03,07],gpu1`), as scontrol prints node lists. Its own module
// in the top layer because both the MIG apply interlocks (a node's running jobs) and the Slurm
// verdicts read node lists. Pure.

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
