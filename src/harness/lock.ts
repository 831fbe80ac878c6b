// The node lock, as a lease: one controller at a time per node, for the whole of `run`, `apply`
// and `restore`. A holder shell on the node (lease-script.ts) keeps the lease while the
// controller's heartbeats arrive on its stdin, and for one lease length after the last one, so
// that a stalled connection does not hand the node to somebody else while this run may still
// act on it. The lease length is the run's own deadline for a silent node: the SSH keepalives
// drop a connection whose node stays silent for (count + 1) × interval, and one heartbeat
// interval more covers a heartbeat in flight. Every change is guarded on the node by the
// lease's generation (NodeSession), and a lost lease is reported, never ignored.
import { hostname } from "node:os";
import { SlicecheckError } from "../errors.js";
import {
  DEFAULT_LEASE_S,
  HEARTBEAT_INTERVAL_MS,
  HEARTBEAT_TIMEOUT_S,
  PICK_SHELL,
} from "../transport/remote-scripts.js";
import type { RawProcess, Transport } from "../transport/types.js";
import { quote } from "../util/shell.js";
import { settledWithin } from "../util/time.js";
import { lockScript, RELEASE_BYTE } from "./lease-script.js";

export interface LockInfo {
  runId: string;
  command: string;
  controller: string;
  pid: number;
  started: string;
  /** The lease length the holder asked for, in seconds (absent in locks of older versions). */
  leaseS?: number;
}

interface LeaseLine {
  generation: number;
  /** The node's epoch seconds. */
  expires: number;
  state: string;
  runTag: string;
}

function parseLeaseLine(line: string | undefined): LeaseLine | null {
  const m = /^(\d+) (\d+) (\S+) ?(.*)$/.exec((line ?? "").trim());
  if (!m) return null;
  return { generation: Number(m[1]), expires: Number(m[2]), state: m[3]!, runTag: m[4] ?? "" };
}

function parseInfo(s: string): LockInfo | null {
  try {
    const v = JSON.parse(s.trim()) as Partial<LockInfo>;
    return typeof v.runId === "string" ? (v as LockInfo) : null;
  } catch {
    return null;
  }
}

function describeHolder(i: LockInfo | null): string {
  if (!i) return "another slicecheck (its lock file names no run)";
  return `run ${i.runId} (\`slicecheck ${i.command}\` from ${i.controller}, pid ${i.pid}, since ${i.started})`;
}

/** `2026-12-03T11:40:00Z (in 37 s)`, from the node's clock. */
function describeExpiry(expires: number, nodeNow: number): string {
  const at = new Date(expires * 1000).toISOString().replace(/\.000Z$/, "Z");
  return `${at} by the node's clock (in ${Math.max(0, expires - nodeNow)} s)`;
}

export interface HeldLock {
  /** The run whose lock (released without cleanup, or expired) this one took over, if any. */
  tookOver: LockInfo | null;
  /** The lease's generation on the node: every guarded change names it. */
  generation: number;
  runTag: string;
  leaseS: number;
  /** When the lease runs out unless renewed again, by this controller's clock: counted from
   * the sending of the last heartbeat the node answered, so never later than the node's. */
  expiresAt(): Date;
  /** Set once the holder on the node ended without this controller releasing it. */
  lost(): SlicecheckError | null;
  /** Called once, when the lease is lost. */
  onLost(cb: (e: SlicecheckError) => void): void;
  release(): Promise<void>;
}

export function leaseLost(node: string, why: string, ctx: Record<string, unknown> = {}) {
  return new SlicecheckError(
    "LEASE_LOST",
    `${node}: this run's lease on the node was lost (${why}); slicecheck changes nothing more on it, not even to restore it: another controller may have changed it since. Find out whose layout it carries (\`slicecheck assert\`), then restore it by hand (\`slicecheck restore\`) if the journal's state is still wanted`,
    { node, ...ctx },
  );
}

function refusal(node: string, text: string): SlicecheckError {
  const [head = "", leaseText, ...rest] = text.split("\n");
  const [kind, now] = head.split(" ");
  const nodeNow = Number(now) || Math.floor(Date.now() / 1000);
  const lease = parseLeaseLine(leaseText);
  const holder = parseInfo(rest.join("\n"));
  const expiry =
    lease && lease.state === "held"
      ? `; its lease (generation ${lease.generation}) runs until ${describeExpiry(lease.expires, nodeNow)}`
      : "";
  const why =
    kind === "LEASE_UNEXPIRED"
      ? `the node's lease is held by ${describeHolder(holder)}, whose holder on the node is gone but whose controller may still be working${expiry}. Nothing was touched: rerun once it has expired`
      : `the node is locked by ${describeHolder(holder)}${expiry}. Nothing was touched: wait for it to finish, or, if that controller is gone, rerun once its lease has expired (its holder keeps it for ${holder?.leaseS ?? HEARTBEAT_TIMEOUT_S} s after the last heartbeat)`;
  return new SlicecheckError("NODE_LOCKED", `${node}: ${why}`, {
    node,
    holder,
    generation: lease?.generation ?? null,
    expires: lease ? new Date(lease.expires * 1000).toISOString() : null,
  });
}

