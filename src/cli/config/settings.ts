// The settings a user can give once instead of at every command: in slicecheck.config.yaml, as a
// SLICECHECK_* environment variable, or as the command's flag (which always wins). One table, so
// the file's schema, the variables, `slicecheck config` and the README cannot drift apart.

import { DEFAULT_SUITES } from "../../util/suite-registry.js";

export type SettingKind = "path" | "string" | "list" | "duration" | "percent" | "int" | "bool";

export interface Setting {
  /** The key in slicecheck.config.yaml. */
  key: string;
  /** The commander attribute of the flag it stands for (`journalDir` for --journal-dir). */
  attr: string;
  env: string;
  flag: string;
  kind: SettingKind;
  /** What applies when nothing gives it, as `slicecheck config` prints it. */
  defaultText: string;
  /** The commands it applies to; absent: every command that has the flag. */
  commands?: readonly string[];
  help: string;
}

export const SETTINGS: readonly Setting[] = [
  {
    key: "inventory",
    attr: "inventory",
    env: "SLICECHECK_INVENTORY",
    flag: "-i, --inventory",
    kind: "path",
    defaultText: "inventory/sim.yaml",
    help: "inventory file (native or Ansible YAML)",
  },
  {
    key: "nodes",
    attr: "nodes",
    env: "SLICECHECK_NODES",
    flag: "--nodes",
    kind: "string",
    defaultText: "all",
    help: "node selector",
  },
  {
    key: "db",
    attr: "db",
    env: "SLICECHECK_DB",
    flag: "--db",
    kind: "path",
    defaultText: "reports/slicecheck.db",
    help: "records database",
  },
  {
    key: "db_timeout",
    attr: "dbTimeout",
    env: "SLICECHECK_DB_TIMEOUT",
    flag: "--db-timeout",
    kind: "duration",
    defaultText: "30s",
    commands: ["run", "diff"],
    help: "run, diff: bound on every wait for the records database",
  },
  {
    key: "out",
    attr: "out",
    env: "SLICECHECK_OUT",
    flag: "--out",
    kind: "path",
    defaultText: "reports/runs/<run id>",
    // report's --out is the report folder, another thing with the same flag name.
    commands: ["run"],
    help: "run: the run's output folder",
  },
  {
    key: "suites",
    attr: "suites",
    env: "SLICECHECK_SUITES",
    flag: "--suites",
    kind: "list",
    defaultText: DEFAULT_SUITES,
    help: "run: suites (names and files)",
  },
  {
    key: "duration",
    attr: "duration",
    env: "SLICECHECK_DURATION",
    flag: "--duration",
    kind: "duration",
    defaultText: "30s",
    help: "run: how long each workload runs",
  },
  {
    key: "tolerance",
    attr: "tolerance",
    env: "SLICECHECK_TOLERANCE",
    flag: "--tolerance",
    kind: "percent",
    defaultText: "5%",
    help: "run, diff: allowed throughput loss",
  },
  {
    key: "faults",
    attr: "faults",
    env: "SLICECHECK_FAULTS",
    flag: "--faults",
    kind: "list",
    defaultText: "oom,crash,kill,hang,noisy",
    help: "run (isolation): faults to inject",
  },
  {
    key: "aggressors",
    attr: "aggressors",
    env: "SLICECHECK_AGGRESSORS",
    flag: "--aggressors",
    kind: "int",
    defaultText: "every instance",
    help: "run (isolation): aggressors per GPU",
  },
  {
    key: "busbw_floor",
    attr: "busbwFloor",
    env: "SLICECHECK_BUSBW_FLOOR",
    flag: "--busbw-floor",
    kind: "int",
    defaultText: "40% of the board's NVLink (catalogue)",
    help: "run (nccl): bus-bandwidth floor of the all_reduce across whole GPUs, GB/s",
  },
  {
    key: "timeout",
    attr: "timeout",
    env: "SLICECHECK_TIMEOUT",
    flag: "--timeout",
    kind: "duration",
    defaultText: "exec 120s, doctor 60s",
    commands: ["exec", "doctor"],
    help: "exec, doctor: per-node deadline",
  },
  {
    key: "concurrency",
    attr: "concurrency",
    env: "SLICECHECK_CONCURRENCY",
    flag: "--concurrency",
    kind: "int",
    defaultText: "64",
    help: "exec, run: nodes at once",
  },
  {
    key: "journal_dir",
    attr: "journalDir",
    env: "SLICECHECK_JOURNAL_DIR",
    flag: "--journal-dir",
    kind: "path",
    defaultText: "reports/journal",
    help: "apply, restore, run: local journal copies",
  },
  {
    key: "lease",
    attr: "lease",
    env: "SLICECHECK_LEASE",
    flag: "--lease",
    kind: "duration",
    defaultText: "45s",
    help: "apply, restore, run: how long a node stays locked after the controller's last heartbeat",
  },
  {
    key: "allure",
    attr: "allure",
    env: "SLICECHECK_ALLURE",
    flag: "--no-allure",
    kind: "bool",
    defaultText: "true",
    help: "run: write Allure results",
  },
];

export const SETTING_KEYS = SETTINGS.map((s) => s.key);
