// Layout files: mig-parted config files (plus explicit placements), loaded with file:line
// messages, and the mig-parted rule for which entries apply to a GPU.

export { normaliseDeviceId, type ProfileKey, parseProfileKey } from "./keys.js";
export { loadLayout, parseLayout, selectConfig } from "./load.js";
export { entriesFor, entryMatchesDevice, noEntryReason } from "./match.js";
export type { LayoutConfig, LayoutDevice, LayoutEntry, LayoutFile } from "./types.js";
