// What a run is asked to do (runHarness's options). Apart from run.ts because the run's reports
// (run-reports.ts) read them too, and run.ts calls those: one module each way would be a cycle.
import type { FaultName } from "../chaos/history.js";
import type { NodeSpec } from "../inventory/types.js";
import type { LayoutConfig } from "../mig/layout/index.js";
import type { CheckRecord } from "../verdicts/checks.js";
import type { SignoffPolicy } from "../verdicts/coverage.js";
import type { ProgressEvent } from "./progress.js";
import type { SuiteFile } from "./suites.js";

export interface HarnessRunOptions {
  runId: string;
  nodes: NodeSpec[];
  inventoryFile: string;
  suites: SuiteFile[];
  outDir: string;
  durationS: number;
  tolerance: number;
  faults: FaultName[];
  aggressors: number | null;
  /** Soft routes: tenant counts for the slowdown per tenant count (`--tenants`). */
  tenants: number[];
  layout: { file: string; config: LayoutConfig } | null;
  keep: boolean;
  allowReset: boolean;
  /** `--lease`: the node lease's length in seconds (default DEFAULT_LEASE_S). */
  leaseS?: number;
  /** `--drain`: Slurm nodes drained before anything is touched (slurm-drain.ts). */
  drain?: { timeoutS: number; reportToSlurm: boolean } | null;
  /** `--reservation R`: where the run's own Slurm jobs (the slurm suite's probes) go. */
  reservation?: string | null;
  journalDir: string;
  db: string;
  /** --db-timeout: the bound on every wait for the records database. */
  dbTimeoutMs?: number;
  label: string | null;
  argv: string[];
  grep?: string;
  bail?: boolean;
  list?: boolean;
  allure: boolean;
  concurrency: number;
  /** The sign-off policy the compliance page judges this run by (run.json `scope`). */
  signoffPolicy?: SignoffPolicy;
  /** Each node's planned steps and phase changes, for the terminal (src/harness/progress.ts). */
  events?(e: ProgressEvent): void;
  onCheck?(c: CheckRecord): void;
  /** Messages for the person running it (stderr). */
  err(line: string): void;
  /** After a second interrupt (tests replace process.exit). */
  exit?(code: number): void;
}
