// nvidia-smi's command line, as far as slicecheck and the MIG tools use it: options take their
// value as the next word or after `=` (`-i 0`, `--id=0`, `--query-gpu=uuid`).

export interface CsvFormat {
  header: boolean;
  units: boolean;
}

export type MigOp =
  | { op: "lgip" | "lgipp" | "lgi" | "lci" | "lcip" | "dci" | "dgi" }
  | { op: "cgi"; profiles: string[]; withDefaultCi: boolean }
  | { op: "cci"; profiles: string[] | null };

export type Command =
  | { kind: "table" }
  | { kind: "list" }
  | { kind: "help" }
  | { kind: "q" }
  | { kind: "vgpu-q" }
  | { kind: "query-gpu" | "query-apps"; fields: string[]; format: CsvFormat }
  | { kind: "mig-mode"; enable: boolean }
  | { kind: "reset" }
  | { kind: "topo" }
  | { kind: "nvlink-status" | "nvlink-errors" }
  | { kind: "mig"; mig: MigOp; gi: number[] | null; ci: number[] | null };

export interface Parsed {
  ids: string | undefined;
  command: Command;
}

export type ParseResult = Parsed | { error: "" | "mig" };

class Words {
  private i = 0;
  constructor(private readonly argv: readonly string[]) {}
  next(): { flag: string; inline: string | undefined } | undefined {
    const w = this.argv[this.i++];
    if (w === undefined) return undefined;
    const eq = w.startsWith("--") ? w.indexOf("=") : -1;
    return eq > 0
      ? { flag: w.slice(0, eq), inline: w.slice(eq + 1) }
      : { flag: w, inline: undefined };
  }
  value(inline: string | undefined): string | undefined {
    if (inline !== undefined) return inline;
    return this.argv[this.i++];
  }
  /** The next word if it is a value, not an option (`-cci` takes an optional list). */
  optionalValue(inline: string | undefined): string | undefined {
    if (inline !== undefined) return inline;
    const w = this.argv[this.i];
    if (w === undefined || w.startsWith("-")) return undefined;
    this.i++;
    return w;
  }
}

function list(v: string | undefined): string[] | undefined {
  if (v === undefined) return undefined;
  const items = v.split(",").map((s) => s.trim());
  return items.some((s) => s === "") ? undefined : items;
}

function ints(v: string | undefined): number[] | undefined {
  const items = list(v);
  if (!items || items.some((s) => !/^\d+$/.test(s))) return undefined;
  return items.map(Number);
}

function parseFormat(v: string | undefined): CsvFormat | undefined {
  const items = list(v);
  if (items?.[0] !== "csv") return undefined;
  const rest = items.slice(1);
  if (rest.some((o) => o !== "noheader" && o !== "nounits")) return undefined;
  return { header: !rest.includes("noheader"), units: !rest.includes("nounits") };
}

const MIG_LISTINGS: Record<string, "lgip" | "lgipp" | "lgi" | "lci" | "lcip" | "dci" | "dgi"> = {
  "-lgip": "lgip",
  "--list-gpu-instance-profiles": "lgip",
  "-lgipp": "lgipp",
  "--list-gpu-instance-possible-placements": "lgipp",
  "-lgi": "lgi",
  "--list-gpu-instances": "lgi",
  "-lci": "lci",
  "--list-compute-instances": "lci",
  "-lcip": "lcip",
  "--list-compute-instance-profiles": "lcip",
  "-dci": "dci",
  "--destroy-compute-instance": "dci",
  "-dgi": "dgi",
  "--destroy-gpu-instance": "dgi",
};

