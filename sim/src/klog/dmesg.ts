// The simulated `dmesg` (util-linux) over the node's kernel log: plain `[%5ld.%06ld] ` stamps
// (seconds since the simulated boot), `-T`/`--ctime` and `--time-format=ctime|iso|notime`,
// `-t`, `-r`, `-C`/`-c`. The options harnesses pass along (`--nopager`, `--buffer-size N`,
// `-k`, `-L`) are accepted and change nothing. Follow mode and the relative formats (`-w`,
// `-d`, `reltime`, `delta`) are not simulated: they are refused rather than faked.

import { bootTimeMs, clearKernelLog, type KernelRecord, readKernelLog } from "./log.js";

export interface DmesgIo {
  stateDir: string;
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  uid: number;
}

type TimeFormat = "plain" | "ctime" | "iso" | "notime" | "raw";

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const p2 = (n: number) => String(n).padStart(2, "0");

/** strftime("%a %b %e %H:%M:%S %Y") in local time, as `dmesg -T` prints it. */
export function ctime(d: Date): string {
  const time = `${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
  return `${DAYS[d.getDay()]} ${MONTHS[d.getMonth()]} ${String(d.getDate()).padStart(2)} ${time} ${d.getFullYear()}`;
}

/** `2024-08-30T11:43:09,123456+02:00`, as `--time-format=iso` prints it. */
export function isoTime(d: Date, usec: number): string {
  const off = -d.getTimezoneOffset();
  const sign = off < 0 ? "-" : "+";
  const zone = `${sign}${p2(Math.floor(Math.abs(off) / 60))}:${p2(Math.abs(off) % 60)}`;
  const date = `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())}`;
  const time = `${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
  return `${date}T${time},${String(usec % 1_000_000).padStart(6, "0")}${zone}`;
}

function monotonic(usec: number): string {
  return `[${String(Math.floor(usec / 1e6)).padStart(5)}.${String(usec % 1e6).padStart(6, "0")}]`;
}

export function formatRecord(r: KernelRecord, format: TimeFormat, bootMs: number): string {
  const wall = new Date(bootMs + Math.floor(r.usec / 1000));
  switch (format) {
    case "plain":
      return `${monotonic(r.usec)} ${r.text}`;
    case "raw":
      return `<${r.level}>${monotonic(r.usec)} ${r.text}`;
    case "ctime":
      return `[${ctime(wall)}] ${r.text}`;
    case "iso":
      return `${isoTime(wall, bootMs * 1000 + r.usec)} ${r.text}`;
    case "notime":
      return r.text;
  }
}

const USAGE = "Try 'dmesg --help' for more information.\n";
const TIME_FORMATS: Record<string, TimeFormat> = { ctime: "ctime", iso: "iso", notime: "notime" };
const IGNORED = new Set(["-k", "--kernel", "-P", "--nopager", "-L", "--color", "-x", "--decode"]);
const WITH_VALUE = new Set(["-s", "--buffer-size"]);

export async function dmesgMain(argv: readonly string[], io: DmesgIo): Promise<number> {
  let format: TimeFormat = "plain";
  let clear: "none" | "after" | "only" = "none";
  const fail = (msg: string) => {
    io.stderr(`dmesg: ${msg}\n${USAGE}`);
    return 1;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [name, inline] = a.startsWith("--") ? [a.split("=", 1)[0]!, a.split("=")[1]] : [a];
    if (name === "-T" || name === "--ctime") format = "ctime";
    else if (name === "-t" || name === "--notime") format = "notime";
    else if (name === "-r" || name === "--raw") format = "raw";
    else if (name === "-C" || name === "--clear") clear = "only";
    else if (name === "-c" || name === "--read-clear") clear = "after";
    else if (name === "-h" || name === "--help") {
      io.stdout("Usage:\n dmesg [options]\n\nDisplay or control the kernel ring buffer.\n");
      return 0;
    } else if (name === "--time-format") {
      const value = inline ?? argv[++i];
      const f = TIME_FORMATS[value ?? ""];
      if (!f) {
        return fail(
          `unknown time format: ${value ?? ""} (the simulated dmesg has ctime, iso, notime)`,
        );
      }
      format = f;
    } else if (WITH_VALUE.has(name)) {
      if (inline === undefined) i++;
    } else if (IGNORED.has(name) || /^-s\d+$/.test(a)) {
      // Accepted for compatibility; nothing to change in a small simulated buffer.
    } else if (a.startsWith("--")) {
      return fail(`unrecognized option '${a}'`);
    } else {
      return fail(`invalid option -- '${a.replace(/^-/, "").slice(0, 1)}'`);
    }
  }
  if (clear !== "none" && io.uid !== 0) {
    io.stderr("dmesg: klogctl failed: Operation not permitted\n");
    return 1;
  }
  if (clear !== "only") {
    const boot = bootTimeMs(io.stateDir);
    const lines = readKernelLog(io.stateDir).map((r) => formatRecord(r, format, boot));
    if (lines.length > 0) io.stdout(`${lines.join("\n")}\n`);
  }
  if (clear !== "none") await clearKernelLog(io.stateDir);
  return 0;
}
