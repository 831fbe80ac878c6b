import { join } from "node:path";
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

export interface RunArgs {
  nodes?: string;
  suites?: string;
  /** `--layout FILE -c NAME` */
  layout?: [file: string, config: string];
  duration?: number;
  /** Default: `<dir>/<name>.db`. */
  db?: string;
  out?: string;
  journal?: string;
  json?: boolean;
  extra?: string[];
}

/** The arguments of a `slicecheck run` against a test cluster, its results in `<dir>/<name>`. */
export function runArgs(c: { inventoryPath: string; dir: string }, name: string, o: RunArgs = {}) {
  return [
    "run",
    "-i",
    c.inventoryPath,
    ...(o.nodes ? ["--nodes", o.nodes] : []),
    ...(o.suites ? ["--suites", o.suites] : []),
    ...(o.layout ? ["--layout", o.layout[0], "-c", o.layout[1]] : []),
    "--duration",
    String(o.duration ?? 2),
    "--out",
    o.out ?? join(c.dir, name),
    "--db",
    o.db ?? join(c.dir, `${name}.db`),
    ...(o.journal ? ["--journal-dir", o.journal] : []),
    ...(o.json ? ["--json"] : []),
    ...(o.extra ?? []),
  ];
}
