// Types of scripts/setup.mjs for the tests that import it.
/** The installed dependencies with build scripts of their own, by name (from `dir`'s
 * node_modules/.package-lock.json; `dir` defaults to the repository). */
export function nativePackages(dir?: string): string[];
export function nativeEnv(name: string, env?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
export const SQLITE_OPT: string;
export function sqliteOptLevel(dir?: string): string | null;
