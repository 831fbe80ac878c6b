import { dirname, join } from "node:path";
import { main } from "../../src/cli/main.js";

/** The commands that keep local journal copies (default `reports/journal` under the cwd). */
const JOURNALED = new Set(["apply", "restore", "run"]);

/**
 * Each test cluster's journal copies beside its inventory, unless the test names a folder: the
 * default is the repository's reports/journal, which every test file running at the same time
 * would share, and every simulated cluster has a node called sim01 (one file's restore read
 * and removed another file's journal under load).
 */
function withOwnJournal(args: string[]): string[] {
  if (!JOURNALED.has(args[0] ?? "") || args.some((a) => a.startsWith("--journal-dir"))) return args;
  const i = args.findIndex((a) => a === "-i" || a === "--inventory");
  const inv = i >= 0 ? args[i + 1] : undefined;
  return inv ? [...args, "--journal-dir", join(dirname(inv), "journal")] : args;
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** The in-process CLI calls not yet returned, with what each has printed to stderr so far:
 * a test that times out waiting on one loses its output with it (inFlightReport). */
const inFlight = new Map<
  number,
  { args: string[]; since: number; stderr: () => string; shown?: boolean }
>();
let calls = 0;

/** What every CLI call still running has printed to stderr (its last `lines` lines), for a
 * failed test's hook to show; each call is shown once unless `again`. Empty when none runs. */
export function inFlightReport(lines = 30, o: { again?: boolean } = {}): string {
  const out = [...inFlight.values()]
    .filter((c) => o.again || !c.shown)
    .map((c) => {
      c.shown = true;
      const tail = c.stderr().trimEnd().split("\n").slice(-lines).join("\n      ");
      const s = ((Date.now() - c.since) / 1000).toFixed(0);
      return `    still running after ${s} s: slicecheck ${c.args.join(" ")}\n      ${tail}`;
    });
  return out.join("\n");
}

/** Waits up to `ms` for the CLI calls still running to return (a timed-out test's call goes on
 * in the background, and the next test would meet what it does); true if none is left. */
export async function quietCli(ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (inFlight.size && Date.now() < end) await new Promise((r) => setTimeout(r, 250));
  return inFlight.size === 0;
}

/** A failed assertion's message for a run: its stderr, and when its stdout is run's --json
 * document, each check that did not pass (a run with --json says which check failed only
 * there: an unexpected exit code alone cannot tell a real failure from a disturbed check). */
export function explain(r: CliRun): string {
  let checks: { node?: string; suite?: string; title?: string; status?: string }[] = [];
  try {
    checks = (JSON.parse(r.stdout) as { checks?: typeof checks }).checks ?? [];
  } catch {
    /* not a --json document */
  }
  const odd = checks.filter((c) => c.status !== "passed").map((c) => JSON.stringify(c));
  return odd.length ? `${r.stderr}\nchecks that did not pass:\n${odd.join("\n")}` : r.stderr;
}

/** Runs the CLI in-process, capturing what it prints. */
export async function cli(...args: string[]): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const id = ++calls;
  inFlight.set(id, { args, since: Date.now(), stderr: () => stderr });
  try {
    const code = await main(["node", "slicecheck", ...withOwnJournal(args)], {
      out: (l) => {
        stdout += `${l}\n`;
      },
      err: (l) => {
        stderr += `${l}\n`;
      },
    });
    return { code, stdout, stderr };
  } finally {
    inFlight.delete(id);
  }
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