/** Waits for the holder's first answer: LOCK_OK, LOCK_HELD, LEASE_UNEXPIRED or LOCK_ERROR. */
function firstAnswer(p: RawProcess, onLine: (line: string) => void): Promise<string> {
  let out = "";
  let settled = false;
  return new Promise<string>((resolve) => {
    p.onStdout((b) => {
      if (settled) {
        out += b.toString();
        const lines = out.split("\n");
        out = lines.pop() ?? "";
        for (const l of lines) onLine(l);
        return;
      }
      out += b.toString();
      const m = /^(?:LOCK_OK|LOCK_ERROR)[^\n]*\n/m.exec(out);
      if (m) {
        settled = true;
        out = out.slice(m.index + m[0].length);
        resolve(m[0].trimEnd());
      }
    });
    p.onStderr(() => {});
    void p.done.then(() => {
      if (!settled) {
        settled = true;
        resolve(out);
      }
    });
  });
}

/** Takes the node's lease over `t`, or throws NODE_LOCKED naming the holder and its expiry. */
export async function acquireLock(
  t: Transport,
  info: Omit<LockInfo, "controller" | "pid" | "started" | "leaseS">,
  o: { leaseS?: number; runTag: string },
): Promise<HeldLock> {
  const leaseS = o.leaseS ?? DEFAULT_LEASE_S;
  const full: LockInfo = {
    ...info,
    controller: hostname(),
    pid: process.pid,
    started: new Date().toISOString(),
    leaseS,
  };
  const sudo = t.node.become === "sudo" ? "sudo -n " : "";
  const script = lockScript({ info: JSON.stringify(full), leaseS, runTag: o.runTag });
  // bash where the node has it: the holder then renews with builtins (lease-script.ts).
  const p: RawProcess = await t.start(`${PICK_SHELL} ${sudo}"$b" -c ${quote(script)}`);
  // Heartbeats written and not yet answered, oldest first (the node answers each in order).
  const sent: number[] = [];
  let expiresAt = Date.now() + leaseS * 1000;
  let last = "";
  const text = await firstAnswer(p, (line) => {
    if (line.startsWith("RENEWED ")) {
      const at = sent.shift();
      if (at !== undefined) expiresAt = Math.max(expiresAt, at + leaseS * 1000);
    } else if (line) last = line;
  });
  if (text.startsWith("LOCK_OK"))
    return held(t, p, text, { ...o, leaseS, runId: info.runId }, sent, {
      expiresAt: () => new Date(expiresAt),
      last: () => last,
    });
  await p.done.catch(() => {});
  if (text.startsWith("LOCK_HELD") || text.startsWith("LEASE_UNEXPIRED"))
    throw refusal(t.node.name, text);
  throw new SlicecheckError(
    "NODE_COMMAND",
    `${t.node.name}: cannot take the node lock (${text.trim().replace(/^LOCK_ERROR /, "") || "the lock command ended without an answer"})`,
    { node: t.node.name },
  );
}

function held(
  t: Transport,
  p: RawProcess,
  text: string,
  o: { leaseS: number; runTag: string; runId: string },
  sent: number[],
  view: { expiresAt: () => Date; last: () => string },
): HeldLock {
  // LOCK_OK GENERATION EXPIRES PREVIOUS_STATE PREVIOUS_INFO
  const [, gen, , , ...rest] = text.split(" ");
  const generation = Number(gen);
  const prev = parseInfo(rest.join(" "));
  const beat = () => {
    try {
      sent.push(Date.now());
      p.write("h");
    } catch {
      sent.pop();
      /* connection gone: the holder releases the lease */
    }
  };
  beat();
  const timer = setInterval(beat, HEARTBEAT_INTERVAL_MS);
  timer.unref();
  let released = false;
  let lost: SlicecheckError | null = null;
  const listeners: ((e: SlicecheckError) => void)[] = [];
  void p.done.then(() => {
    clearInterval(timer);
    if (released) return;
    const expired = view.last() === "LEASE_EXPIRED";
    lost = leaseLost(
      t.node.name,
      expired
        ? `generation ${generation} expired on the node: no heartbeat reached it for ${o.leaseS} s`
        : `the holder of generation ${generation} on the node ended${view.last() === "RELEASED" ? " (its channel was closed)" : ""}; the lease ran until ${view.expiresAt().toISOString()} at the latest`,
      { generation },
    );
    for (const cb of listeners) cb(lost);
  });
  return {
    // A release removes the info file: one still there was left by a holder that was killed
    // or whose lease ran out (whatever its lease line says: a holder of an older version
    // kept none).
    tookOver: prev && prev.runId !== o.runId ? prev : null,
    generation,
    runTag: o.runTag,
    leaseS: o.leaseS,
    expiresAt: view.expiresAt,
    lost: () => lost,
    onLost(cb) {
      if (lost) cb(lost);
      else listeners.push(cb);
    },
    async release() {
      released = true;
      clearInterval(timer);
      try {
        p.write(RELEASE_BYTE);
        p.end();
      } catch {
        /* already gone */
      }
      await settledWithin(p.done, 5_000);
    },
  };
}
