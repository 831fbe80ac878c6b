// The workload programs the resident simulator runs for a bash client (tools.ts workloadWrapper):
// the client is the process the node, its process list and the harness see, and the program
// (workloads/programs) runs here. A Node process of its own per workload cost 0.13-0.2 s of CPU
// on 2 slow cores; a client costs a bash.
//
// A client opens a control connection that starts with NUL-terminated fields: W2, tool, the
// client's pid, its effective uid, argc, then argc arguments. Where the client's stdout and
// stderr are pipes (the harness's fifos, sshd's pipes, a shell's `|`), the program writes into
// them itself, through /proc/<pid>/fd/6 and 7 (openDirect): the program starts and the control
// connection answers `started`. Elsewhere (a terminal, a file) it answers `streams`, and the
// client opens two more connections, each starting with O1 or E1 and its pid, and relays them
// with two cats (they were in every workload, 4-5 ms of CPU each launch on 2 slow cores); once
// both are in, the program starts and control answers `started`. The client then forwards the
// signals it traps (TERM, INT, HUP) as lines on the control connection. When the program ends,
// its streams are closed and the control connection gets `exit N` or `signal SIG`, which the
// client turns into its own exit or its own death by that signal. Anything that keeps the
// program from starting (a tool not run here, another uid, a client whose /proc entry is
// unreadable, a connection missing after JOIN_MS) answers `fallback`, and the client runs the
// tool as its own Node process: the program has not run, so nothing happens twice.
//
// The client dying without an answer (SIGKILL, or a signal it does not trap) closes the control
// connection: the program is killed where it stands, and its entries leave the process list at
// once, as the driver frees a dead process's context.
import { closeSync, constants, openSync, readFileSync, statSync } from "node:fs";
import { Socket } from "node:net";
import { finished } from "node:stream";
import { type ProgramCtx, ProgramEnd, ProgramKilled } from "../workloads/ctx.js";
import { clientEnded, clientStarted } from "./guard.js";
import { type ResidentCtx, residentCtx } from "./program-ctx.js";
import { RESIDENT_PROGRAMS } from "./programs.js";
import { OWN_UID, WORKLOAD_VERSION } from "./protocol.js";

const STREAMS = { O1: "out", E1: "err" } as const;
/** How long the three connections of one client may take to arrive. */
const JOIN_MS = 10_000;

interface Pending {
  control?: { sock: Socket; tool: string; argv: string[]; uid: number };
  out?: Socket;
  err?: Socket;
  timer: NodeJS.Timeout;
}

const pending = new Map<number, Pending>();

export type WorkloadHead =
  | { kind: "W2"; pid: number; uid: number; tool: string; argv: string[]; rest: Buffer }
  | { kind: "O1" | "E1"; pid: number };

/** The fields of a workload connection's head; "more" until they are all in, "bad" if wrong. */
export function parseWorkloadHead(buf: Buffer): WorkloadHead | "more" | "bad" {
  const fields: string[] = [];
  let at = 0;
  for (;;) {
    const nul = buf.indexOf(0, at);
    if (nul < 0) return "more";
    fields.push(buf.subarray(at, nul).toString("utf8"));
    at = nul + 1;
    const [kind] = fields;
    if (kind === "O1" || kind === "E1") {
      if (fields.length < 2) continue;
      const pid = Number(fields[1]);
      return Number.isInteger(pid) && pid > 1 && at === buf.length ? { kind, pid } : "bad";
    }
    if (kind !== WORKLOAD_VERSION) return "bad";
    if (fields.length < 5) continue;
    const [, tool, pid, uid, argc] = fields as [string, string, string, string, string];
    const n = Number(argc);
    if (!/^\d+$/.test(pid) || !/^\d+$/.test(uid) || !Number.isInteger(n) || n < 0) return "bad";
    if (fields.length < 5 + n) continue;
    // What follows are signal lines the client forwarded early (listenForSignals reads them).
    const rest = buf.subarray(at);
    return { kind, pid: Number(pid), uid: Number(uid), tool, argv: fields.slice(5), rest };
  }
}

/** The environment the client was started with, or null when it cannot be read. */
function environOf(pid: number): NodeJS.ProcessEnv | null {
  try {
    const env: NodeJS.ProcessEnv = {};
    for (const kv of readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")) {
      const eq = kv.indexOf("=");
      if (eq > 0) env[kv.slice(0, eq)] = kv.slice(eq + 1);
    }
    return env;
  } catch {
    return null;
  }
}

function entry(pid: number): Pending {
  let p = pending.get(pid);
  if (!p) {
    const timer = setTimeout(() => abandon(pid), JOIN_MS);
    timer.unref();
    p = { timer };
    pending.set(pid, p);
  }
  return p;
}

/** Gives up on a client that did not complete its three connections. */
function abandon(pid: number): void {
  const p = pending.get(pid);
  pending.delete(pid);
  if (!p) return;
  clearTimeout(p.timer);
  p.control?.sock.end("fallback\n");
  p.out?.destroy();
  p.err?.destroy();
}

