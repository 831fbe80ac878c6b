// Types of scripts/check-layers.mjs, for the test that plants violations.
export const LAYERS: readonly string[];
export const SIM_ALLOWED: ReadonlySet<string>;
export function layerOf(rel: string): string | undefined;
export function sourceFiles(dir: string, sub?: string): string[];
export function importsOf(text: string): { spec: string; line: number }[];
export interface ImportEdge {
  spec: string;
  line: number;
  to: string;
}
export function importGraph(files: Iterable<[string, string]>): Map<string, ImportEdge[]>;
export function layerViolations(
  graph: Map<string, ImportEdge[]>,
): { rule: string; where: string; spec: string; why: string }[];
export function importCycles(
  graph: Map<string, ImportEdge[]>,
): { files: string[]; path: (ImportEdge & { from: string })[] }[];
export function checkLayers(srcDir: string): string[];
