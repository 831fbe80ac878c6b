// A layout file is a mig-parted config file (`version: v1`, `mig-configs:`), read exactly as
// mig-parted reads it so that GPU Operator users' files work unchanged, plus one optional
// slicecheck extension per entry: `placements`, explicit start slices per GI profile.

export interface LayoutDevice {
  /** The `mig-devices` key as written (`1c.3g.40gb`). */
  key: string;
  /** The GPU-instance profile the key names (`3g.40gb`). */
  gi: string;
  /** Compute slices of each CI when the key names a split (`1c.` → 1); null for whole GIs. */
  ciSlices: number | null;
  count: number;
  line: number;
}

export interface LayoutEntry {
  /** 0-based position in the config's list. */
  index: number;
  line: number;
  /** Normalised PCI device ids (`0x233010DE`), null when the entry has no filter. */
  deviceFilter: string[] | null;
  devices: "all" | number[];
  migEnabled: boolean;
  migDevices: LayoutDevice[];
  /** GI profile name → start memory slices (slicecheck extension). */
  placements: Record<string, number[]>;
}

export interface LayoutConfig {
  name: string;
  line: number;
  entries: LayoutEntry[];
}

export interface LayoutFile {
  file: string;
  /** In file order. */
  configs: LayoutConfig[];
}
