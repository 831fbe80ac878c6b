// What the simulated tools' wrappers (tools.ts) send the resident simulator (server.ts), and what
// it answers. A request is NUL-terminated fields, written by bash's printf '%s\0':
//
//   version, tool, state folder, "1" when the caller has a device fence (else ""), the fence,
//   the caller's effective uid, argc, then argc arguments.
//
// The answer is the tool's exit code on a line of its own, then its stdout, byte for byte, up to
// the end of the connection; or `F <code> <file>`: its stdout is in that file, with a "." after
// it, for bash's `$(<file)` to read without a process (a `cat` was one more process for every
// call), and the file goes when the caller closes the connection; or the line `fallback`, after
// which the wrapper runs the tool as a Node process of its own, as it does when no resident
// simulator answers at all.

export const PROTOCOL_VERSION = "2";

/** The resident's own uid: it answers and runs programs only for callers of it (their file
 * permissions are its own). */
export const OWN_UID = typeof process.getuid === "function" ? process.getuid() : 0;

/** The request of a Slurm command's wrapper: its cluster's Slurm config brought up to date. */
export const SLURM_SYNC = "slurm-sync";

/** The first field of a program client's control connection (workloads.ts has its protocol). */
export const WORKLOAD_VERSION = "W2";

export interface ResidentRequest {
  tool: string;
  stateDir: string;
  /** The part of the caller's environment the tools read: its device fence (../fence.ts). */
  env: NodeJS.ProcessEnv;
  uid: number;
  argv: string[];
}

/** Past this a request is refused: the longest real one (a --query-gpu list) is a few hundred. */
const MAX_REQUEST_BYTES = 64 * 1024;
const HEAD_FIELDS = 7;

/** The request in `buf`, "more" while fields are still to come, "bad" for anything else. */
export function parseRequest(buf: Buffer): ResidentRequest | "more" | "bad" {
  if (buf.length > MAX_REQUEST_BYTES) return "bad";
  const fields = buf.toString("utf8").split("\0");
  // The piece after the last NUL is an unfinished field (or "" when the buffer ends on one).
  const done = fields.slice(0, -1);
  if (done.length < HEAD_FIELDS) return "more";
  const [version, tool, stateDir, fenced, fence, uid, argc] = done as [string, ...string[]];
  const n = Number(argc);
  if (version !== PROTOCOL_VERSION || !/^\d+$/.test(uid ?? "") || !Number.isInteger(n) || n < 0)
    return "bad";
  if (done.length < HEAD_FIELDS + n) return "more";
  if (done.length > HEAD_FIELDS + n) return "bad";
  const env: NodeJS.ProcessEnv = fenced === "1" ? { SLICECHECK_SIM_FENCE: fence } : {};
  return {
    tool: tool ?? "",
    stateDir: stateDir ?? "",
    env,
    uid: Number(uid),
    argv: done.slice(HEAD_FIELDS),
  };
}

/** The head of an answer whose stdout is in `file` (with the "." that ends it). */
export function fileAnswerHead(code: number, file: string): string {
  return `F ${code} ${file}\n`;
}

/** The answer's bytes: the exit code line and stdout, or the fallback line. */
export function formatAnswer(a: { code: number; stdout: string } | null): string {
  return a ? `${a.code}\n${a.stdout}` : "fallback\n";
}
