// The one error class of slicecheck. Every failure carries a stable `code` (for scripts and
// tests), the exit-code class it maps to, and context fields; the message says what happened
// and what to do about it.

export type ExitClass = "check-failed" | "cannot-check" | "bad-input";

/** Stable codes. Never rename one: users grep for them and tests assert them. */
export const ERROR_CODES = {
  // bad input (exit 3): refused before any node is touched
  INVENTORY_NOT_FOUND: "bad-input",
  INVENTORY_YAML: "bad-input",
  INVENTORY_SCHEMA: "bad-input",
  SELECTOR: "bad-input",
  USAGE: "bad-input",
  PARSE: "bad-input",
  LAYOUT: "bad-input",
  SIM_SPEC: "bad-input",
  /** slicecheck.config.yaml or a SLICECHECK_* variable holds a value slicecheck cannot use. */
  CONFIG: "bad-input",
  /** --db, --out or --journal-dir names something that cannot be one, or cannot be written. */
  OUTPUT_PATH: "bad-input",
  /** A suite file does not parse, or a module it imports is missing. */
  SUITE_LOAD: "bad-input",
  // the harness could not check (exit 2)
  CONNECT: "cannot-check",
  /** TCP was accepted but the SSH handshake (identification, key exchange) did not complete. */
  HANDSHAKE: "cannot-check",
  AUTH: "cannot-check",
  HOST_KEY_UNKNOWN: "cannot-check",
  HOST_KEY_CHANGED: "cannot-check",
  HOST_KEY_REVOKED: "cannot-check",
  CONNECTION_LOST: "cannot-check",
  COMMAND_TIMEOUT: "cannot-check",
  CHANNEL: "cannot-check",
  KEY_FILE: "cannot-check",
  TOOL_MISSING: "cannot-check",
  SIM: "cannot-check",
  INTERLOCK: "cannot-check",
  // another controller holds the node (run, apply and restore lock it)
  NODE_LOCKED: "cannot-check",
  /** This run's node lease ran out or was taken over: it changes that node no more. */
  LEASE_LOST: "cannot-check",
  // a run stopped by SIGINT/SIGTERM
  INTERRUPTED: "cannot-check",
  /** A journal copy does not parse or validate: it is never taken for the original state. */
  JOURNAL_INVALID: "cannot-check",
  // a command on a node failed, or printed what slicecheck cannot read
  NODE_COMMAND: "cannot-check",
  INTERNAL: "cannot-check",
  REPORT: "cannot-check",
  /** A write failed while working (disk full, read-only file system, I/O error). */
  WRITE: "cannot-check",
  /** The records database server (PostgreSQL) refused, dropped or failed a connection. */
  DB: "cannot-check",
  /** The Slurm daemons or commands (munge, slurmctld, slurmd, scontrol, srun) failed. */
  SLURM: "cannot-check",
  // a check failed (exit 1)
  CHECK_FAILED: "check-failed",
  /** One rank per MIG instance: NCCL claimed a peer-to-peer path (P2P, NVLink) between instances
   * of one GPU, which have none (host memory or the network only): the model is broken. */
  MIG_P2P_CLAIMED: "check-failed",
  /** The CDI spec (/etc/cdi/nvidia.yaml) does not name the live MIG devices, or names gone ones:
   * containers given them fail to start or get another instance's device files. */
  CDI_STALE: "check-failed",
  /** The node's container runtime cannot give a container a GPU: docker without the nvidia
   * runtime or CDI, podman whose CDI spec folders hold no nvidia.com/gpu spec, containerd with
   * neither CDI nor the nvidia runtime in its CRI plugin. The message names the fix. */
  RUNTIME_NOT_CONFIGURED: "check-failed",
} as const satisfies Record<string, ExitClass>;

export type ErrorCode = keyof typeof ERROR_CODES;

// A registry-wide brand: the same class can be loaded twice (a command module imported lazily
// under a loader that keys modules differently), and `instanceof` must still hold.
const BRAND = Symbol.for("slicecheck.SlicecheckError");

export class SlicecheckError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    return (
      typeof value === "object" &&
      value !== null &&
      (value as Record<symbol, unknown>)[BRAND] === true
    );
  }

  readonly [BRAND] = true;
  readonly code: ErrorCode;
  readonly context: Readonly<Record<string, unknown>>;

  constructor(
    code: ErrorCode,
    message: string,
    context: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "SlicecheckError";
    this.code = code;
    this.context = context;
  }

  get exitClass(): ExitClass {
    return ERROR_CODES[this.code];
  }
}

export const EXIT = { ok: 0, checkFailed: 1, cannotCheck: 2, badInput: 3 } as const;

export function exitCodeOf(err: unknown): number {
  if (err instanceof SlicecheckError) {
    switch (err.exitClass) {
      case "check-failed":
        return EXIT.checkFailed;
      case "bad-input":
        return EXIT.badInput;
      default:
        return EXIT.cannotCheck;
    }
  }
  return EXIT.cannotCheck;
}

export function isSlicecheckError(err: unknown, code?: ErrorCode): err is SlicecheckError {
  return err instanceof SlicecheckError && (code === undefined || err.code === code);
}
