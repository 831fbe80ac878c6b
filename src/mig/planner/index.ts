// The MIG placement planner (pure): fit a layout on one GPU, explain a misfit, list every
// combination of GPU-instance profiles a GPU offers at one driver.

export { closestFits } from "./alternatives.js";
export {
  builtinCatalog,
  forbiddenPairsFor,
  fromCatalog,
  fromListings,
  type LiveListings,
  PLACEMENT_SYNTAX_SINCE,
  supportsPlacementSyntax,
} from "./catalog.js";
export { giPlaceholder, stepArgv } from "./commands.js";
export { countsAllowed, enumerateCombinations, fittingCounts } from "./enumerate.js";
export { findProfile } from "./explain.js";
export { planRequest } from "./plan.js";
export { combinationText, sliceMap } from "./render.js";
export type * from "./types.js";
