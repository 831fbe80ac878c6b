// `nvidia-smi -mig 0|1` and `-r/--gpu-reset` (mig-reference.md §7).
//
// Ampere keeps the mode in the InfoROM; setting it makes the driver try a GPU reset. The reset
// succeeds when nothing holds the GPU ("Enabled MIG Mode", 450.80.02); when a client holds it the
// mode stays pending with "In use by another client" (515.86.01), and where the hypervisor blocks
// resets it stays pending with "Not Supported" until a reboot or a reset that may also fail.
// Hopper and later apply the mode at once without a reset; with a client attached they refuse
// (GH200 550.54.15: "Unable to disable MIG Mode … In use by another client").

import type { Architecture } from "../../../src/mig/catalog/types.js";
import { EXIT, exitFor, MSG, type NvmlError } from "./messages.js";
import type { OpResult } from "./ops-instances.js";
import { type GpuView, gpuBusy } from "./view.js";

function needsReset(arch: Architecture): boolean {
  return arch === "ampere";
}

export function setMigMode(views: readonly GpuView[], enable: boolean, uid: number): OpResult {
  const lines: string[] = [];
  let changed = false;
  const refuse = (bus: string, err: NvmlError): OpResult => {
    lines.push(MSG.modeRefused(enable, bus, err), MSG.terminating);
    return { lines, code: exitFor(err), changed };
  };
  for (const v of views) {
    const g = v.gpu;
    const bus = g.pciBusId;
    if (uid !== 0) return refuse(bus, "Insufficient Permissions");
    if (!v.architecture) return refuse(bus, "Not Supported");
    // Not in a capture: mig-parted always destroys GIs/CIs before disabling, so a disable with
    // instances present is refused here rather than silently dropping them.
    if (!enable && g.mig.current && g.gis.length > 0)
      return refuse(bus, "In use by another client");
    if (needsReset(v.architecture)) {
      g.mig.pending = enable;
      changed = true;
      if (g.mig.current === enable) {
        lines.push(MSG.modeSet(enable, bus));
      } else if (gpuBusy(g)) {
        lines.push(...MSG.pendingInUse(enable, bus));
        continue;
      } else if (!g.resetSupported) {
        lines.push(...MSG.pendingNoReset(enable, bus));
        continue;
      } else {
        g.mig.current = enable;
        lines.push(MSG.modeSet(enable, bus));
      }
    } else {
      if (g.mig.current !== enable && gpuBusy(g)) return refuse(bus, "In use by another client");
      g.mig = { current: enable, pending: enable };
      changed = true;
      lines.push(MSG.modeSet(enable, bus));
    }
    if (!g.persistenceMode) lines.push(...MSG.persistenceOff(bus));
  }
  lines.push(MSG.allDone);
  return { lines, code: EXIT.ok, changed };
}

/**
 * A GPU reset applies a pending MIG mode and drops every GI and CI (geometry never survives a
 * reset). It needs every client gone: nvidia-persistenced, DCGM and a loaded nvidia_drm all
 * block it (gpu-operator#118, mig-parted#181). The MIG mode of Hopper is kept: the driver stays
 * loaded (conservative reading of the GUIDE, which ties loss of the mode to driver unload).
 */
export function resetGpus(views: readonly GpuView[], uid: number): OpResult {
  const lines: string[] = [];
  for (const v of views) {
    if (uid === 0 && !v.gpu.resetSupported) {
      lines.push(MSG.resetNotSupported(v.gpu.pciBusId));
      return { lines, code: EXIT.notSupported, changed: false };
    }
  }
  const fails: { bus: string; err: NvmlError }[] = [];
  for (const v of views) {
    if (uid !== 0) fails.push({ bus: v.gpu.pciBusId, err: "Insufficient Permissions" });
    else if (gpuBusy(v.gpu)) fails.push({ bus: v.gpu.pciBusId, err: "In use by another client" });
  }
  const first = fails[0];
  if (first) {
    lines.push(...MSG.resetFailed(fails));
    return { lines, code: exitFor(first.err), changed: false };
  }
  for (const v of views) {
    const g = v.gpu;
    g.mig.current = g.mig.pending;
    g.gis = [];
    lines.push(MSG.resetOk(g.pciBusId));
  }
  lines.push(MSG.allDone);
  return { lines, code: EXIT.ok, changed: views.length > 0 };
}
