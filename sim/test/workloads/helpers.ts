// A simulated node's state in a temporary folder, set up with the simulated nvidia-smi, and the
// simulated workloads run as real child processes against it: through tsx, from src/, or, after
// viaResident, stress, memhog and crasher through the wrapper whose program the cluster's
// resident simulator runs (sim/src/resident/workloads.ts).

import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nvidiaSmiMain } from "../../src/nvsmi/cli.js";
import { initState, readState, type SimState } from "../../src/nvsmi/state.js";
import { PORT_FILE } from "../../src/resident/files.js";
import { ensureResident, stopResident } from "../../src/resident/lifecycle.js";
import { RESIDENT_PROGRAM_TOOLS } from "../../src/resident/tools.js";
import { workloadWrapper } from "../../src/resident/wrapper.js";
import { REPO } from "../nvsmi/helpers.js";

const dirs: string[] = [];
const children: ChildProcess[] = [];

/** Kills what a test left running and removes the state folders. */
export function cleanup(): void {
  for (const c of children.splice(0))
    if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

export async function smi(stateDir: string, args: string): Promise<string> {
  let out = "";
  const code = await nvidiaSmiMain(args.split(/\s+/), {
    stateDir,
    stdout: (s) => {
      out += s;
    },
    stderr: (s) => {
      out += s;
    },
    uid: 0,
  });
  if (code !== 0) throw new Error(`nvidia-smi ${args} failed (${code}): ${out}`);
  return out;
}

/** A node state; `migCommands` run in order (e.g. `-i 0 -mig 1`, `mig -i 0 -cgi 19,9 -C`). */
export async function node(
  product: string,
  gpus: number,
  ...migCommands: string[]
): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "slicecheck-wl-"));
  dirs.push(dir);
  initState(dir, { node: "sim01", product, gpus, driver: "580.65.06" });
  for (const c of migCommands) await smi(dir, c);
  return dir;
}

/** MIG UUID of the CI of the GI with this profile name on GPU `gpu` (`1g.10gb`). */
export function migUuid(stateDir: string, gpu: number, profileId: number): string {
  const g = readState(stateDir).gpus[gpu];
  const gi = g?.gis.find((x) => x.profileId === profileId);
  const ci = gi?.cis[0];
  if (!ci) throw new Error(`no GI of profile ${profileId} on GPU ${gpu}`);
  return ci.uuid;
}

export function state(stateDir: string): SimState {
  return readState(stateDir);
}

export interface Run {
  child: ChildProcess;
  out: string;
  err: string;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const ENTRY: Record<string, string> = {
  stress: "sim/src/workloads/stress.ts",
  memhog: "sim/src/workloads/memhog.ts",
  crasher: "sim/src/workloads/crasher.ts",
  gpu_burn: "sim/src/workloads/gpu-burn.ts",
  all_reduce_perf: "sim/src/workloads/nccl.ts",
  "mps-control": "sim/src/workloads/mps-control.ts",
};

/** Exit code of a wrapper whose own-process path is cut off: the resident did not run it. */
export const NOT_RUN_BY_RESIDENT = 99;

let residentBin: string | null = null;

/** From now on the programs the resident simulator runs start through their wrappers, with no
 * own-process fallback (a run it did not serve exits NOT_RUN_BY_RESIDENT). Returns the undo. */
export async function viaResident(): Promise<() => Promise<void>> {
  const dir = mkdtempSync(join(tmpdir(), "slicecheck-wl-resident-"));
  writeFileSync(join(dir, "cluster.json"), '{"version":1,"nodes":[]}\n');
  const bin = join(dir, "bin");
  mkdirSync(bin);
  for (const tool of RESIDENT_PROGRAM_TOOLS) {
    const text = workloadWrapper(tool, `exit ${NOT_RUN_BY_RESIDENT}`, join(dir, PORT_FILE));
    writeFileSync(join(bin, tool), text);
    chmodSync(join(bin, tool), 0o755);
  }
  await ensureResident(dir);
  residentBin = bin;
  return async () => {
    residentBin = null;
    await stopResident(dir);
    rmSync(dir, { recursive: true, force: true });
  };
}

/** Starts a simulated tool; `visible` is CUDA_VISIBLE_DEVICES (undefined: unset). */
export function start(
  stateDir: string,
  tool: keyof typeof ENTRY,
  args: string[],
  visible?: string,
  stdin?: string,
): Run {
  const env: NodeJS.ProcessEnv = { ...process.env, SLICECHECK_SIM_STATE: stateDir };
  delete env.CUDA_VISIBLE_DEVICES;
  if (visible !== undefined) env.CUDA_VISIBLE_DEVICES = visible;
  const wrapper = residentBin && RESIDENT_PROGRAM_TOOLS.has(`slicecheck-${tool}`);
  const [file, argv] = wrapper
    ? [join(residentBin!, `slicecheck-${tool}`), args]
    : [process.execPath, ["--import", "tsx", ENTRY[tool]!, ...args]];
  const child = spawn(file, argv, {
    cwd: REPO,
    env,
    stdio: [stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
  children.push(child);
  if (stdin !== undefined) child.stdin?.end(stdin);
  const run: Run = {
    child,
    out: "",
    err: "",
    done: new Promise((resolve) => child.on("close", (code, signal) => resolve({ code, signal }))),
  };
  child.stdout?.on("data", (d: Buffer) => {
    run.out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    run.err += d.toString();
  });
  return run;
}

/** Runs a tool to its end. */
export async function run(
  stateDir: string,
  tool: keyof typeof ENTRY,
  args: string[],
  visible?: string,
  stdin?: string,
) {
  const r = start(stateDir, tool, args, visible, stdin);
  const end = await r.done;
  return { ...end, out: r.out, err: r.err, pid: r.child.pid };
}

export async function until(cond: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}

/** Pids in `nvidia-smi --query-compute-apps=pid`. */
export async function computePids(stateDir: string): Promise<number[]> {
  const out = await smi(stateDir, "--query-compute-apps=pid --format=csv,noheader");
  return out
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map(Number);
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}
