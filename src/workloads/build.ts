// Putting the built-in workloads (workloads/*.cu) on a node: pure builders of the shell script
// that compiles them there with the node's own nvcc, and the reader of what that script printed.
// The launcher runs `transport.exec({ shell: buildScript(...) })`; nothing here opens a
// connection. Compiling on the node, for its own GPUs, is deliberate: a binary from a newer CUDA
// than the node's driver supports does not start, and the node's arch is only known there.

import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SlicecheckError } from "../errors.js";
import { BUILD_TAG, NEED_BUILD, renderBuildScript } from "./build-script.js";

export { BUILD_TAG } from "./build-script.js";

export const WORKLOADS = [
  "stress",
  "memhog",
  "crasher",
  // issue 22: one rank per device in separate processes (the cross-instance collective).
  "allreduce",
  // issue 22: a training step (GEMMs + an NCCL all_reduce), the training suite's.
  "train-step",
  // serve: issue 22 item 3 (latency)
  "serve",
] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

/** Pre-installed binaries with these names on the node's PATH win over building. */
export const WORKLOAD_COMMANDS: Readonly<Record<WorkloadName, string>> = {
  stress: "slicecheck-stress",
  memhog: "slicecheck-memhog",
  crasher: "slicecheck-crasher",
  allreduce: "slicecheck-allreduce",
  "train-step": "slicecheck-train-step",
  serve: "slicecheck-serve",
};

/** nvcc flags before the -gencode ones. Part of the cache key: changing them rebuilds. */
export const NVCC_FLAGS: readonly string[] = ["-O3"];

export interface WorkloadSources {
  /** File name (stress.cu, slicecheck.cuh, ...) -> text, sorted by name. */
  files: Readonly<Record<string, string>>;
  /** sha256 hex of the files (names and contents) and NVCC_FLAGS: the cache key's source part. */
  hash: string;
}

export interface BuildScriptOptions {
  sources: WorkloadSources;
  /** SM architectures ("80", "90", "90a", "100"); omitted: the node's, from nvidia-smi. */
  archs?: readonly string[];
  /** nvcc to use (e.g. from the inventory); omitted: PATH, $CUDA_HOME, /usr/local/cuda... */
  nvcc?: string;
  /** Cache folder on the node; omitted: ${XDG_CACHE_HOME:-$HOME/.cache}/slicecheck/workloads. */
  cacheRoot?: string;
  /** Only what the script does before it needs the sources, without them (about 5 KB of the
   * 96 KB): the same answer where the binaries are on PATH or in the cache, an error where the
   * script would fail before building, else `need-build` (needsBuild). */
  probe?: boolean;
}

export type WorkloadOrigin = "path" | "cache" | "built";

export interface BuiltWorkloads {
  binaries: Record<WorkloadName, string>;
  origins: Record<WorkloadName, WorkloadOrigin>;
  /** Present unless every binary came from PATH. */
  cache: { key: string; archs: string[]; release: string; dir: string } | null;
}

const FILE_NAME = /^[a-z][a-z0-9_-]*\.cuh?$/;
const ARCH = /^[1-9][0-9]{1,2}[af]?$/;
const KEY_CHARS = /^[0-9a-f]{64}$/;
/** Under MAX_ARG_STRLEN (128 KiB): the script travels as one `sh -c` argument. */
export const MAX_SCRIPT_BYTES = 100_000;

/** The workloads/ folder of this package, from src/workloads or dist/workloads alike. */
export function defaultWorkloadsDir(): string {
  return fileURLToPath(new URL("../../workloads/", import.meta.url));
}

function hashFiles(files: Readonly<Record<string, string>>): string {
  const h = createHash("sha256");
  h.update(`flags\0${NVCC_FLAGS.join(" ")}\0`);
  for (const name of Object.keys(files).sort()) {
    const body = Buffer.from(files[name] ?? "", "utf8");
    // Length-prefixed, so that no split of the same bytes into files gives the same hash.
    h.update(`${name}\0${body.length}\0`);
    h.update(body);
  }
  return h.digest("hex");
}

/** Reads workloads/*.cu and *.cuh. A file whose name could not travel safely is refused. */
export function workloadSources(dir = defaultWorkloadsDir()): WorkloadSources {
  const files: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) {
    if (!/\.cuh?$/.test(name)) continue;
    if (!FILE_NAME.test(name))
      throw new SlicecheckError(
        "INTERNAL",
        `workloads: ${name}: file names must match ${FILE_NAME}; rename it`,
        { dir, name },
      );
    files[name] = readFileSync(join(dir, name), "utf8");
  }
  for (const w of WORKLOADS)
    if (files[`${w}.cu`] === undefined)
      throw new SlicecheckError("INTERNAL", `workloads: ${w}.cu is missing from ${dir}`, { dir });
  return { files, hash: hashFiles(files) };
}

/** `nvidia-smi --query-gpu=compute_cap --format=csv,noheader` -> ["90"], one per distinct arch. */
export function archsFromComputeCap(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split("\n")) {
    const m = /^\s*(\d+)\.(\d)\s*$/.exec(raw);
    if (!m) continue;
    const arch = `${m[1]}${m[2]}`;
    if (!out.includes(arch)) out.push(arch);
  }
  return out;
}

function usage(message: string, context: Record<string, unknown>): SlicecheckError {
  return new SlicecheckError("USAGE", message, context);
}

