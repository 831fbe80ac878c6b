// The simulated `sacct`: Slurm accounting of a simulated node, from a job history planted in
// <stateDir>/sacct.json (`sim fault NODE sacct --name small-jobs|big-jobs`). It answers what
// `slicecheck advise --slurm` asks: `-P`/`-p` (fields joined by `|`, -p with a trailing one),
// `-n` (no header), `--format=A,B` / `-o A,B` in that order, `-X` (job lines only); the time
// window and user options are accepted and the whole history is printed. Without a planted
// history it answers as sacct does where AccountingStorageType is not slurmdbd.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const SACCT_FILE = "sacct.json";

/** One line of sacct output: field name (as sacct spells it in --format) → value. */
export type SacctRow = Record<string, string>;

export interface SacctIo {
  stateDir: string;
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

/** The fields the simulated accounting keeps (a subset of sacct's --helpformat). */
export const SACCT_FIELDS = [
  "JobID",
  "JobName",
  "Partition",
  "User",
  "State",
  "Elapsed",
  "Start",
  "End",
  "NodeList",
  "AllocTRES",
  "ReqTRES",
  "TRESUsageInMax",
];

export function readHistory(stateDir: string): SacctRow[] | null {
  const file = join(stateDir, SACCT_FILE);
  if (!existsSync(file)) return null;
  return (JSON.parse(readFileSync(file, "utf8")) as { rows: SacctRow[] }).rows;
}

export function writeHistory(stateDir: string, rows: SacctRow[] | null): void {
  const file = join(stateDir, SACCT_FILE);
  if (rows === null) {
    rmSync(file, { force: true });
    return;
  }
  writeFileSync(`${file}.tmp`, `${JSON.stringify({ rows }, null, 1)}\n`);
  renameSync(`${file}.tmp`, file);
}

const WITH_VALUE = new Set([
  "-S",
  "--starttime",
  "-E",
  "--endtime",
  "-u",
  "--user",
  "-A",
  "--accounts",
  "-r",
  "--partition",
  "-o",
  "--format",
]);

interface Args {
  sep: "P" | "p";
  header: boolean;
  allocations: boolean;
  format: string[];
}

function parseArgs(argv: string[], io: SacctIo): Args | null {
  const a: Args = {
    sep: "P",
    header: true,
    allocations: false,
    format: ["JobID", "JobName", "Partition", "State", "Elapsed"],
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    const [flag, inline] = arg.startsWith("--")
      ? [arg.split("=")[0] ?? arg, arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : undefined]
      : [arg, undefined];
    const value = inline ?? (WITH_VALUE.has(flag) ? argv[++i] : undefined);
    if (flag === "-P" || flag === "--parsable2") a.sep = "P";
    else if (flag === "-p" || flag === "--parsable") a.sep = "p";
    else if (flag === "-n" || flag === "--noheader") a.header = false;
    else if (flag === "-X" || flag === "--allocations") a.allocations = true;
    else if (flag === "-a" || flag === "--allusers") continue;
    else if (flag === "-o" || flag === "--format")
      a.format = (value ?? "").split(",").filter(Boolean);
    else if (WITH_VALUE.has(flag)) continue;
    else {
      io.stderr(`sacct: unrecognized option '${arg}'\nTry "sacct --help" for more information\n`);
      return null;
    }
  }
  return a;
}

export function sacctMain(argv: string[], io: SacctIo): number {
  const args = parseArgs(argv, io);
  if (!args) return 1;
  const rows = readHistory(io.stateDir);
  if (rows === null) {
    io.stderr("sacct: error: Slurm accounting storage is disabled\n");
    return 1;
  }
  const fields: string[] = [];
  for (const f of args.format) {
    const known = SACCT_FIELDS.find((k) => k.toLowerCase() === f.split("%")[0]?.toLowerCase());
    if (!known) {
      io.stderr(`sacct: fatal: Invalid field requested: "${f}"\n`);
      return 1;
    }
    fields.push(known);
  }
  const end = args.sep === "p" ? "|" : "";
  const lines = args.header ? [`${fields.join("|")}${end}`] : [];
  for (const r of rows) {
    if (args.allocations && (r.JobID ?? "").includes(".")) continue;
    lines.push(`${fields.map((f) => r[f] ?? "").join("|")}${end}`);
  }
  io.stdout(lines.length > 0 ? `${lines.join("\n")}\n` : "");
  return 0;
}