/**
 * The client's stdout and stderr as sockets of this process, where both are pipes: the program's
 * writes then go where the client's would, with no relay. Null where either is not a pipe (a
 * terminal, a file: its offset would not be shared) or cannot be opened (no reader left). The
 * client keeps copies of them on fds 6 and 7 (wrapper.ts): its own 1 and 2 point elsewhere for
 * a moment whenever one of its commands has a redirection of its own, as the one that sends the
 * head has, and this may look in that moment.
 */
function openDirect(pid: number): { out: Socket; err: Socket } | null {
  const fds: number[] = [];
  try {
    for (const n of [6, 7]) {
      const path = `/proc/${pid}/fd/${n}`;
      if (!statSync(path).isFIFO()) throw new Error("not a pipe");
      fds.push(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK));
    }
  } catch {
    for (const fd of fds) closeSync(fd);
    return null;
  }
  const [out, err] = fds.map((fd) => {
    const s = new Socket({ fd, readable: false, writable: true });
    // A reader gone (EPIPE) is the program's to ignore, as it is with a relay.
    s.on("error", () => s.destroy());
    return s;
  }) as [Socket, Socket];
  return { out, err };
}

/** A workload connection whose head is parsed: joins its client's others; starts when complete. */
export function joinWorkload(sock: Socket, head: WorkloadHead): void {
  const p = entry(head.pid);
  if (head.kind === "W2") {
    if (p.control) return void sock.end("fallback\n");
    p.control = { sock, tool: head.tool, argv: head.argv, uid: head.uid };
    if (head.rest.length > 0) sock.unshift(head.rest);
    sock.on("error", () => sock.destroy());
    if (head.uid !== OWN_UID || !RESIDENT_PROGRAMS[head.tool]) return void abandon(head.pid);
    const direct = openDirect(head.pid);
    // The client opens its stream connections on this answer.
    if (!direct) return void sock.write("streams\n");
    Object.assign(p, direct);
    return void start(head.pid, p);
  }
  const which = STREAMS[head.kind];
  if (p[which]) return void sock.destroy();
  p[which] = sock;
  // A connection that closes before the start leaves its client to fall back (or to its end).
  sock.on("error", () => sock.destroy());
  if (p.control && p.out && p.err) start(head.pid, p);
}

function start(pid: number, p: Pending): void {
  pending.delete(pid);
  clearTimeout(p.timer);
  const c = p.control!;
  const program = RESIDENT_PROGRAMS[c.tool];
  const env = program && c.uid === OWN_UID ? environOf(pid) : null;
  if (!program || !env) {
    c.sock.end("fallback\n");
    p.out!.destroy();
    p.err!.destroy();
    return;
  }
  const ctx = residentCtx(
    { pid, argv: c.argv, env, out: p.out!, err: p.err! },
    (e) => void reportEnd(ctx, c.sock, p.out!, p.err!, e),
  );
  clientStarted(pid);
  listenForSignals(ctx, c.sock);
  c.sock.write("started\n");
  void run(ctx, program);
}

/** Signal lines from the client; its connection closing before the end is its death. */
function listenForSignals(ctx: ResidentCtx, control: Socket): void {
  let buf = "";
  control.setEncoding("utf8");
  control.on("data", (d: string) => {
    buf += d;
    for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line === "TERM" || line === "INT" || line === "HUP") ctx.deliver(`SIG${line}`);
    }
  });
  control.on("close", () => ctx.end(new ProgramKilled()));
  // Paused since its head was read (server.ts), so that no early signal line was dropped.
  control.resume();
}

async function run(ctx: ResidentCtx, program: (c: ProgramCtx) => Promise<void>): Promise<void> {
  try {
    await program(ctx);
    ctx.end(new ProgramEnd(0, null));
  } catch (e) {
    if (e instanceof ProgramEnd) ctx.end(e);
    else {
      // What Node prints of an uncaught error, and its exit code.
      try {
        ctx.stderr(`${(e as Error)?.stack ?? String(e)}\n`);
      } catch {
        // Ended meanwhile.
      }
      ctx.end(new ProgramEnd(1, null));
    }
  }
}

/** Ends a stream and resolves once its data is written, or the connection failed. */
const closed = (s: Socket) =>
  new Promise<void>((r) => {
    finished(s, { readable: false }, () => r());
    s.end();
  });

/** Tells the client how the program ended, once its output is all written. */
async function reportEnd(
  ctx: ResidentCtx,
  control: Socket,
  out: Socket,
  err: Socket,
  e: ProgramEnd,
): Promise<void> {
  // A process that ended, by its exit or dead of a signal: the driver frees its context (a
  // program that ended by exit, or caught the signal, has unregistered itself already).
  await clientEnded(ctx.pid, ctx.env.SLICECHECK_SIM_STATE);
  if (e instanceof ProgramKilled) {
    out.destroy();
    err.destroy();
    return;
  }
  await Promise.all([closed(out), closed(err)]);
  const sig = e.signal?.replace(/^SIG/, "");
  if (!control.destroyed) control.end(sig ? `signal ${sig}\n` : `exit ${e.code ?? 1}\n`);
}
