// The node's supervisor spoken to in its own protocol (supervisor-script.ts), through a local
// `sh`: its frames collected as they come, what each command wrote and its exit frame, which
// program answered (perl or a shell) and whether it takes `r` requests (direct-start.ts).
import assert from "node:assert/strict";
import { readlinkSync } from "node:fs";
import { basename } from "node:path";
import type { NodeSpec } from "../../src/inventory/types.js";
import type { LocalTransport } from "../../src/transport/local.js";
import { runTagFor } from "../../src/transport/managed.js";
import { type Frame, FrameParser } from "../../src/transport/supervisor-frames.js";
import { supervisorCommand } from "../../src/transport/supervisor-perl.js";
import type { RawProcess } from "../../src/transport/types.js";
import { waitFor } from "./procs.js";

export async function rawSupervisor(
  t: LocalTransport,
  node: NodeSpec,
  heartbeatS = 15,
  sudo = false,
) {
  const p: RawProcess = await t.start(
    supervisorCommand(runTagFor(t.runId, node.name), sudo, heartbeatS),
  );
  const parser = new FrameParser();
  const frames: Frame[] = [];
  p.onStdout((b) => frames.push(...parser.feed(b)));
  p.onStderr(() => {});
  assert.ok(await waitFor(() => frames.some((f) => f.kind === "ready"), 10_000), "ready");
  const ready = frames.find((f): f is Extract<Frame, { kind: "ready" }> => f.kind === "ready");
  const program = basename(readlinkSync(`/proc/${ready?.pid ?? 0}/exe`));
  const text = (id: string, stream: "stdout" | "stderr") =>
    Buffer.concat(
      frames.flatMap((f) =>
        f.kind === "out" && f.id === id && f.stream === stream ? [f.bytes] : [],
      ),
    ).toString();
  const exit = (id: string) =>
    frames.find((f): f is Extract<Frame, { kind: "exit" }> => f.kind === "exit" && f.id === id)
      ?.code;
  const direct = ready?.direct === true;
  return { p, frames, text, exit, program, direct, send: (l: string) => p.write(`${l}\n`) };
}
