// `nvidia-smi mig -cgi/-cci/-dci/-dgi`: change the GPU's geometry under the state lock. Each
// walks its targets in nvidia-smi's order and stops at the first failure, printing the
// `Unable to …` line and the `Failed to …` summary (guide `-cgi 19,19,14,9`).

import { findCiProfile, findGiProfile } from "../../../src/mig/catalog/catalog.js";
import type { CiProfile } from "../../../src/mig/catalog/types.js";
import { chooseCiStart, chooseGiStart, giFits, nextCiId, nextGiId } from "./alloc.js";
import type { Layout } from "./layout.js";
import { EXIT, exitFor, MSG, type NvmlError } from "./messages.js";
import type { SimGi, SimGpu } from "./state.js";
import { migUuid } from "./uuid.js";
import { type GpuView, giProfileOf, listingOrder } from "./view.js";

/**
 * `allowed`: the caller may change MIG geometry: root, or a user given the mig/config capability
 * (GUIDE "nvidia-capabilities").
 */
export interface OpResult {
  lines: string[];
  code: number;
  changed: boolean;
}

class Run {
  lines: string[] = [];
  changed = false;
  fail(err: NvmlError, ...lines: string[]): OpResult {
    this.lines.push(...lines);
    return { lines: this.lines, code: exitFor(err), changed: this.changed };
  }
  done(): OpResult {
    return { lines: this.lines, code: EXIT.ok, changed: this.changed };
  }
}

/**
 * `namesId`: whether the success line names the new CI. `-cci` lines do from R470 (the R450 GUIDE
 * example omits it); `-cgi … -C` lines name it even in the 54-column (R450/R460) era capture.
 */
function createCi(v: GpuView, gi: SimGi, cp: CiProfile, namesId: boolean, run: Run): boolean {
  const gp = giProfileOf(v, gi);
  const start = chooseCiStart(cp, gi.cis, gp.computeSlices);
  if (start === undefined) return false;
  const id = nextCiId(gi.cis);
  gi.cis.push({ id, profileId: cp.id, start, size: cp.size, uuid: migUuid(v.gpu.uuid, gi.id, id) });
  run.changed = true;
  run.lines.push(MSG.createdCi(namesId ? id : null, v.gpu.index, gi.id, cp.name, cp.id));
  return true;
}

/** A whole-GPU client (no GI) keeps the GPU busy: GH200 `-cgi` failed while nsys held it. */
function wholeGpuClient(g: SimGpu): boolean {
  return g.processes.some((p) => p.gi === null);
}

export function createGis(
  views: readonly GpuView[],
  profiles: readonly string[],
  withDefaultCi: boolean,
  allowed: boolean,
): OpResult {
  const run = new Run();
  for (const v of views) {
    const gpu = v.gpu;
    for (const typed of profiles) {
      const refuse = (err: NvmlError) =>
        run.fail(err, MSG.cannotCreateGi(gpu.index, typed, err), MSG.failedCreateGis(err));
      if (!allowed) return refuse("Insufficient Permissions");
      if (wholeGpuClient(gpu)) return refuse("In use by another client");
      // `<profile>[:<start>]` (newer `mig -h`: "an optional placement specifier").
      const m = /^(.*?)(?::(\d+))?$/.exec(typed.trim());
      const profile = v.catalog && m?.[1] ? findGiProfile(v.catalog, m[1]) : undefined;
      if (!profile) return refuse("Invalid Argument");
      let start: number | undefined;
      if (m?.[2] !== undefined) {
        start = Number(m[2]);
        if (!profile.placements.some((p) => p.start === start)) return refuse("Invalid Argument");
        if (!giFits(v, profile, start, gpu.gis)) return refuse("Insufficient Resources");
      } else {
        start = chooseGiStart(v, profile, gpu.gis);
        if (start === undefined) return refuse("Insufficient Resources");
      }
      const id = nextGiId(v, start, profile.memorySlices, gpu.gis);
      const gi: SimGi = { id, profileId: profile.id, start, size: profile.memorySlices, cis: [] };
      gpu.gis.push(gi);
      run.changed = true;
      run.lines.push(MSG.createdGi(id, gpu.index, profile.name, profile.id));
      if (withDefaultCi) {
        const cp = profile.ciProfiles.find((c) => c.isDefault);
        if (!cp || !createCi(v, gi, cp, true, run)) {
          const err: NvmlError = "Insufficient Resources";
          return run.fail(
            err,
            MSG.cannotCreateCi(gpu.index, id, String(profile.defaultCiProfileId), err),
            MSG.failedCreateCis(err),
          );
        }
      }
    }
  }
  return run.done();
}

