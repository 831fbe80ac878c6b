// Which entries of a config apply to a GPU: mig-parted's rule is that an entry without a
// device-filter matches every GPU and one with a filter matches the GPUs whose PCI device id
// is in it (`MatchesDeviceFilter`); `devices` then narrows by GPU index.

import type { LayoutConfig, LayoutEntry } from "./types.js";

/** Whether `entry` applies to a GPU with PCI device id `pciId` (`0x233010DE`). */
export function entryMatchesDevice(entry: LayoutEntry, pciId: string): boolean {
  if (entry.deviceFilter === null) return true;
  // A filter with a subsystem id needs the subsystem to match too; an offline product has none.
  return entry.deviceFilter.some((f) => f.toUpperCase() === pciId.toUpperCase());
}

export function entriesFor(config: LayoutConfig, pciId: string): LayoutEntry[] {
  return config.entries.filter((e) => entryMatchesDevice(e, pciId));
}

/** Why no entry of `config` applies, naming the ids its entries are for. */
export function noEntryReason(config: LayoutConfig, gpu: string, pciId: string): string {
  const ids = [...new Set(config.entries.flatMap((e) => e.deviceFilter ?? []))];
  return `config '${config.name}' has no entry for ${gpu} (PCI device id ${pciId}): its entries apply only to ${ids.join(", ")}`;
}
