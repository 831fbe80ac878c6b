// What the simulated `dcgmi` (dcgmi.ts) makes of its arguments and of the node before it reads
// anything else, shared with the resident simulator (resident/server.ts), which answers the
// call a node without nv-hostengine gets: the utilization sampler asks `dcgmi dmon` once per
// phase on every node, and as a Node process of its own that refusal cost a tenth of a second.
import type { SimGpu } from "../nvsmi/state.js";

export const DMON_FIELD_NAMES: Record<number, string> = { 1002: "SMACT", 252: "FBUSD" };

export type DcgmiCall =
  | { kind: "dmon"; fields: number[]; delayMs: number; count: number }
  | { kind: "discovery" }
  /** Refused, with what dcgmi prints on stderr. */
  | { kind: "refused"; stderr: string };

export function parseDcgmi(argv: readonly string[]): DcgmiCall {
  const opt = (k: string, d: string) => {
    const i = argv.indexOf(k);
    return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : d;
  };
  if (argv[0] === "discovery" && (argv.includes("-c") || argv.includes("--compute-hierarchy")))
    return { kind: "discovery" };
  if (argv[0] !== "dmon")
    return {
      kind: "refused",
      stderr: `dcgmi (simulated): only dmon and discovery -c are simulated, not '${argv.join(" ")}'\n`,
    };
  const fields = opt("-e", "").split(",").filter(Boolean).map(Number);
  const delayMs = Number(opt("-d", "1000"));
  if (fields.length === 0 || fields.some((f) => !DMON_FIELD_NAMES[f]) || !(delayMs > 0))
    return { kind: "refused", stderr: "Error: Invalid value for field id(s) or delay\n" };
  return { kind: "dmon", fields, delayMs, count: Number(opt("-c", "0")) };
}

/** dcgmi needs the host engine: planted with `sim fault holder --name nv-hostengine`. */
export const hostEngineRuns = (gpus: readonly SimGpu[]) =>
  gpus.some((g) => g.holders.includes("nv-hostengine"));

/** What dcgmi prints on stdout, exit 255, when no host engine answers. */
export const NO_HOST_ENGINE =
  "Error: unable to establish a connection to the specified host: localhost\nError: Unable to connect to host engine. Host engine connection invalid/disconnected.\n";
