// Both transports hand out a process's output the same way: listeners are attached at once
// and always, because an unread SSH channel never emits 'close' and an unread pipe fills up
// and blocks the process.
import type { Readable } from "node:stream";
import type { RawProcess } from "./types.js";

export function consumeStreams(
  stdout: Readable | null | undefined,
  stderr: Readable | null | undefined,
): Pick<RawProcess, "onStdout" | "onStderr"> {
  const outs: ((b: Buffer) => void)[] = [];
  const errs: ((b: Buffer) => void)[] = [];
  stdout?.on("data", (b: Buffer) => {
    for (const cb of outs) cb(b);
  });
  stderr?.on("data", (b: Buffer) => {
    for (const cb of errs) cb(b);
  });
  return { onStdout: (cb) => outs.push(cb), onStderr: (cb) => errs.push(cb) };
}
