// Types of scripts/test.mjs, for the test that checks its split.
export const E2E: RegExp;
export function testFiles(dir?: string): string[];
export function groups(files?: string[]): { unit: string[]; e2e: string[] };
export function bothGroups(
  g: { unit: string[]; e2e: string[] },
  args: string[],
  parallel: string[],
  jobs: number,
  quiet?: boolean,
): Promise<number>;