function targetGis(v: GpuView, ids: readonly number[] | null): { gis: SimGi[]; missing?: number } {
  if (ids === null) return { gis: listingOrder(v) };
  const gis: SimGi[] = [];
  for (const id of ids) {
    const gi = v.gpu.gis.find((g) => g.id === id);
    if (!gi) return { gis, missing: id };
    gis.push(gi);
  }
  return { gis: listingOrder(v, gis) };
}

export function createCis(
  views: readonly GpuView[],
  profiles: readonly string[] | null,
  giIds: readonly number[] | null,
  allowed: boolean,
  layout: Layout,
): OpResult {
  const run = new Run();
  if (views.every((v) => v.gpu.gis.length === 0) && giIds === null) {
    return run.fail("Not Found", MSG.noGis("Not Found"));
  }
  for (const v of views) {
    const { gis, missing } = targetGis(v, giIds);
    if (missing !== undefined) {
      const err: NvmlError = "Not Found";
      const typed = profiles?.[0] ?? "0";
      return run.fail(
        err,
        MSG.cannotCreateCi(v.gpu.index, missing, typed, err),
        MSG.failedCreateCis(err),
      );
    }
    for (const gi of gis) {
      const gp = giProfileOf(v, gi);
      // Without a profile `-cci` creates the default (`*`) one [mig -h, IDX-8235278810].
      for (const typed of profiles ?? [String(gp.defaultCiProfileId)]) {
        const refuse = (err: NvmlError) =>
          run.fail(
            err,
            MSG.cannotCreateCi(v.gpu.index, gi.id, typed, err),
            MSG.failedCreateCis(err),
          );
        if (!allowed) return refuse("Insufficient Permissions");
        const cp = findCiProfile(gp, typed);
        if (!cp) return refuse("Invalid Argument");
        if (!createCi(v, gi, cp, layout.cciNamesId, run)) return refuse("Insufficient Resources");
      }
    }
  }
  return run.done();
}

function inUse(g: SimGpu, gi: number, ci: number | null): boolean {
  return g.processes.some((p) => p.gi === gi && (ci === null || p.ci === null || p.ci === ci));
}

export function destroyCis(
  views: readonly GpuView[],
  giIds: readonly number[] | null,
  ciIds: readonly number[] | null,
  allowed: boolean,
): OpResult {
  const run = new Run();
  let found = false;
  for (const v of views) {
    const gpu = v.gpu;
    const { gis, missing } = targetGis(v, giIds);
    if (missing !== undefined) return run.fail("Not Found", MSG.noGis("Not Found"));
    for (const gi of gis) {
      const ids = ciIds ?? [...gi.cis].sort((a, b) => a.id - b.id).map((c) => c.id);
      for (const ciId of ids) {
        found = true;
        const refuse = (err: NvmlError) =>
          run.fail(
            err,
            MSG.cannotDestroyCi(ciId, gpu.index, gi.id, err),
            MSG.failedDestroyCis(err),
          );
        if (!allowed) return refuse("Insufficient Permissions");
        const at = gi.cis.findIndex((c) => c.id === ciId);
        if (at < 0) return refuse("Not Found");
        if (inUse(gpu, gi.id, ciId)) return refuse("In use by another client");
        gi.cis.splice(at, 1);
        run.changed = true;
        run.lines.push(MSG.destroyedCi(ciId, gpu.index, gi.id));
      }
    }
  }
  if (!found) return run.fail("Not Found", MSG.noCis("Not Found"));
  return run.done();
}

export function destroyGis(
  views: readonly GpuView[],
  giIds: readonly number[] | null,
  allowed: boolean,
): OpResult {
  const run = new Run();
  let found = false;
  for (const v of views) {
    const gpu = v.gpu;
    const ids = giIds ?? listingOrder(v).map((g) => g.id);
    for (const id of ids) {
      found = true;
      const refuse = (err: NvmlError) =>
        run.fail(err, MSG.cannotDestroyGi(id, gpu.index, err), MSG.failedDestroyGis(err));
      if (!allowed) return refuse("Insufficient Permissions");
      const at = gpu.gis.findIndex((g) => g.id === id);
      const gi = gpu.gis[at];
      if (!gi) return refuse("Not Found");
      // A GI with CIs cannot go (IDX-19077137222), nor one a process runs in.
      if (gi.cis.length > 0 || inUse(gpu, id, null)) return refuse("In use by another client");
      gpu.gis.splice(at, 1);
      run.changed = true;
      run.lines.push(MSG.destroyedGi(id, gpu.index));
    }
  }
  if (!found) return run.fail("Not Found", MSG.noGis("Not Found"));
  return run.done();
}
