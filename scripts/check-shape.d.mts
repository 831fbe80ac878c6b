// Types of scripts/check-shape.mjs, for the test that plants offenders.
export const MAX_FILE_LINES: number;
export const MAX_FUNCTION_LINES: number;
export const SHAPE_DIRS: readonly string[];
export const GRANDFATHERED: ReadonlyMap<string, number>;
export function lineCount(text: string): number;
export function longFunctions(
  text: string,
  fileName?: string,
  max?: number,
): { line: number; name: string; lines: number }[];
export function checkShape(
  dirs: readonly string[],
  base?: string,
  allowed?: ReadonlyMap<string, number>,
): string[];
