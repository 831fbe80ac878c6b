import { main } from "../../src/cli/main.js";

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in-process, capturing what it prints. */
export async function cli(...args: string[]): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const code = await main(["node", "slicecheck", ...args], {
    out: (l) => {
      stdout += `${l}\n`;
    },
    err: (l) => {
      stderr += `${l}\n`;
    },
  });
  return { code, stdout, stderr };
}
