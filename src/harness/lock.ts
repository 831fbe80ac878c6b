// The node lock: one controller at a time per node, for the whole of `run`, `apply` and
// `restore`. A shell on the node takes flock(1) on a file under /var/tmp/slicecheck and holds it
// as long as the controller's heartbeats arrive on its stdin; when the controller dies, is
// stopped, or its connection drops, the holder exits and the kernel drops the lock with it.
// The holder's info file names the run, so a second controller can say who holds the node, and
// one left behind by a holder that was killed says whose lock is being taken over.
import { hostname } from "node:os";
import { SlicecheckError } from "../errors.js";
import { HEARTBEAT_INTERVAL_MS, HEARTBEAT_TIMEOUT_S } from "../transport/remote-scripts.js";
import type { RawProcess, Transport } from "../transport/types.js";
import { quote } from "../util/shell.js";
import { settledWithin } from "../util/time.js";

// Where the node keeps slicecheck's files (the journal's copy lives there too). A simulated
// node has its own state folder on this one machine, named by the variable its sshd sets.
// biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion, on the node
const LOCK_DIR = '"${SLICECHECK_SIM_STATE:-/var/tmp/slicecheck}"';
const LOCK_FILE = `${LOCK_DIR}/node.lock`;
const INFO_FILE = `${LOCK_DIR}/node.lock.json`;
/** BSD sysexits EX_TEMPFAIL: someone else holds the lock. */
const LOCKED_EXIT = 75;

export interface LockInfo {
  runId: string;
  command: string;
  controller: string;
  pid: number;
  started: string;
}

export function lockScript(info: LockInfo): string {
  const json = JSON.stringify(info);
  return [
    `mkdir -p ${LOCK_DIR} && exec 9>>${LOCK_FILE} || { echo "LOCK_ERROR cannot open "${LOCK_FILE}; exit 70; };`,
    "command -v flock >/dev/null 2>&1 || { echo 'LOCK_ERROR flock (util-linux) is not installed'; exit 70; };",
    `if ! flock -n 9; then echo LOCK_HELD; cat ${INFO_FILE} 2>/dev/null; echo; exit ${LOCKED_EXIT}; fi;`,
    // An info file that outlived its holder: the holder was killed without cleaning up.
    `prev=$(cat ${INFO_FILE} 2>/dev/null); printf '%s\\n' ${quote(json)} > ${INFO_FILE}.tmp && mv -f ${INFO_FILE}.tmp ${INFO_FILE};`,
    `echo "LOCK_OK $prev";`,
    `while c=$(timeout ${HEARTBEAT_TIMEOUT_S} dd bs=1 count=1 2>/dev/null) && [ -n "$c" ]; do :; done;`,
    `rm -f ${INFO_FILE}`,
  ].join(" ");
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

export interface HeldLock {
  /** The run whose stale lock this one took over, if any. */
  tookOver: LockInfo | null;
  release(): Promise<void>;
}

/** Takes the node's lock over `t`, or throws NODE_LOCKED naming the holder. */
export async function acquireLock(
  t: Transport,
  info: Omit<LockInfo, "controller" | "pid" | "started">,
): Promise<HeldLock> {
  const full: LockInfo = {
    ...info,
    controller: hostname(),
    pid: process.pid,
    started: new Date().toISOString(),
  };
  const sudo = t.node.become === "sudo" ? "sudo -n " : "";
  const p: RawProcess = await t.start(`${sudo}sh -c ${quote(lockScript(full))}`);
  let out = "";
  let settled = false;
  const first = new Promise<string>((resolve) => {
    p.onStdout((b) => {
      out += b.toString();
      if (!settled && /^(LOCK_OK.*|LOCK_ERROR.*)\n/m.test(out)) {
        settled = true;
        resolve(out);
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
  const text = await first;
  if (text.startsWith("LOCK_OK")) {
    p.write("h");
    const beat = setInterval(() => {
      try {
        p.write("h");
      } catch {
        /* connection gone: the holder times out and releases */
      }
    }, HEARTBEAT_INTERVAL_MS);
    beat.unref();
    const prev = parseInfo(text.slice("LOCK_OK".length));
    return {
      tookOver: prev && prev.runId !== info.runId ? prev : null,
      async release() {
        clearInterval(beat);
        try {
          p.end();
        } catch {
          /* already gone */
        }
        await settledWithin(p.done, 5_000);
      },
    };
  }
  await p.done.catch(() => {});
  if (text.startsWith("LOCK_HELD")) {
    const holder = parseInfo(text.slice("LOCK_HELD".length));
    throw new SlicecheckError(
      "NODE_LOCKED",
      `${t.node.name}: the node is locked by ${describeHolder(holder)}; nothing was touched. Wait for it to finish, or, if that controller is gone, rerun in ${HEARTBEAT_TIMEOUT_S} s (its lock is released once its heartbeats stop)`,
      { node: t.node.name, holder },
    );
  }
  throw new SlicecheckError(
    "NODE_COMMAND",
    `${t.node.name}: cannot take the node lock (${text.trim().replace(/^LOCK_ERROR /, "") || "the lock command ended without an answer"})`,
    { node: t.node.name },
  );
}
