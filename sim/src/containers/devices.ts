// Which devices a simulated container gets, from the runtime's device arguments, resolved
// against the live MIG layout in the node's state (never from a CDI spec file: the CDI spec
// and its staleness are the toolkit preflight's, apart from this).
//
// podman --device nvidia.com/gpu=NAME: NAME is `all`, a GPU index (`0`), a MIG device as
// `<gpu index>:<MIG device index>` (the index strategy of `nvidia-ctk cdi generate`, the MIG
// device index as `nvidia-smi -L` numbers it), or a UUID. docker --gpus: `all`, or
// `device=ID[,ID]` with indices or UUIDs (the nvidia runtime hook's NVIDIA_VISIBLE_DEVICES).
import type { SimState } from "../nvsmi/state.js";
import { migDevices, viewOf } from "../nvsmi/view.js";

/** Every device of the node: each MIG device, and each GPU. */
export function allDevices(state: SimState): string[] {
  return state.gpus.flatMap((g) => [
    g.uuid,
    ...(g.mig.current ? migDevices(viewOf(state, g)).map((d) => d.ci.uuid) : []),
  ]);
}

/** The UUIDs one device name stands for; null when it names nothing on the node. */
export function resolveDevice(state: SimState, name: string): string[] | null {
  if (name === "all") return allDevices(state);
  const lower = name.toLowerCase();
  for (const g of state.gpus) {
    if (g.uuid.toLowerCase() === lower) return [g.uuid];
    const mig = g.mig.current
      ? migDevices(viewOf(state, g)).find((d) => d.ci.uuid.toLowerCase() === lower)
      : undefined;
    if (mig) return [g.uuid, mig.ci.uuid];
  }
  const idx = /^(\d+)(?::(\d+))?$/.exec(name);
  if (!idx) return null;
  const gpu = state.gpus.find((g) => g.index === Number(idx[1]));
  if (!gpu) return null;
  if (idx[2] === undefined) return [gpu.uuid];
  if (!gpu.mig.current) return null;
  const dev = migDevices(viewOf(state, gpu))[Number(idx[2])];
  // A MIG device brings its parent GPU's device node with it (nvidia-smi -L shows both).
  return dev ? [gpu.uuid, dev.ci.uuid] : null;
}
