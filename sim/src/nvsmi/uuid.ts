// Deterministic identifiers. Real GPU UUIDs are burnt in; real MIG UUIDs (R470+) are name-based
// (version nibble 5) and look stable in (GPU UUID, GI, CI): the same GI/CI got the same MIG UUID
// after being re-created (mig-reference.md §5). The algorithm is not public, so ours is a hash
// of the same inputs with the same shape.

import { createHash } from "node:crypto";

function hex(input: string): string {
  return createHash("sha256").update(input).digest("hex");
}

function dashed(h: string): string {
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, stable per node name and GPU index. */
export function gpuUuid(node: string, index: number): string {
  return `GPU-${dashed(hex(`slicecheck-sim-gpu:${node}:${index}`))}`;
}

/** `MIG-xxxxxxxx-xxxx-5xxx-yxxx-xxxxxxxxxxxx` (RFC 4122 name-based form, as captures show). */
export function migUuid(gpu: string, gi: number, ci: number): string {
  const h = hex(`slicecheck-sim-mig:${gpu}:${gi}:${ci}`).split("");
  h[12] = "5";
  h[16] = "89ab"[Number.parseInt(h[16] ?? "0", 16) % 4] ?? "8";
  return `MIG-${dashed(h.join(""))}`;
}

/** The pre-R470 MIG device name, built from the parent UUID: `MIG-GPU-<uuid>/<gi>/<ci>`. */
export function legacyMigUuid(gpu: string, gi: number, ci: number): string {
  return `MIG-${gpu}/${gi}/${ci}`;
}