/** The POSIX sh script that prints where the workload binaries are on the node. */
export function buildScript(o: BuildScriptOptions): string {
  const { files, hash } = o.sources;
  if (!KEY_CHARS.test(hash)) throw usage("workloads: sources hash must be sha256 hex", { hash });
  for (const name of Object.keys(files))
    if (!FILE_NAME.test(name))
      throw usage(`workloads: ${JSON.stringify(name)} is not a workload file name`, { name });
  for (const w of WORKLOADS)
    if (files[`${w}.cu`] === undefined) throw usage(`workloads: ${w}.cu is missing`, {});
  const archs = o.archs ?? [];
  for (const a of archs)
    if (!ARCH.test(a))
      throw usage(`workloads: arch ${JSON.stringify(a)}: expected e.g. 80, 90, 90a, 100`, {
        arch: a,
      });
  for (const [what, value] of [
    ["nvcc", o.nvcc],
    ["cacheRoot", o.cacheRoot],
  ] as const)
    if (value !== undefined && (value === "" || /[\n\r\0]/.test(value)))
      throw usage(`workloads: ${what} must be a non-empty single-line path`, { [what]: value });

  const script = renderBuildScript({
    probe: o.probe === true,
    workloads: WORKLOADS,
    files: Object.keys(files)
      .sort()
      .map((name) => {
        const body = Buffer.from(files[name] ?? "", "utf8");
        return {
          name,
          base64: body.toString("base64"),
          sha256: createHash("sha256").update(body).digest("hex"),
        };
      }),
    key: hash,
    archs,
    nvcc: o.nvcc,
    cacheRoot: o.cacheRoot,
    flags: NVCC_FLAGS,
  });
  if (Buffer.byteLength(script) > MAX_SCRIPT_BYTES)
    throw new SlicecheckError(
      "INTERNAL",
      `workloads: the build script is ${Buffer.byteLength(script)} bytes, over ${MAX_SCRIPT_BYTES}; ship the sources on stdin instead`,
      {},
    );
  return script;
}

const INSTALL_HINT = `install the CUDA toolkit on the node (NVIDIA's cuda-toolkit-<major>-<minor> package, or the distribution's nvidia-cuda-toolkit), give its nvcc path, or put ${Object.values(WORKLOAD_COMMANDS).join(", ")} on its PATH`;

export interface ParseBuildOptions {
  /** Node name for messages. */
  node?: string;
  /** The script's stderr, kept in the error context (nvcc's full output goes there). */
  stderr?: string;
}

/** Whether a probe's stdout (BuildScriptOptions.probe) says the full script must build; an
 * error it reported is parseBuildOutput's to throw. */
export function needsBuild(stdout: string): boolean {
  return stdout.split("\n").includes(`${BUILD_TAG} ${NEED_BUILD}`);
}

/** Reads the build script's stdout: the binaries' paths, or the error it reported. */
export function parseBuildOutput(stdout: string, opts: ParseBuildOptions = {}): BuiltWorkloads {
  const node = opts.node ?? "node";
  const binaries: Partial<Record<WorkloadName, string>> = {};
  const origins: Partial<Record<WorkloadName, WorkloadOrigin>> = {};
  let cache: BuiltWorkloads["cache"] = null;
  let ok = false;
  const log: string[] = [];
  const prefix = `${BUILD_TAG} `;
  for (const raw of stdout.split("\n")) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (!line.startsWith(prefix)) continue;
    const body = line.slice(prefix.length);
    const error = /^error=([a-z-]+) (.*)$/.exec(body);
    if (error) throw buildError(node, error[1]!, error[2]!, log, opts.stderr ?? "");
    const logLine = /^log=([a-z]+) (.*)$/.exec(body);
    const bin = /^bin=([a-z][a-z-]*) origin=(path|cache|built) path=(.+)$/.exec(body);
    const cached = /^cache key=(\S+) archs=(\S*) release=(\S+) dir=(.+)$/.exec(body);
    if (logLine) {
      log.push(`${logLine[1]}: ${logLine[2]}`);
    } else if (bin) {
      const name = WORKLOADS.find((w) => w === bin[1]);
      if (name === undefined) throw garbled(node, line);
      binaries[name] = bin[3]!;
      origins[name] = bin[2] as WorkloadOrigin;
    } else if (cached) {
      const [, key, archs, release, dir] = cached as unknown as string[];
      cache = { key: key!, archs: archs!.split(",").filter(Boolean), release: release!, dir: dir! };
    } else if (body === "ok") {
      ok = true;
    } else {
      throw garbled(node, line);
    }
  }
  const missing = WORKLOADS.filter((w) => binaries[w] === undefined);
  if (!ok || missing.length > 0)
    throw new SlicecheckError(
      "NODE_COMMAND",
      `${node}: the workload build script stopped before it finished (no '${BUILD_TAG} ok'${missing.length > 0 ? `, no path for ${missing.join(", ")}` : ""}); see its stderr`,
      { node, stderr: opts.stderr ?? "" },
    );
  return {
    binaries: binaries as Record<WorkloadName, string>,
    origins: origins as Record<WorkloadName, WorkloadOrigin>,
    cache,
  };
}

function buildError(
  node: string,
  code: string,
  message: string,
  log: readonly string[],
  stderr: string,
): SlicecheckError {
  const context = { node, code, log: [...log], stderr };
  if (code === "tool-missing")
    return new SlicecheckError("TOOL_MISSING", `${node}: ${message}; ${INSTALL_HINT}`, context);
  const detail = log.length > 0 ? `\n${log.join("\n")}` : "";
  return new SlicecheckError(
    "NODE_COMMAND",
    `${node}: building the workloads failed (${code}): ${message}${detail}`,
    context,
  );
}

function garbled(node: string, line: string): SlicecheckError {
  return new SlicecheckError(
    "NODE_COMMAND",
    `${node}: unexpected line from the workload build script: ${JSON.stringify(line.slice(0, 160))}`,
    { node, line },
  );
}
