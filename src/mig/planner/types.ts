// Types of the MIG placement planner. The planner is pure: it takes a catalogue of what one GPU
// offers at one driver and a request, and returns data. The catalogue type is deliberately
// smaller than the built-in `Catalog`: everything in it can be read off a live node
// (`nvidia-smi mig -lgip` gives IDs, names, totals and engines, `-lgipp` the starts and sizes),
// so a built-in catalogue and a live one are planned the same way.

import type { Argv } from "../../nvsmi/index.js";

export interface PlannerCiProfile {
  id: number;
  /** `1c.3g.40gb`; the whole-GI profile carries the GI's name without `+me`. */
  name: string;
  computeSlices: number;
  /** Compute-slice starts inside the GI. */
  starts: readonly number[];
  /** Most CIs of this profile one GI holds (`-lcip` Total). */
  maxInstances: number;
  isDefault: boolean;
}

export interface PlannerProfile {
  id: number;
  /** As nvidia-smi prints it after `MIG ` (`1g.10gb+me`). */
  name: string;
  computeSlices: number;
  /** Memory slices one instance occupies (the `:N` of `-lgipp`). */
  memorySlices: number;
  /** Allowed start memory slices (the `{…}` of `-lgipp`). */
  starts: readonly number[];
  /** The Total of `Instances Free/Total` in `-lgip`. */
  maxInstances: number;
  /** Optical-flow accelerators the instance takes; see `PlannerCatalog.ofaTotal`. */
  ofa: number;
  ciProfiles: readonly PlannerCiProfile[];
}

export interface PlannerCatalog {
  /** Product key (`H100-80GB`) or, for a live node, what the node calls the GPU. */
  gpu: string;
  driver: string;
  /** Memory slices of the GPU (8; 4 on A30). */
  memorySlices: number;
  /** In the order the driver lists them. */
  profiles: readonly PlannerProfile[];
  /** Profile ID pairs that cannot coexist at this driver (4g + 3g before R510). */
  forbiddenPairs: readonly (readonly [number, number])[];
  /**
   * Optical-flow accelerators of the whole GPU (the OFA of the full-GPU profile). Every `+me`
   * profile takes the one OFA, which is why the driver offers one such instance and never a
   * `1g.6gb+me` next to a `2g.12gb+me` (derived from the `-lgip` engine columns).
   */
  ofaTotal: number;
  /** Whether `-cgi ID:start` is accepted (see `supportsPlacementSyntax`). */
  placementSyntax: boolean;
  /** Profiles this GPU offers only at later catalogued drivers: name → first such driver. */
  laterProfiles?: Readonly<Record<string, string>>;
}

/** One `mig-devices` item: `3g.40gb: 2` (whole-GI CIs) or `1c.3g.40gb: 3` (CI split). */
export interface DeviceRequest {
  /** The key as written in the layout. */
  key: string;
  /** The GPU-instance profile name the key names. */
  gi: string;
  /** Compute slices of each CI; null when the CI covers the whole GI. */
  ciSlices: number | null;
  count: number;
}

export interface PlanRequest {
  migEnabled: boolean;
  devices: readonly DeviceRequest[];
  /** GI profile name → start memory slices for the first GIs of that profile. */
  placements: Readonly<Record<string, readonly number[]>>;
}

export interface PlannedCi {
  profile: string;
  profileId: number;
  start: number;
  size: number;
}

export interface PlannedGi {
  profile: string;
  profileId: number;
  start: number;
  size: number;
  /** "command": the start is given to `-cgi`; "driver": the driver chooses (before R525). */
  placedBy: "command" | "driver";
  computeInstances: PlannedCi[];
}

/** One nvidia-smi call of a plan, with what `apply` needs to fill in GI IDs. */
export type PlanStep =
  | {
      kind: "create-gi";
      gpu: number;
      profileId: number;
      start: number | null;
      withDefaultCi: boolean;
      /** Where the GI is planned, also when the driver picks it. */
      placement: { start: number; size: number };
    }
  | {
      kind: "create-ci";
      gpu: number;
      ciProfileIds: number[];
      /** The GI the CIs go into, by its planned placement (its ID is known only after -cgi). */
      gi: { profileId: number; start: number; size: number };
    };

export interface Alternative {
  /** A `mig-devices` map that fits. */
  migDevices: Record<string, number>;
  /** Instances dropped, added or swapped for another profile (a swap counts once). */
  distance: number;
  /** In words: `replace 4g.40gb with 3g.40gb`, `drop 1 × 2g.20gb`. */
  change: string;
}

export interface PlanResult {
  fits: boolean;
  gpu: string;
  driver: string;
  gpuIndex: number;
  migEnabled: boolean;
  /** Placed GPU instances, ordered by start; empty when it does not fit. */
  instances: PlannedGi[];
  steps: PlanStep[];
  commands: Argv[];
  reasons: string[];
  alternatives: Alternative[];
  /** Things a user should know even when it fits (driver-chosen placements). */
  notes: string[];
}

/** A distinct multiset of GI profiles that fits: profile name → count. */
export type Combination = Record<string, number>;
