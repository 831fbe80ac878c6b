// The product's one door to the simulator package (sim/). Only the `slicecheck sim …` commands
// go through it, at run time, so no other command loads the simulator and nothing else in src/
// names it (test/structure/sim-apart.test.ts checks). The product's build does not compile the
// simulator either: what the CLI calls is declared here (SimApi), and the simulator's entry
// (sim/src/index.ts) is type-checked against it.
import { extname } from "node:path";
import { fileURLToPath } from "node:url";

export interface SimNodeStatus {
  name: string;
  host: string;
  port: number;
  gpu: string;
  gpus: number;
  driver: string;
  pid: number | null;
  running: boolean;
}

export interface SimSpecArgs {
  nodes?: number;
  gpu?: string;
  gpusPerNode?: number;
  driver?: string;
  spec?: string;
  /** Seconds each login shell sleeps first (SimNodeSpec.loginDelayS). */
  loginDelay?: number;
}

export interface SimFaultOptions {
  gpu?: number;
  name?: string;
  state?: string;
  /** serve-slow: the GPU instance (GI id). */
  instance?: number;
}

/** Per MIG profile, per metric: the factor a planted driver regression puts on it. */
export type Regressions = Record<string, Record<string, number>>;

/** What `slicecheck sim …` calls (method signatures: the simulator may take narrower input). */
export interface SimApi {
  DEFAULT_SIM_INVENTORY: string;
  buildSimSpec(a: SimSpecArgs): readonly unknown[];
  simUp(
    inventory: string,
    spec: readonly unknown[],
    o: { slurm?: boolean },
  ): Promise<SimNodeStatus[]>;
  simStatus(inventory: string): SimNodeStatus[];
  simDown(inventory: string): Promise<number>;
  simNodeRecord(inventory: string, node: string): { dir: string };
  clusterDirFor(inventory: string): string;
  FAULT_KINDS: Readonly<Record<string, { usage: string }>>;
  plantFault(
    stateDir: string,
    kind: string,
    o: SimFaultOptions,
  ): Promise<{ record: unknown; detail: string }>;
  clearFaults(stateDir: string): Promise<unknown[]>;
  GRES_FAULTS: Readonly<Record<string, string>>;
  plantGresFault(clusterDir: string, node: string, kind: string): Promise<string>;
  clearGresFaults(clusterDir: string, node: string): boolean;
  setSlurmState(clusterDir: string, node: string, state: string): string | null;
  upgradeSimDriver(
    inventory: string,
    node: string,
    to: string,
    regressions: Regressions,
  ): Promise<string>;
}

/**
 * Run from source (tsx: this file is .ts) the simulator is sim/src; compiled, `npm run build`
 * puts it in dist/sim beside dist/cli. A relative path, not the workspace's package name, so
 * that it needs no link in node_modules.
 */
export async function loadSim(): Promise<SimApi> {
  const here = fileURLToPath(import.meta.url);
  const entry = extname(here) === ".ts" ? "../../sim/src/index.ts" : "../sim/index.js";
  const mod = (await import(new URL(entry, import.meta.url).href)) as { SIM_API: SimApi };
  return mod.SIM_API;
}
