// Parses `sacct -P` (--parsable2: fields joined by `|`, no trailing one) into jobs. With its
// header line the columns are named by it; with `-n` (no header) they are the --format order
// the caller gives, SACCT_FORMAT by default (the one `advise --slurm` runs). sacct prints a line
// per job and one per step (`123.batch`, `123.extern`, `123.0`; array tasks `123_4.0`,
// heterogeneous components `123+1.0`): usage TRES (TRESUsageInMax) are on the steps only, so
// each step is folded into its job and the job keeps the steps' peak. `-p` output (a trailing
// `|`) is read too, and `#` lines (a note of the capture's source) are skipped. Pure: text in, data out; a line it cannot read is a PARSE error naming
// FILE:LINE.

import { SlicecheckError } from "../../errors.js";
import {
  elapsedSeconds,
  gpuCount,
  gpuType,
  migTypeRequest,
  parseTres,
  sizeBytes,
  type Tres,
} from "./tres.js";

/** The fields `advise --slurm` asks for, in this order (`sacct -P -n --format=…`). */
export const SACCT_FORMAT = [
  "JobID",
  "JobName",
  "Partition",
  "State",
  "Elapsed",
  "AllocTRES",
  "ReqTRES",
  "TRESUsageInMax",
] as const;

export interface SacctJob {
  id: string;
  name: string;
  partition: string;
  /** The first word of State (`CANCELLED by 1000` → `CANCELLED`). */
  state: string;
  gpus: number;
  /** The `gres/gpu:TYPE` of the allocation (`a100`, `a100_1g.10gb`), or null. */
  gpuType: string | null;
  /** Peak GPU memory over the job's steps (`gres/gpumem` of TRESUsageInMax), or null. */
  gpuMemUsedBytes: number | null;
  /** Peak GPU utilization in percent (`gres/gpuutil`), or null where not accounted. */
  gpuUtilPeak: number | null;
  /** What a MIG GRES type asked for (`gres/gpu:1g.10gb`), or null for whole cards. */
  migRequest: { slices: number; gib: number } | null;
  /** Host memory requested (ReqTRES `mem`), or null. */
  reqMemBytes: number | null;
  elapsedS: number;
  /** Job and step lines folded into this job. */
  lines: number;
}

export interface SacctParse {
  jobs: SacctJob[];
  /** The columns as read (from the header, or given). */
  fields: string[];
  header: boolean;
}

export interface SacctOptions {
  /** Named in errors (`FILE:LINE`). */
  file: string;
  /** The --format order of headerless (`-n`) output; default SACCT_FORMAT. */
  format?: readonly string[];
}

const REQUIRED = ["jobid", "elapsed"];

interface Row {
  get(field: string): string | undefined;
}

function fail(o: SacctOptions, line: number, message: string): SlicecheckError {
  return new SlicecheckError("PARSE", `${o.file}:${line}: ${message}`, { file: o.file, line });
}

/** Blank lines, and `#` lines (a capture's note of where it came from: no JobID starts so). */
const skipped = (line: string) => line.trim() === "" || line.startsWith("#");

function columns(
  lines: string[],
  o: SacctOptions,
): { fields: string[]; header: boolean; first: number } {
  const at = lines.findIndex((l) => !skipped(l));
  const firstLine = at < 0 ? "" : (lines[at] ?? "");
  const named = firstLine.split("|").map((f) => f.trim().toLowerCase());
  const header = named.includes("jobid");
  const fields = header
    ? named.filter((f, i) => !(f === "" && i === named.length - 1))
    : (o.format ?? SACCT_FORMAT).map((f) => f.toLowerCase());
  for (const r of REQUIRED) {
    if (!fields.includes(r)) {
      throw fail(
        o,
        header ? at + 1 : 1,
        `sacct output has no ${r} column (columns: ${fields.join(",")}); run sacct -P --format=${SACCT_FORMAT.join(",")}`,
      );
    }
  }
  if (!fields.includes("alloctres") && !fields.includes("reqtres"))
    throw fail(o, header ? at + 1 : 1, "sacct output has neither AllocTRES nor ReqTRES");
  return { fields, header, first: header ? at + 1 : 0 };
}

function splitRow(text: string, fields: string[], o: SacctOptions, line: number): Row {
  const parts = text.split("|");
  // sacct -p (--parsable) ends each line with the delimiter.
  if (parts.length === fields.length + 1 && parts[parts.length - 1] === "") parts.pop();
  if (parts.length !== fields.length) {
    throw fail(
      o,
      line,
      `${parts.length} fields where the columns are ${fields.length} (${fields.join("|")}): ${JSON.stringify(text.slice(0, 120))}`,
    );
  }
  const byName = new Map(fields.map((f, i) => [f, parts[i] ?? ""]));
  return { get: (f) => byName.get(f) };
}

