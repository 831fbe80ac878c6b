// Xid lines of a kernel log, in whatever wrapper the log came in: plain dmesg (`[ 123.456]`),
// `dmesg -T` (`[Sun Nov 29 10:00:00 2024]`), `dmesg --time-format=iso`, syslog or journal
// (`Nov 29 10:00:00 host kernel: `, ISO time), raw /dev/kmsg (`4,1234,5678,-;`), or none.
// The driver's format (kernel_rc.c):
//   NVRM: Xid (PCI:%04x:%02x:%02x[ GPU-I:%02u[ GPU-CI:%02u]]): %d, pid=%s, name=%s, %s[ caused by previous Xid %d]
// Older drivers print `pid='<unknown>', name=<unknown>`; newer ones drop pid/name when unknown.
// Every other line of the log is skipped; a line that starts an Xid and does not finish it is
// an error.

import { parseError, significantLines } from "./text.js";
import type { XidEvent, XidResult } from "./types.js";

const KIND = "xid";

const XID_START = /\bNVRM: Xid\b/;
const XID = new RegExp(
  [
    "\\bNVRM: Xid \\((?:PCI:)?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})",
    // MIG attribution: `GPU-I:02 GPU-CI:00` as the driver prints it; also `GPU-I 1, GPU-CI 0`.
    "(?:[\\s,]+GPU-I[:\\s]\\s*(\\d+))?(?:[\\s,]+GPU-CI[:\\s]\\s*(\\d+))?",
    "\\):\\s*(\\d+),\\s*(.*)$",
  ].join(""),
);
const PID = /^pid=('?<unknown>'?|\d+)(?:,\s*|$)/;
const NAME = /^name=(<unknown>|[^,]*?)(?:,\s*|$)/;
const CAUSED_BY = /\bcaused by previous Xid:?\s*(\d+)/;

const TIME_PREFIXES: RegExp[] = [
  /^\[\s*(\d+\.\d+)\]/, // dmesg
  /^\[(\w{3} \w{3}\s+\d+ \d\d:\d\d:\d\d \d{4})\]/, // dmesg -T
  /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s/, // ISO: dmesg, journal
  /^(\w{3}\s+\d+ \d\d:\d\d:\d\d(?:\.\d+)?)\s+\S+\s+kernel:/, // syslog, journal short
  /^\d+,\d+,(\d+),[^;]*;/, // /dev/kmsg: microseconds since boot
];

function timeOf(prefix: string): string | null {
  for (const re of TIME_PREFIXES) {
    const m = re.exec(prefix);
    if (m) return m[1]!;
  }
  return null;
}

// The driver's own words when a GPU stops answering on PCIe (os-interface.c, "GPU has fallen
// off the bus."), seen as `NVRM: GPU 0000:09:00.0: GPU has fallen off the bus.` and, from older
// drivers, `NVRM: GPU has fallen off the bus.` with no address. Often with no Xid 79 at all.
const OFF_BUS =
  /\bNVRM: (?:GPU (?:at PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.[0-9A-Fa-f])?:?\s+)?(GPU has fallen off the bus\b.*)$/;

/** A line that starts a new kernel log record (a time stamp, a prefix, another NVRM line)
 * cannot be the rest of a wrapped one. */
function startsRecord(t: string): boolean {
  return /\bNVRM:|\bkernel:/.test(t) || TIME_PREFIXES.some((re) => re.test(t));
}

/** An Xid line cut by a terminal or a pager: no message yet, or ending in a comma. */
function looksCut(t: string): boolean {
  const m = XID.exec(t);
  if (!m) return true;
  const rest = m[5]!.trim();
  return rest === "" || rest.endsWith(",") || /^(?:pid=\S*,\s*)?(?:name=\S*,?)?$/.test(rest);
}

export function parseXid(text: string): XidResult {
  const events: XidEvent[] = [];
  const fallenOffBus: XidResult["fallenOffBus"] = [];
  const lines = significantLines(text);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    let t = line.text.trimEnd();
    if (!XID_START.test(t)) {
      const off = OFF_BUS.exec(t);
      if (off) {
        fallenOffBus.push({
          time: timeOf(t.slice(0, off.index)),
          pci: off[1] ?? null,
          message: off[2]!.trim(),
        });
      }
      continue;
    }
    // Re-join a record that a terminal wrapped: the continuation is indented or simply the
    // rest of the text, and never a record of its own. In a time-stamped log every record has
    // its stamp, so any line without one continues the record before it; without stamps only
    // a record that is visibly cut takes the next line.
    const stamped = timeOf(t.slice(0, t.search(XID_START))) !== null;
    for (let next = lines[i + 1]; next && !startsRecord(next.text); next = lines[i + 1]) {
      if (!stamped && !looksCut(t)) break;
      const n = next.text;
      t = /[,:]$/.test(t) || /^\s/.test(n) ? `${t} ${n.trim()}` : `${t}${n.trimEnd()}`;
      i++;
    }
    const m = XID.exec(t);
    if (!m) {
      throw parseError(
        KIND,
        line.no,
        "'NVRM: Xid (PCI:<bus>[ GPU-I:<gi>[ GPU-CI:<ci>]]): <xid>, …'",
        t,
      );
    }
    let rest = m[5]!;
    // A line cut inside `pid=`/`name=` (or right after the Xid number) leaves a stub that
    // would otherwise pass as the message.
    const cutShort = (r: string) => "pid=".startsWith(r) || "name=".startsWith(r);
    if (cutShort(rest)) throw parseError(KIND, line.no, "'pid=…', 'name=…' or a message", t);
    let pid: number | null = null;
    let name: string | null = null;
    if (rest.startsWith("pid=")) {
      const p = PID.exec(rest);
      if (!p) throw parseError(KIND, line.no, "'pid=<n>' or \"pid='<unknown>'\"", t);
      pid = /^\d+$/.test(p[1]!) ? Number(p[1]) : null;
      rest = rest.slice(p[0].length);
      if (rest !== "" && cutShort(rest)) throw parseError(KIND, line.no, "'name=<process>'", t);
    }
    if (rest.startsWith("name=")) {
      const n = NAME.exec(rest);
      if (!n) throw parseError(KIND, line.no, "'name=<process>'", t);
      name = n[1] === "<unknown>" || n[1] === "" ? null : n[1]!;
      rest = rest.slice(n[0].length);
    }
    const cause = CAUSED_BY.exec(rest);
    events.push({
      time: timeOf(t.slice(0, m.index)),
      pci: m[1]!,
      xid: Number(m[4]),
      pid,
      name,
      gpuInstanceId: m[2] === undefined ? null : Number(m[2]),
      computeInstanceId: m[3] === undefined ? null : Number(m[3]),
      causedBy: cause ? Number(cause[1]) : null,
      message: rest.trim(),
    });
  }
  return { events, fallenOffBus };
}
