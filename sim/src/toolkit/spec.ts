// The CDI spec a simulated node's `nvidia-ctk cdi generate` writes, from the node's GPU state, in
// the shape NVIDIA's toolkit gives it (docs.nvidia.com/datacenter/cloud-native/container-toolkit/
// latest/cdi-support.html; NVIDIA/nvidia-container-toolkit pkg/nvcdi): `cdiVersion`, `kind:
// nvidia.com/gpu`, per GPU a device by index (`0`) and by UUID, per MIG device one by
// `<gpu>:<mig>` (the MIG device index `nvidia-smi -L` prints) and one by its `MIG-` UUID, then
// `all`. A MIG device's edits inject its GPU's /dev/nvidiaN and the /dev/nvidia-caps files of its
// GI and CI (their minors from mig-minors, ../nvsmi/caps.ts). Written once: nothing on a real
// node rewrites it when the layout changes, so neither does the simulator.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { stringify } from "yaml";
import { migMinor } from "../nvsmi/caps.js";
import type { SimState } from "../nvsmi/state.js";
import { migDevices, viewOf } from "../nvsmi/view.js";

export const CDI_DIRS_VAR = "SLICECHECK_CDI_DIRS";

/** A simulated node's spec folder (its SLICECHECK_CDI_DIRS), under its state directory. */
export const cdiDirOf = (stateDir: string): string => join(stateDir, "cdi");

interface Device {
  name: string;
  containerEdits: { deviceNodes: { path: string }[] };
}

const nodes = (...paths: string[]) => ({ deviceNodes: paths.map((path) => ({ path })) });

export function specOf(state: SimState): Record<string, unknown> {
  const devices: Device[] = [];
  for (const g of state.gpus) {
    if (g.lost) continue;
    const dev = `/dev/nvidia${g.index}`;
    for (const name of [String(g.index), g.uuid])
      devices.push({ name, containerEdits: nodes(dev) });
    if (!g.mig.current) continue;
    migDevices(viewOf(state, g)).forEach(({ gi, ci }, m) => {
      const edits = nodes(
        dev,
        `/dev/nvidia-caps/nvidia-cap${migMinor(g.index, gi.id, null)}`,
        `/dev/nvidia-caps/nvidia-cap${migMinor(g.index, gi.id, ci.id)}`,
      );
      devices.push({ name: `${g.index}:${m}`, containerEdits: edits });
      devices.push({ name: ci.uuid, containerEdits: edits });
    });
  }
  const all = state.gpus.filter((g) => !g.lost).map((g) => `/dev/nvidia${g.index}`);
  devices.push({ name: "all", containerEdits: nodes(...all) });
  return {
    cdiVersion: "0.5.0",
    kind: "nvidia.com/gpu",
    devices,
    containerEdits: {
      env: ["NVIDIA_VISIBLE_DEVICES=void"],
      deviceNodes: [{ path: "/dev/nvidiactl" }, { path: "/dev/nvidia-uvm" }],
    },
  };
}

export const specText = (state: SimState): string => stringify(specOf(state));

/** The node's spec folders (SLICECHECK_CDI_DIRS, as the product reads them). */
export function cdiDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env[CDI_DIRS_VAR] ?? "").split(/\s+/).filter(Boolean);
}

/** Writes the spec to `file`, refusing any path outside the node's own folders: a simulated node
 * never writes the host's /etc/cdi. */
export function writeSpec(state: SimState, file: string, allowed: readonly string[]): void {
  const abs = resolve(file);
  if (!allowed.some((d) => abs.startsWith(`${resolve(d)}/`)))
    throw new Error(
      `the simulated nvidia-ctk writes only under ${allowed.join(", ")} (got ${abs})`,
    );
  mkdirSync(dirname(abs), { recursive: true });
  writeFileSync(abs, specText(state));
}

/** Every spec file in the folders, with its text. */
export function readSpecs(dirs: readonly string[]): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = [];
  for (const d of dirs) {
    if (!existsSync(d)) continue;
    for (const f of readdirSync(d).sort())
      if (/\.(ya?ml|json)$/.test(f))
        out.push({ file: join(d, f), text: readFileSync(join(d, f), "utf8") });
  }
  return out;
}
