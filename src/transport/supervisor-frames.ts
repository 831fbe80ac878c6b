// The controller's side of the supervisor's line protocol (supervisor-script.ts): its stdout
// cut into frames. Bytes stay bytes until a command's own decoder reads them, so a line cut
// into continuation frames inside a multi-byte character rejoins exactly.
import { SUP_MARKER } from "./supervisor-script.js";

export type Frame =
  /** `direct`: it starts a recorded command itself (direct-start.ts), `r` requests. */
  | { kind: "ready"; pid: number; direct: boolean }
  | { kind: "cannot"; reason: string }
  | { kind: "out"; id: string; stream: "stdout" | "stderr"; bytes: Buffer }
  | { kind: "exit"; id: string; code: number }
  /** A line that is no frame (a login script's echo, a corrupted write): reported, never fatal. */
  | { kind: "garbage"; line: string };

const NL = Buffer.from("\n");
const STREAMS: Record<string, ["stdout" | "stderr", boolean]> = {
  o: ["stdout", true],
  O: ["stdout", false],
  e: ["stderr", true],
  E: ["stderr", false],
};

/** One complete line (its newline left out) as a frame. */
export function parseFrame(line: Buffer): Frame {
  const text = () => line.toString("utf8");
  if (line.subarray(0, SUP_MARKER.length).toString("latin1") === SUP_MARKER) {
    const rest = line.subarray(SUP_MARKER.length).toString("utf8");
    const ready = /^ready (\d+)( r)?$/.exec(rest);
    if (ready) return { kind: "ready", pid: Number(ready[1]), direct: ready[2] !== undefined };
    if (rest.startsWith("cannot"))
      return { kind: "cannot", reason: rest.replace(/^cannot:? */, "") };
    return { kind: "garbage", line: text() };
  }
  const sp = line.indexOf(0x20);
  // `<id> <k> <payload>`: a one-letter kind between two spaces (an exit frame has its status).
  if (sp <= 0 || line[sp + 2] !== 0x20) {
    const x = /^(\S+) x (\d+)$/.exec(text());
    return x ? { kind: "exit", id: x[1]!, code: Number(x[2]) } : { kind: "garbage", line: text() };
  }
  const id = line.subarray(0, sp).toString("latin1");
  const k = String.fromCharCode(line[sp + 1]!);
  if (k === "x") {
    const code = Number(line.subarray(sp + 3).toString("latin1"));
    return Number.isInteger(code) ? { kind: "exit", id, code } : { kind: "garbage", line: text() };
  }
  const s = STREAMS[k];
  if (!s) return { kind: "garbage", line: text() };
  const payload = line.subarray(sp + 3);
  return { kind: "out", id, stream: s[0], bytes: s[1] ? Buffer.concat([payload, NL]) : payload };
}

/** Cuts a byte stream into frames; an unfinished line waits for the next chunk. */
export class FrameParser {
  private held: Buffer = Buffer.alloc(0);

  feed(chunk: Buffer): Frame[] {
    const buf = this.held.length ? Buffer.concat([this.held, chunk]) : chunk;
    const out: Frame[] = [];
    let from = 0;
    for (let nl = buf.indexOf(0x0a, from); nl >= 0; nl = buf.indexOf(0x0a, from)) {
      out.push(parseFrame(buf.subarray(from, nl)));
      from = nl + 1;
    }
    this.held = Buffer.from(buf.subarray(from));
    return out;
  }

  /** What is left when the stream ends: an unfinished line is no frame. */
  flush(): Frame[] {
    const rest = this.held;
    this.held = Buffer.alloc(0);
    return rest.length ? [{ kind: "garbage", line: rest.toString("utf8") }] : [];
  }
}
