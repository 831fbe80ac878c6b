// The resident simulator: one Node process per simulated cluster that answers the read-only calls
// of the simulated nvidia-smi. A relayout and stress on one node makes some 60 tool calls, about
// 45 of them nvidia-smi listings and queries; as a Node process each they cost 0.13 s of CPU on 2
// slow cores (Node's own start is 0.10 s), and they were most of the end-to-end tests' CPU. Here
// one costs a connection and a read of the node's state file.
//
// It answers exactly what the tool's own process prints (the same function, nvidiaSmiMain, on the
// same state folder, with the caller's uid and device fence), and otherwise says `fallback`: a
// call that changes the node (its lock and its writes stay in the tool's own process), a caller
// of another uid (whose file permissions this process does not share), anything that wrote to
// stderr or threw. The wrapper then runs the tool as before, so a wrong guess here costs time,
// never a different answer.
import { rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { lsmodText, simulatedPgrep } from "../host/answers.js";
import { dmesgMain } from "../klog/dmesg.js";
import { isMutationArgv, nvidiaSmiMain } from "../nvsmi/cli.js";
import { readState } from "../nvsmi/state.js";
import { syncSlurm } from "../slurmd/cluster.js";
import { CTK_VERSION_TEXT, containerCliInfo } from "../toolkit/answers.js";
import { hostEngineRuns, NO_HOST_ENGINE, parseDcgmi } from "../workloads/dcgmi-args.js";
import {
  fileAnswerHead,
  formatAnswer,
  OWN_UID,
  parseRequest,
  type ResidentRequest,
  SLURM_SYNC,
} from "./protocol.js";
import { joinWorkload, parseWorkloadHead } from "./workloads.js";

type Answer = { code: number; stdout: string } | null;

type ToolMain = (
  argv: string[],
  io: {
    stateDir: string;
    uid: number;
    env: NodeJS.ProcessEnv;
    stdout: (s: string) => void;
    stderr: (s: string) => void;
  },
) => Promise<number>;

/** A tool's own main function, its output kept; nothing when it wrote to stderr. */
async function captured(main: ToolMain, req: ResidentRequest): Promise<Answer> {
  let stdout = "";
  let stderr = "";
  const code = await main(req.argv, {
    stateDir: req.stateDir,
    uid: req.uid,
    env: req.env,
    stdout: (s) => {
      stdout += s;
    },
    stderr: (s) => {
      stderr += s;
    },
  });
  return stderr ? null : { code, stdout };
}

async function nvidiaSmi(req: ResidentRequest): Promise<Answer> {
  return isMutationArgv(req.argv) ? null : captured(nvidiaSmiMain, req);
}

/** Reading the kernel log; clearing it (-c, -C) is a change, left to the tool's own process. */
const CLEARS = /^(-[a-zA-Z]*[cC][a-zA-Z]*|--clear|--read-clear)$/;

async function dmesg(req: ResidentRequest): Promise<Answer> {
  return req.argv.some((a) => CLEARS.test(a)) ? null : captured(dmesgMain, req);
}

/** The toolkit's read-only calls; not where `sim fault no-toolkit` has removed it (the shell's
 * "not found" on stderr is the tool entry's to print). */
function toolkit(req: ResidentRequest): Answer {
  const state = readState(req.stateDir);
  if (state.noToolkit) return null;
  if (req.tool === "nvidia-ctk")
    return ["--version", "-v"].includes(req.argv[0] ?? "")
      ? { code: 0, stdout: CTK_VERSION_TEXT }
      : null;
  return req.argv[0] === "info" ? { code: 0, stdout: containerCliInfo(state) } : null;
}

/** dcgmi's refusal where no host engine runs (every node's once per phase: the utilization
 * sampler tries DCGM first); a call the host engine would answer, or a bad one, is the tool's. */
function dcgmi(req: ResidentRequest): Answer {
  if (parseDcgmi(req.argv).kind === "refused") return null;
  return hostEngineRuns(readState(req.stateDir).gpus)
    ? null
    : { code: 255, stdout: NO_HOST_ENGINE };
}

/** The tools answered here (resident/tools.ts lists them for their wrappers). */
export const RESIDENT_HANDLERS: Record<string, (req: ResidentRequest) => Promise<Answer>> = {
  "nvidia-smi": nvidiaSmi,
  dmesg,
  lsmod: async (req) => ({ code: 0, stdout: lsmodText(req.stateDir) }),
  // Only the GPU daemons the node simulates; the host's own processes are the real pgrep's.
  pgrep: async (req) => simulatedPgrep(req.argv, req.stateDir),
  dcgmi: async (req) => dcgmi(req),
  "nvidia-ctk": async (req) => toolkit(req),
  "nvidia-container-cli": async (req) => toolkit(req),
  // Not a tool: the Slurm commands' wrappers (../tools.ts slurmWrapper) ask for their cluster's
  // Slurm config to be brought to the nodes' MIG state (the folder field is the cluster's),
  // then run Debian's own command. A failed sync is left to the wrapper's own Node process,
  // which says why and runs the command all the same.
  [SLURM_SYNC]: async (req) => {
    await syncSlurm(req.stateDir);
    return { code: 0, stdout: "" };
  },
};

export async function answer(req: ResidentRequest): Promise<Answer> {
  const handler = RESIDENT_HANDLERS[req.tool];
  if (!handler || !req.stateDir || req.uid !== OWN_UID) return null;
  try {
    return await handler(req);
  } catch {
    return null;
  }
}

/** A caller that never finishes its request is dropped after this. */
const REQUEST_TIMEOUT_MS = 10_000;

/** Whether the connection is a workload client's (workloads.ts) rather than a tool's call. */
const WORKLOAD_KIND = /^(W2|O1|E1)\0/;

let answerSeq = 0;

/**
 * Sends an answer. A stdout with no NUL (bash's `$(<file)` drops NULs) goes into a file of
 * `answersDir` for the wrapper to read itself; the file goes when the caller closes the
 * connection, which it does once it has read it, or dies (there is no idle timeout by then: a
 * caller that reads late on a loaded machine must still find its file).
 */
function reply(sock: Socket, a: Answer, answersDir: string | null): void {
  if (!a || !answersDir || a.stdout === "" || a.stdout.includes("\0"))
    return void sock.end(formatAnswer(a));
  const file = join(answersDir, `${process.pid}.${++answerSeq}`);
  try {
    writeFileSync(file, `${a.stdout}.`);
  } catch {
    return void sock.end(formatAnswer(a));
  }
  sock.once("close", () => rmSync(file, { force: true }));
  sock.end(fileAnswerHead(a.code, file));
}

function onConnection(sock: Socket, answersDir: string | null): void {
  let buf = Buffer.alloc(0);
  sock.setTimeout(REQUEST_TIMEOUT_MS, () => sock.destroy());
  // A caller killed mid-answer (a timeout on the node) is no concern of the others.
  sock.on("error", () => sock.destroy());
  const onData = (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    if (WORKLOAD_KIND.test(buf.subarray(0, 3).toString("latin1"))) {
      const head = parseWorkloadHead(buf);
      if (head === "more") return;
      sock.off("data", onData);
      sock.pause();
      // A workload runs as long as it runs: no request timeout.
      sock.setTimeout(0);
      if (head === "bad") return void sock.end("fallback\n");
      return joinWorkload(sock, head);
    }
    const req = parseRequest(buf);
    if (req === "more") return;
    sock.off("data", onData);
    // The request is whole: the idle timeout was for callers that never finish one, and an
    // answer may take its time (a Slurm sync restarts daemons).
    sock.setTimeout(0);
    const pending = req === "bad" ? Promise.resolve(null) : answer(req);
    void pending.then((a) => reply(sock, a, answersDir));
  };
  sock.on("data", onData);
}

/** Listens on a free loopback port; resolves with the server once it does. `answersDir`: where
 * answers are put for the wrappers to read (none: every answer goes on the connection). */
export function listen(answersDir: string | null = null): Promise<Server> {
  const server = createServer((sock) => onConnection(sock, answersDir));
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve(server));
  });
}
