// Both transports hand out a process's output the same way: listeners are attached at once
// and always, because an unread SSH channel never emits 'close' and an unread pipe fills up
// and blocks the process. What arrives before the caller registers its callback is kept and
// handed over on registration: a fast command's output can come in the same packet as the
// channel's confirmation, before the caller had a chance to listen.
import type { Readable } from "node:stream";
import type { RawProcess } from "./types.js";

function fanOut(stream: Readable | null | undefined): (cb: (b: Buffer) => void) => void {
  const cbs: ((b: Buffer) => void)[] = [];
  let early: Buffer[] | null = [];
  stream?.on("data", (b: Buffer) => {
    if (cbs.length === 0 && early) early.push(b);
    for (const cb of cbs) cb(b);
  });
  return (cb) => {
    cbs.push(cb);
    const held = early;
    early = null;
    for (const b of held ?? []) cb(b);
  };
}

export function consumeStreams(
  stdout: Readable | null | undefined,
  stderr: Readable | null | undefined,
): Pick<RawProcess, "onStdout" | "onStderr"> {
  return { onStdout: fanOut(stdout), onStderr: fanOut(stderr) };
}