function parseMig(w: Words): ParseResult {
  let ids: string | undefined;
  let op: MigOp | undefined;
  let withDefaultCi = false;
  let gi: number[] | null = null;
  let ci: number[] | null = null;
  const bad = { error: "mig" } as const;
  for (let t = w.next(); t; t = w.next()) {
    const listing = MIG_LISTINGS[t.flag];
    if (listing) {
      if (op) return bad;
      op = { op: listing };
    } else if (t.flag === "-i" || t.flag === "--id") {
      ids = w.value(t.inline);
      if (ids === undefined) return bad;
    } else if (t.flag === "-cgi" || t.flag === "--create-gpu-instance") {
      const profiles = list(w.value(t.inline));
      if (op || !profiles) return bad;
      op = { op: "cgi", profiles, withDefaultCi: false };
    } else if (t.flag === "-C" || t.flag === "--default-compute-instance") {
      withDefaultCi = true;
    } else if (t.flag === "-cci" || t.flag === "--create-compute-instance") {
      if (op) return bad;
      const v = w.optionalValue(t.inline);
      const profiles = v === undefined ? null : list(v);
      if (profiles === undefined) return bad;
      op = { op: "cci", profiles };
    } else if (t.flag === "-gi" || t.flag === "--gpu-instance-id") {
      const v = ints(w.value(t.inline));
      if (!v) return bad;
      gi = v;
    } else if (t.flag === "-ci" || t.flag === "--compute-instance-id") {
      const v = ints(w.value(t.inline));
      if (!v) return bad;
      ci = v;
    } else {
      return bad;
    }
  }
  if (!op) return bad;
  if (withDefaultCi) {
    if (op.op !== "cgi") return bad;
    op = { ...op, withDefaultCi: true };
  }
  return { ids, command: { kind: "mig", mig: op, gi, ci } };
}

/** `nvidia-smi topo -m` (the only topo form modelled) and `nvidia-smi nvlink -s|-e [-i ID]`. */
function parseTopoOrNvlink(argv: readonly string[]): ParseResult {
  const rest = argv.slice(1);
  if (argv[0] === "topo")
    return rest.length === 1 && (rest[0] === "-m" || rest[0] === "--matrix")
      ? { ids: undefined, command: { kind: "topo" } }
      : { error: "" };
  let ids: string | undefined;
  let kind: "nvlink-status" | "nvlink-errors" | undefined;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === "-i" || a === "--id") ids = rest[++i];
    else if (!kind && (a === "-s" || a === "--status")) kind = "nvlink-status";
    else if (!kind && (a === "-e" || a === "--errorcounters")) kind = "nvlink-errors";
    else return { error: "" };
  }
  return kind ? { ids, command: { kind } } : { error: "" };
}

export function parseArgs(argv: readonly string[]): ParseResult {
  if (argv[0] === "topo" || argv[0] === "nvlink") return parseTopoOrNvlink(argv);
  const w = new Words(argv);
  if (argv[0] === "mig") {
    w.next();
    return parseMig(w);
  }
  if (argv[0] === "vgpu") {
    const rest = argv.slice(1);
    const i = rest.findIndex((a) => a === "-i" || a === "--id");
    const ids = i >= 0 ? rest[i + 1] : undefined;
    const others = i >= 0 ? rest.filter((_, k) => k !== i && k !== i + 1) : rest;
    if (others.some((a) => a !== "-q" && a !== "--query") || others.length === 0)
      return { error: "" };
    return { ids, command: { kind: "vgpu-q" } };
  }
  let ids: string | undefined;
  let command: Command | undefined;
  let format: CsvFormat | undefined;
  const bad = { error: "" } as const;
  const set = (c: Command) => {
    if (command) return false;
    command = c;
    return true;
  };
  for (let t = w.next(); t; t = w.next()) {
    const f = t.flag;
    if (f === "-i" || f === "--id") {
      ids = w.value(t.inline);
      if (ids === undefined) return bad;
    } else if (f === "-L" || f === "--list-gpus") {
      if (!set({ kind: "list" })) return bad;
    } else if (f === "-q" || f === "--query") {
      if (!set({ kind: "q" })) return bad;
    } else if (f === "-h" || f === "--help") {
      if (!set({ kind: "help" })) return bad;
    } else if (f === "--query-gpu" || f === "--query-compute-apps") {
      const fields = list(w.value(t.inline));
      const kind = f === "--query-gpu" ? "query-gpu" : "query-apps";
      if (!fields || !set({ kind, fields, format: { header: true, units: true } })) return bad;
    } else if (f === "--format") {
      format = parseFormat(w.value(t.inline));
      if (!format) return bad;
    } else if (f === "-mig" || f === "--multi-instance-gpu") {
      const v = w.value(t.inline);
      if ((v !== "0" && v !== "1") || !set({ kind: "mig-mode", enable: v === "1" })) return bad;
    } else if (f === "-r" || f === "--gpu-reset") {
      if (!set({ kind: "reset" })) return bad;
    } else {
      return bad;
    }
  }
  const c: Command = command ?? { kind: "table" };
  if (c.kind === "query-gpu" || c.kind === "query-apps") {
    // nvidia-smi insists on --format with a query.
    if (!format) return bad;
    return { ids, command: { ...c, format } };
  }
  if (format) return bad;
  return { ids, command: c };
}
