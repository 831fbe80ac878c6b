// A workload program's process, as the resident simulator gives it to a program it runs for a
// bash client (workloads.ts): the client's pid and environment, its stdout and stderr as two
// sockets the client relays, signals the client forwards, and an end the client turns into its
// own exit code or death by a signal.
//
// A process ends once. After its end nothing of it runs on: its sleeps reject and its writes
// throw the recorded end, as nothing of a dead process runs; its callers' catches let a
// ProgramEnd through (ctx.ts).
import type { Socket } from "node:net";
import { type ProgramCtx, ProgramEnd, type ProgramSignal } from "../workloads/ctx.js";

export interface ClientProcess {
  pid: number;
  argv: string[];
  env: NodeJS.ProcessEnv;
  out: Socket;
  err: Socket;
}

export interface ResidentCtx extends ProgramCtx {
  /** A signal the client forwarded: its handlers, or by default the end by that signal. */
  deliver(sig: ProgramSignal): void;
  /** Records the end (the first one counts); `onEnd` then hears of it once. */
  end(e: ProgramEnd): ProgramEnd;
}

export function residentCtx(p: ClientProcess, onEnd: (e: ProgramEnd) => void): ResidentCtx {
  let end: ProgramEnd | null = null;
  const sleepers = new Set<(e: ProgramEnd) => void>();
  const handlers = new Map<ProgramSignal, (() => void)[]>();
  const finish = (e: ProgramEnd): ProgramEnd => {
    if (end) return end;
    end = e;
    for (const reject of sleepers) reject(e);
    sleepers.clear();
    onEnd(e);
    return e;
  };
  const write = (sock: Socket) => (text: string) => {
    if (end) throw end;
    // A reader gone (EPIPE) is the program's to ignore, as a Node process's write errors are.
    if (!sock.destroyed) sock.write(text);
  };
  const ctx: ResidentCtx = {
    argv: p.argv,
    env: p.env,
    pid: p.pid,
    stdout: write(p.out),
    stderr: write(p.err),
    // The client's stdout may be a terminal; no program run here draws differently on one.
    isTTY: false,
    exit: (code) => {
      throw finish(new ProgramEnd(code, null));
    },
    raise: (sig) => {
      if (sig === "SIGKILL") {
        try {
          process.kill(p.pid, "SIGKILL");
        } catch {
          // Gone already.
        }
      }
      throw finish(new ProgramEnd(null, sig));
    },
    onSignal: (sig, handler) => {
      handlers.set(sig, [...(handlers.get(sig) ?? []), handler]);
    },
    sleep: (ms) =>
      new Promise<void>((resolve, reject) => {
        if (end) return reject(end);
        const t = setTimeout(() => {
          sleepers.delete(stop);
          resolve();
        }, ms);
        const stop = (e: ProgramEnd) => {
          clearTimeout(t);
          reject(e);
        };
        sleepers.add(stop);
      }),
    deliver: (sig) => {
      if (end) return;
      const hs = handlers.get(sig);
      if (!hs) return void finish(new ProgramEnd(null, sig));
      for (const h of hs) {
        try {
          h();
        } catch (e) {
          if (!(e instanceof ProgramEnd)) throw e;
        }
      }
    },
    end: finish,
  };
  return ctx;
}
