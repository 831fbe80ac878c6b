// Types of scripts/bundle.mjs, for the tests of the compiled suites and the bundles.
export const CLI_BUNDLE: string;
export function bundleSimTools(root: string): Promise<number | null>;
export function bundleCli(root: string): Promise<number | null>;
export function compileSuites(root: string, from?: string, to?: string): Promise<number | null>;
export const SUITE_API: string;
/** The bundle's text with its comments' non-ASCII characters as `?`, where that is all it changes. */
export function asciiComments(esbuild: unknown, text: string): string;
