// The utilization sampler as one looping command on the node (issue 25): started once per phase
// through the node's supervisor, beside the workloads, so that sampling costs no login of its
// own (a command per tick would log in 10-20 times per node per phase, each paying the node's
// shell start-up files). It makes the same choice the per-tick sampler makes: DCGM when
// `dcgmi dmon` answers (then `dcgmi discovery -c` once, for its GPU-I ids), else the default
// `nvidia-smi` table; each reading's lines are followed by a marker line naming it and its exit
// status. The first reading waits one interval, as the per-tick sampler's does.

/** One DCGM reading: profiling field 1002 (SM active) and 252 (framebuffer used). */
export const DMON_ARGV = ["dcgmi", "dmon", "-e", "1002,252", "-c", "1"];
/** DCGM's entity hierarchy: its GPU-I ids against the MIG GPU instances. */
export const DISCOVERY_ARGV = ["dcgmi", "discovery", "-c"];

export const UTIL_MARKER = "@@slicecheck:util ";

export type ReadingKind = "dmon" | "discovery" | "smi";

export interface Reading {
  kind: ReadingKind;
  code: number;
  out: string;
}

/** The loop's shell text; `intervalMs` between readings (whole ms, as `sleep`'s fraction). */
export function samplerLoopScript(intervalMs: number): string {
  const i = (Math.max(100, Math.round(intervalMs)) / 1000).toFixed(3);
  const m = UTIL_MARKER.trim();
  const dmon = DMON_ARGV.join(" ");
  return [
    `sleep ${i} || exit 0`,
    // The reading that found DCGM is a sample already; discovery comes first so that its rows
    // can be attributed when it arrives.
    `if o=$(${dmon} 2>/dev/null); then`,
    `  ${DISCOVERY_ARGV.join(" ")} 2>/dev/null; echo "${m} discovery $?"`,
    `  printf '%s\\n' "$o"; echo "${m} dmon 0"`,
    `  while sleep ${i}; do ${dmon} 2>/dev/null; echo "${m} dmon $?"; done`,
    "else",
    `  echo "${m} dmon $?"`,
    `  while :; do nvidia-smi 2>/dev/null; echo "${m} smi $?"; sleep ${i} || break; done`,
    "fi",
  ].join("\n");
}

/** Cuts the loop's output into readings: the lines before each marker line are its reading. */
export class ReadingParser {
  private lines: string[] = [];
  private pending = "";

  feed(chunk: string): Reading[] {
    const parts = (this.pending + chunk).split("\n");
    this.pending = parts.pop() ?? "";
    const out: Reading[] = [];
    for (const l of parts) {
      const m = /^@@slicecheck:util (dmon|discovery|smi) (\d+)\s*$/.exec(l);
      if (!m) {
        this.lines.push(l);
        continue;
      }
      out.push({ kind: m[1] as ReadingKind, code: Number(m[2]), out: this.lines.join("\n") });
      this.lines = [];
    }
    return out;
  }
}