const SHOWN: Readonly<Record<string, string>> = {
  alloctres: "AllocTRES",
  reqtres: "ReqTRES",
  tresusageinmax: "TRESUsageInMax",
};

function tresOf(row: Row, field: string, o: SacctOptions, line: number): Tres {
  const raw = row.get(field) ?? "";
  const t = parseTres(raw);
  if (!t)
    throw fail(o, line, `${SHOWN[field] ?? field} '${raw}' is not a TRES list (name=value,...)`);
  return t;
}

function usagePeaks(row: Row, o: SacctOptions, line: number) {
  const usage = tresOf(row, "tresusageinmax", o, line);
  const mem = usage.get("gres/gpumem");
  const util = usage.get("gres/gpuutil");
  const memBytes = mem === undefined ? null : sizeBytes(mem, "bytes");
  if (mem !== undefined && memBytes === null)
    throw fail(o, line, `gres/gpumem '${mem}' is not a size`);
  if (util !== undefined && !/^\d+(\.\d+)?$/.test(util))
    throw fail(o, line, `gres/gpuutil '${util}' is not a percentage`);
  return { memBytes, util: util === undefined ? null : Number(util) };
}

function jobOfRow(row: Row, o: SacctOptions, line: number, id: string): SacctJob {
  const alloc = tresOf(row, "alloctres", o, line);
  const req = tresOf(row, "reqtres", o, line);
  // A job that never started has no allocation; what it asked for is all there is.
  const tres = alloc.size > 0 ? alloc : req;
  const gpus = gpuCount(tres);
  if (gpus === null)
    throw fail(o, line, `the GPU count of '${[...tres].join(",")}' is not a number`);
  const elapsedRaw = row.get("elapsed") ?? "";
  const elapsedS = elapsedSeconds(elapsedRaw);
  if (elapsedS === null) throw fail(o, line, `Elapsed '${elapsedRaw}' is not [DD-]HH:MM:SS`);
  const type = gpuType(tres);
  const mem = req.get("mem");
  const peaks = usagePeaks(row, o, line);
  return {
    id,
    name: row.get("jobname") ?? "",
    partition: row.get("partition") ?? "",
    state: (row.get("state") ?? "").split(/\s+/)[0] ?? "",
    gpus,
    gpuType: type,
    gpuMemUsedBytes: peaks.memBytes,
    gpuUtilPeak: peaks.util,
    migRequest: migTypeRequest(type),
    reqMemBytes: mem === undefined ? null : sizeBytes(mem, "MiB"),
    elapsedS,
    lines: 1,
  };
}

const maxOf = (a: number | null, b: number | null) =>
  a === null ? b : b === null ? a : Math.max(a, b);

/** A step's usage goes into its job; the job line's own fields win over a step's. */
function fold(jobs: Map<string, SacctJob>, key: string, read: SacctJob, isStep: boolean): void {
  const seen = jobs.get(key);
  if (!seen) {
    jobs.set(key, { ...read, id: key });
    return;
  }
  const base = isStep ? seen : { ...read, id: key };
  jobs.set(key, {
    ...base,
    gpuMemUsedBytes: maxOf(seen.gpuMemUsedBytes, read.gpuMemUsedBytes),
    gpuUtilPeak: maxOf(seen.gpuUtilPeak, read.gpuUtilPeak),
    lines: seen.lines + 1,
  });
}

export function parseSacct(text: string, o: SacctOptions): SacctParse {
  const lines = text.split(/\r?\n/);
  const { fields, header, first } = columns(lines, o);
  const jobs = new Map<string, SacctJob>();
  for (let i = first; i < lines.length; i++) {
    const raw = lines[i] ?? "";
    if (skipped(raw)) continue;
    const row = splitRow(raw, fields, o, i + 1);
    const id = (row.get("jobid") ?? "").trim();
    if (!/^\d+([_+][\w[\]-]+)?(\.[\w-]+)?$/.test(id))
      throw fail(o, i + 1, `JobID '${id}' is not a Slurm job or step id (123, 123.batch, 123_4.0)`);
    const key = id.split(".")[0] ?? id;
    fold(jobs, key, jobOfRow(row, o, i + 1, id), key !== id);
  }
  return { jobs: [...jobs.values()], fields, header };
}
