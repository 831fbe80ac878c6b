// all_reduce_perf's command line and output formats (NVIDIA/nccl-tests, reference workloads.md
// 1.1-1.3). The layout printed is the v2.14.1+ one: the v2.13 header (`agg iters`, `graph`), the
// `Group` column and `[%04x:%02x:%02x]` device locations, `#wrong` as `%5g`, times `%7.2f`
// below 100 us, `%7.1f` below 10000 us and `%7.0f` above, bandwidths `%6.2f` (as in the real
// RTX 5090 capture, whose header lines are copied byte for byte below).

export interface NcclArgs {
  nThreads: number;
  nGpus: number;
  minBytes: number;
  maxBytes: number;
  stepBytes: number;
  stepFactor: number;
  iters: number;
  warmup: number;
  aggIters: number;
  check: number;
  graph: number;
  op: string;
  type: string;
}

export const TYPE_SIZES: Readonly<Record<string, number>> = {
  int8: 1,
  char: 1,
  uint8: 1,
  int32: 4,
  int: 4,
  uint32: 4,
  int64: 8,
  uint64: 8,
  half: 2,
  float16: 2,
  float: 4,
  float32: 4,
  double: 8,
  float64: 8,
  bfloat16: 2,
};
const OPS = ["sum", "prod", "max", "min", "avg", "mulsum"];

/** parsesize: a number with an optional binary K/M/G suffix; -1 when malformed. */
export function parseSize(s: string): number {
  const m = /^(\d+)([kKmMgG]?)$/.exec(s);
  if (!m) return -1;
  const shift = { "": 0, k: 10, m: 20, g: 30 }[(m[2] ?? "").toLowerCase()] ?? 0;
  return Number(m[1]) * 2 ** shift;
}

const LONG: Record<string, string> = {
  "--nthreads": "-t",
  "--ngpus": "-g",
  "--minbytes": "-b",
  "--maxbytes": "-e",
  "--stepbytes": "-i",
  "--stepfactor": "-f",
  "--iters": "-n",
  "--warmup_iters": "-w",
  "--agg_iters": "-m",
  "--check": "-c",
  "--op": "-o",
  "--datatype": "-d",
  "--cudagraph": "-G",
  "--blocking": "-z",
  "--root": "-r",
  "--average": "-a",
};

/** The parsed options, or the message nccl-tests prints before exiting with invalid usage. */
export function parseNcclArgs(argv: readonly string[]): NcclArgs | string {
  const a: NcclArgs = {
    nThreads: 1,
    nGpus: 1,
    minBytes: 32 * 2 ** 20,
    maxBytes: 32 * 2 ** 20,
    stepBytes: 2 ** 20,
    stepFactor: 1,
    iters: 20,
    // 5 in the v2.13-era layout printed here (1 in current sources).
    warmup: 5,
    aggIters: 1,
    check: 1,
    graph: 0,
    op: "sum",
    type: "float",
  };
  for (let i = 0; i < argv.length; i++) {
    const raw = argv[i]!;
    const [name, inline] = raw.startsWith("--")
      ? [LONG[raw.split("=")[0]!] ?? raw, raw.split("=")[1]]
      : [raw.slice(0, 2), raw.length > 2 ? raw.slice(2) : undefined];
    const value = inline ?? argv[++i];
    if (value === undefined) return `option requires an argument -- '${name.replace(/^-+/, "")}'`;
    const n = Number(value);
    switch (name) {
      case "-b":
      case "-e":
      case "-i": {
        const size = parseSize(value);
        const label = { "-b": "minbytes", "-e": "maxbytes", "-i": "stepbytes" }[name];
        if (size < 0) return `invalid size specified for '${label}'`;
        if (name === "-b") a.minBytes = size;
        else if (name === "-e") a.maxBytes = size;
        else a.stepBytes = size;
        break;
      }
      case "-t":
      case "-g":
      case "-f":
      case "-n":
      case "-w":
      case "-m":
      case "-c":
      case "-G":
      case "-z":
      case "-r":
      case "-a":
        if (!Number.isInteger(n) || n < 0) return `invalid value '${value}' for ${name}`;
        if (name === "-t") a.nThreads = n;
        else if (name === "-g") a.nGpus = n;
        else if (name === "-f") a.stepFactor = n;
        else if (name === "-n") a.iters = n;
        else if (name === "-w") a.warmup = n;
        else if (name === "-m") a.aggIters = n;
        else if (name === "-c") a.check = n;
        else if (name === "-G") a.graph = n;
        break;
      case "-o":
        if (!OPS.includes(value)) return `invalid reduction op '${value}'`;
        a.op = value;
        break;
      case "-d":
        if (TYPE_SIZES[value] === undefined) return `invalid type '${value}'`;
        a.type = value;
        break;
      default:
        return `invalid option '${raw}'`;
    }
  }
  return a;
}

export function headerLine(a: NcclArgs): string {
  const step = a.stepFactor > 1 ? `${a.stepFactor}(factor)` : `${a.stepBytes}(bytes)`;
  return `# nThread ${a.nThreads} nGpus ${a.nGpus} minBytes ${a.minBytes} maxBytes ${a.maxBytes} step: ${step} warmup iters: ${a.warmup} iters: ${a.iters} agg iters: ${a.aggIters} validation: ${a.check} graph: ${a.graph}`;
}

export const TABLE_HEADER = [
  "#",
  "#                                                              out-of-place                       in-place          ",
  "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
  "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ",
];

export function rankLine(
  rank: number,
  pid: number,
  host: string,
  device: number,
  pci: string,
  name: string,
): string {
  const d = (n: number, w: number) => String(n).padStart(w);
  return `#  Rank ${d(rank, 2)} Group  0 Pid ${d(pid, 6)} on ${host.padStart(10)} device ${d(device, 2)} [${pci}] ${name}`;
}

/** C's %g (6 significant digits, trailing zeros dropped). */
export function cG(x: number): string {
  if (x === 0) return "0";
  const exp = Math.floor(Math.log10(Math.abs(x)));
  if (exp < -4 || exp >= 6) {
    const [m = "0", e = "0"] = x.toExponential(5).split("e");
    const mant = m.includes(".") ? m.replace(/\.?0+$/, "") : m;
    const n = Number(e);
    return `${mant}e${n < 0 ? "-" : "+"}${String(Math.abs(n)).padStart(2, "0")}`;
  }
  const fixed = x.toFixed(Math.max(0, 5 - exp));
  return fixed.includes(".") ? fixed.replace(/\.?0+$/, "") : fixed;
}

function time7(us: number): string {
  const t = us < 100 ? us.toFixed(2) : us < 10000 ? us.toFixed(1) : us.toFixed(0);
  return t.padStart(7);
}

export interface Measure {
  timeUs: number;
  algbw: number;
  busbw: number;
}

export function rowLine(
  size: number,
  count: number,
  a: NcclArgs,
  oop: Measure,
  ip: Measure,
): string {
  const wrong = (a.check ? "0" : "N/A").padStart(5);
  const half = (m: Measure) =>
    `${time7(m.timeUs)}  ${m.algbw.toFixed(2).padStart(6)}  ${m.busbw.toFixed(2).padStart(6)}  ${wrong}`;
  return `${String(size).padStart(12)}  ${String(count).padStart(12)}  ${a.type.padStart(8)}  ${a.op.padStart(6)}  ${"-1".padStart(6)}  ${half(oop)}  ${half(ip)}`;
}
