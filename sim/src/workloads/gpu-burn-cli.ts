// gpu_burn's command line and printf formats, copied from wilicc/gpu-burn gpu_burn-drv.cpp
// (reference workloads.md 2.1-2.3), quirks included: options are matched by substring (`-d`,
// `-tc`, `-h`, `-l` anywhere in an argument) or by their first two characters (`-m`, `-i`,
// `-c`, `-stts` is really `-s`), `-c` and `-s` take the next argument without skipping it, and
// TIME is `argv[1 + thisParam]`.

export const OPS_PER_MUL = 1100048498688;
/** Matrices are 8192² since 2023-03. */
export const SIZE = 8192;
export const USEMEM = 0.9;
export const COMPARE_KERNEL = "compare.ptx";

export interface BurnArgs {
  runLength: number;
  lengthGiven: boolean;
  doubles: boolean;
  tensorCores: boolean;
  /** 0: USEMEM of free; < 0: that percentage of free; > 0: bytes. */
  useBytes: number;
  /** -1: every device. */
  deviceId: number;
  kernelFile: string;
}

export type Parsed =
  | { kind: "run"; args: BurnArgs }
  | { kind: "help" }
  | { kind: "list" }
  | { kind: "syntax"; option: "-m" | "-i" };

/** decodeUSEMEM: `N` MB, `N%` of free memory (negative), anything else 0 (an error). */
export function decodeUseMem(s: string): number {
  const m = /^\s*([-+]?\d+)(.*)$/.exec(s);
  if (!m) return 0;
  const r = Number(m[1]);
  if (m[2] === "%") return -r;
  return m[2] === "" ? r * 1024 * 1024 : 0;
}

/** strtol(s, NULL, 0): decimal, 0x hex or leading-0 octal, stopping at the first bad digit. */
function strtol0(s: string): number {
  const m = /^\s*([-+]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*)/.exec(s);
  if (!m) return 0;
  const body = m[2]!;
  const v = /^0[xX]/.test(body)
    ? Number.parseInt(body.slice(2), 16)
    : body.startsWith("0")
      ? Number.parseInt(body, 8) || 0
      : Number(body);
  return m[1] === "-" ? -v : v;
}

function atoi(s: string | undefined): number {
  const m = /^\s*([-+]?\d+)/.exec(s ?? "");
  return m ? Number(m[1]) : 0;
}

export function parseBurnArgs(argv: readonly string[]): Parsed {
  const args: BurnArgs = {
    runLength: 10,
    lengthGiven: false,
    doubles: false,
    tensorCores: false,
    useBytes: 0,
    deviceId: -1,
    kernelFile: COMPARE_KERNEL,
  };
  // argv[0] is the program, as in C.
  const av = ["gpu_burn", ...argv];
  let thisParam = 0;
  for (let i = 1; i < av.length; i++) {
    const a = av[i]!;
    if (a.includes("-h")) return { kind: "help" };
    if (a.includes("-l")) return { kind: "list" };
    if (a.includes("-d")) {
      args.doubles = true;
      thisParam++;
    }
    if (a.includes("-tc")) {
      args.tensorCores = true;
      thisParam++;
    }
    if (a.startsWith("-m")) {
      thisParam++;
      let value: string;
      if (a.length > 2) value = a.slice(2);
      else if (i + 1 < av.length) {
        i++;
        thisParam++;
        value = av[i]!;
      } else return { kind: "syntax", option: "-m" };
      args.useBytes = decodeUseMem(value);
      if (args.useBytes === 0) return { kind: "syntax", option: "-m" };
    }
    if (av[i]!.startsWith("-i")) {
      thisParam++;
      if (av[i]!.length > 2) args.deviceId = strtol0(av[i]!.slice(2));
      else if (i + 1 < av.length) {
        i++;
        thisParam++;
        args.deviceId = strtol0(av[i]!);
      } else return { kind: "syntax", option: "-i" };
    }
    if (av[i]!.startsWith("-c")) {
      thisParam++;
      if (av[i + 1] !== undefined) {
        args.kernelFile = av[i + 1]!;
        thisParam++;
      }
    }
    if (av[i]!.startsWith("-s")) {
      thisParam++;
      if (av[i + 1] !== undefined) thisParam++;
    }
  }
  if (av.length - thisParam >= 2) {
    args.runLength = atoi(av[1 + thisParam]);
    args.lengthGiven = true;
  }
  return { kind: "run", args };
}

export const HELP = `GPU Burn
Usage: gpu-burn [OPTIONS] [TIME]

-m X\tUse X MB of memory.
-m N%\tUse N% of the available GPU memory.  Default is ${USEMEM * 100}%
-d\tUse doubles
-tc\tTry to use Tensor cores
-l\tLists all GPUs in the system
-i N\tExecute only on GPU N
-c FILE\tUse FILE as compare kernel.  Default is ${COMPARE_KERNEL}
-stts T\tSet timeout threshold to T seconds for using SIGTERM to abort child processes before using SIGKILL.  Default is 30
-h\tShow this help message

Examples:
  gpu-burn -d 3600 # burns all GPUs with doubles for an hour
  gpu-burn -m 50% # burns using 50% of the available GPU memory
  gpu-burn -l # list GPUs
  gpu-burn -i 2 # burns only GPU of index 2
`;

export interface ClientView {
  calcs: number;
  gflops: number;
  errors: number;
  died: boolean;
  temp: number;
}

/** The `\r`-led progress report (no `power:` section: the reference's 3ead140 layout). */
export function progressLine(elapsedPct: number, clients: readonly ClientView[]): string {
  const sep = (i: number) => (i !== clients.length - 1 ? "- " : "");
  let out = `\r${elapsedPct.toFixed(1)}%  proc'd: `;
  clients.forEach((c, i) => {
    out += `${c.calcs} (${c.gflops.toFixed(0)} Gflop/s) ${sep(i)}`;
  });
  out += "  errors: ";
  clients.forEach((c, i) => {
    out += `${c.errors} ${c.died ? " (DIED!)" : c.errors ? " (WARNING!)" : ""}${sep(i)}`;
  });
  out += "  temps: ";
  clients.forEach((c, i) => {
    out += `${c.temp !== 0 ? `${c.temp} C ` : "-- "}${sep(i)}`;
  });
  return out;
}

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** `date` in the C locale, in UTC (the node's zone is not simulated). */
export function dateLine(d: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  const time = `${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}`;
  return `${DAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2)} ${time} UTC ${d.getUTCFullYear()}`;
}
