// `allure generate` (allure-commandline 2, a Java program) with history carried across runs:
// the previous report's history/ goes into the results before generating (Allure 2 reads it
// from there), and the new history is kept beside the report for the next run.
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { SlicecheckError } from "../errors.js";

export function allureBin(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve("allure-commandline/package.json")), "dist", "bin", "allure");
}

/** How long `allure generate` may take (a JVM on a large run's results: minutes, not hours). */
export const ALLURE_TIMEOUT_MS = 10 * 60_000;

function javaPresent(): boolean {
  // A java that does not answer `-version` in 30 s is no java to generate with.
  const r = spawnSync("java", ["-version"], { stdio: "ignore", timeout: 30_000 });
  return r.status === 0;
}

/** Addresses of analytics a report must never call (a secured site opens it offline). */
export const ANALYTICS = /googletagmanager\.com|google-analytics\.com|\bgtag\(/;

/** allure-commandline 2.x adds Google Analytics to index.html (and pings it while generating)
 * unless ALLURE_NO_ANALYTICS is "true" (read with Boolean.parseBoolean: "1" does not work). */
export const NO_ANALYTICS_ENV = { ALLURE_NO_ANALYTICS: "true" } as const;

/**
 * JVM options for a short-lived `allure generate`: the client compiler only, and the serial
 * collector. The JVM otherwise spends its first seconds compiling with C2 and running GC threads
 * on every core, beside the run's own work. Measured on 2 cores (allure 2.46, Java 17): 75
 * results 2.2 s of CPU against 3.3 s; 22 000 results 9.2 s wall, 11.2 s of CPU and 0.33 GB
 * against 11.1 s, 19.2 s and 1.1 GB. A user's own JAVA_OPTS come after these, and win.
 */
export const QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC";

/** What `allure generate` runs with, beside `base` (the controller's environment). */
export function allureEnv(base: NodeJS.ProcessEnv): Record<string, string> {
  return { ...NO_ANALYTICS_ENV, JAVA_OPTS: `${QUICK_JVM} ${base.JAVA_OPTS ?? ""}`.trim() };
}

/** Removes any analytics <script> left in the report's HTML files, whatever the Allure version
 * did with the switch; returns the files changed. */
export function stripAnalytics(dir: string): string[] {
  const changed: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".html")) {
        const text = readFileSync(p, "utf8");
        if (!ANALYTICS.test(text)) continue;
        const clean = text.replace(/<script\b[^>]*>[^<]*<\/script>\s*/g, (tag) =>
          ANALYTICS.test(tag) || /dataLayer/.test(tag) ? "" : tag,
        );
        writeFileSync(p, clean);
        changed.push(p);
      }
    }
  };
  walk(dir);
  return changed;
}

/** Runs a report tool to its end, but not past `timeoutMs`: killed (SIGKILL) then, and said so. */
export function runBounded(
  bin: string,
  args: readonly string[],
  timeoutMs: number,
  env: Record<string, string> = {},
): void {
  const r = spawnSync(bin, args, {
    encoding: "utf8",
    timeout: timeoutMs,
    killSignal: "SIGKILL",
    env: { ...process.env, ...env },
  });
  const what = `${bin.split("/").pop()} ${args[0] ?? ""}`.trim();
  if ((r.error as NodeJS.ErrnoException | undefined)?.code === "ETIMEDOUT")
    throw new SlicecheckError(
      "REPORT",
      `${what} did not finish within ${timeoutMs / 1000} s and was killed; its output so far: ${(r.stderr || r.stdout || "").trim().slice(-400)}`,
      { timeoutMs },
    );
  if (r.status !== 0)
    throw new SlicecheckError(
      "REPORT",
      `${what} exited ${r.status ?? r.signal}: ${(r.stderr || r.stdout || r.error?.message || "").trim().slice(-800)}`,
    );
}

function generate(results: string, out: string, singleFile: boolean, name: string): void {
  const args = ["generate", results, "-o", out, "--clean", "--name", name];
  if (singleFile) args.push("--single-file");
  runBounded(allureBin(), args, ALLURE_TIMEOUT_MS, allureEnv(process.env));
  stripAnalytics(out);
}

export interface GenerateOptions {
  results: string;
  out: string;
  /** Where the history is kept between reports (default: allure-history beside the report). */
  historyDir: string;
  singleFile: boolean;
  name: string;
}

/** Returns the report's entry page (the single-file one when asked for). */
export function generateReport(o: GenerateOptions): { index: string; singleFile: string | null } {
  if (!existsSync(o.results))
    throw new SlicecheckError(
      "USAGE",
      `no Allure results at ${o.results}; run \`slicecheck run\` first (without --no-allure)`,
    );
  if (!javaPresent())
    throw new SlicecheckError(
      "TOOL_MISSING",
      "allure generate needs java on PATH (or JAVA_HOME); install a JRE 17 (apt-get install -y openjdk-17-jre-headless)",
    );
  const prior = [o.historyDir, join(o.out, "history")].find((d) =>
    existsSync(join(d, "history.json")),
  );
  const into = join(o.results, "history");
  rmSync(into, { recursive: true, force: true });
  if (prior) cpSync(prior, into, { recursive: true });
  fillBuildOrder(o.results, into);
  // The multi-file report makes the history; the single-file one has none of its own.
  generate(o.results, o.out, false, o.name);
  rmSync(o.historyDir, { recursive: true, force: true });
  cpSync(join(o.out, "history"), o.historyDir, { recursive: true });
  let single: string | null = null;
  if (o.singleFile) {
    const dir = join(o.out, "single-file");
    generate(o.results, dir, true, o.name);
    single = join(dir, "index.html");
  }
  return { index: join(o.out, "index.html"), singleFile: single };
}

/** A local executor has no build number: number the reports by the trend so far. */
function fillBuildOrder(results: string, history: string): void {
  const file = join(results, "executor.json");
  if (!existsSync(file)) return;
  const ex = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  if (ex.type !== "local") return;
  ex.runName ??= ex.buildName;
  let n = 0;
  try {
    n = (JSON.parse(readFileSync(join(history, "history-trend.json"), "utf8")) as unknown[]).length;
  } catch {
    /* first report */
  }
  ex.buildOrder = n + 1;
  ex.buildName = `#${n + 1} ${ex.runName ?? ""}`.trim();
  writeFileSync(file, `${JSON.stringify(ex, null, 2)}\n`);
}

/** `allure open DIR`: serves the report on a local port and opens a browser, until it is
 * interrupted (Ctrl-C reaches it through the terminal's process group). Resolves its exit.
 * Deliberately unbounded: serving until the user stops it is what it is for. */
export function openReport(dir: string): Promise<number> {
  if (!existsSync(join(dir, "index.html")))
    return Promise.reject(
      new SlicecheckError("USAGE", `nothing to open: ${dir} holds no Allure report (index.html)`),
    );
  return new Promise((resolve, reject) => {
    const child = spawn(allureBin(), ["open", dir], { stdio: "inherit" });
    child.on("error", (e) =>
      reject(new SlicecheckError("REPORT", `allure open failed to start: ${e.message}`)),
    );
    child.on("exit", (code, signal) => resolve(code ?? (signal === "SIGINT" ? 0 : 1)));
  });
}
