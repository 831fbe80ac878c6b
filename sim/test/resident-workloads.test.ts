// The workload programs that the cluster's resident simulator runs for a bash client
// (sim/src/resident/workloads.ts, wrapper.ts): what the client does when the resident is not
// there, dies under it, or is killed alone. builtin.test.ts runs every program both ways.
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { Socket } from "node:net";
import { join } from "node:path";
import { childrenOf } from "../../test/helpers/procs.js";
import { tempDir } from "../../test/helpers/tmp.js";
import { initState, readState } from "../src/nvsmi/state.js";
import { PID_FILE, PORT_FILE } from "../src/resident/files.js";
import { ensureResident, stopResident } from "../src/resident/lifecycle.js";
import { RESIDENT_PROGRAMS } from "../src/resident/programs.js";
import { RESIDENT_PROGRAM_TOOLS } from "../src/resident/tools.js";
import { workloadWrapper } from "../src/resident/wrapper.js";
import { isAlive, readPid } from "../src/sshd.js";
import { installTools, SIM_TOOLS, toolEntry } from "../src/tools.js";
import { until } from "./workloads/helpers.js";

interface Run {
  child: ChildProcess;
  out: string;
  err: string;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Piped: both pipes at end of file (every writer, the resident's included, closed them). */
  eof?: Promise<unknown>;
}

describe("workloads run by the resident simulator for a bash client", function () {
  this.timeout(60_000);
  const dir = tempDir("resident-wl");
  const stateDir = join(dir, "nodes", "sim01", "state");
  const bin = join(dir, "nodes", "sim01", "bin");
  const children: ChildProcess[] = [];

  let fifos = 0;
  /** A named pipe's two ends: what sshd and the node's supervisor give a command. */
  function pipe(): { r: number; w: number } {
    const path = join(dir, `pipe.${++fifos}`);
    execFileSync("mkfifo", [path]);
    const r = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    return { r, w: openSync(path, constants.O_WRONLY) };
  }

  /** The tool's wrapper as a child: its stdout and stderr Node's sockets, or pipes (`piped`). */
  function start(
    tool: string,
    args: string[],
    opts: { detached?: boolean; piped?: boolean } = {},
  ): Run {
    const env = { PATH: process.env.PATH, SLICECHECK_SIM_STATE: stateDir };
    const pipes = opts.piped ? [pipe(), pipe()] : null;
    const stdio = pipes ? (["ignore", pipes[0]!.w, pipes[1]!.w] as const) : undefined;
    const child = spawn(join(bin, tool), args, {
      env,
      detached: opts.detached ?? false,
      ...(stdio ? { stdio: [...stdio] } : {}),
    });
    children.push(child);
    const r: Run = {
      child,
      out: "",
      err: "",
      done: new Promise((done) => child.on("close", (code, signal) => done({ code, signal }))),
    };
    const collect = (from: NodeJS.ReadableStream | null, key: "out" | "err") =>
      from?.on("data", (d: Buffer) => {
        r[key] += d.toString();
      });
    if (!pipes) {
      collect(child.stdout, "out");
      collect(child.stderr, "err");
      return r;
    }
    const ends = pipes.map(({ r: fd, w }, i) => {
      closeSync(w);
      const s = new Socket({ fd, readable: true, writable: false });
      collect(s, i === 0 ? "out" : "err");
      return new Promise((ended) => s.on("close", ended));
    });
    r.eof = Promise.all(ends);
    return r;
  }
  const pids = () => readState(stateDir).gpus.flatMap((g) => g.processes.map((p) => p.pid));
  const cmdline = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
    } catch {
      return "";
    }
  };

  before(async () => {
    mkdirSync(stateDir, { recursive: true });
    initState(stateDir, { node: "sim01", product: "H100-80GB", gpus: 1, driver: "550.127.05" });
    writeFileSync(join(dir, "cluster.json"), '{"version":1,"nodes":[]}\n');
    installTools(bin, dir);
  });
  afterEach(() => {
    for (const c of children.splice(0))
      if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  });
  after(() => stopResident(dir));

  it("the wrappers and the resident's programs name the same tools, each a simulated tool", () => {
    assert.deepEqual([...RESIDENT_PROGRAM_TOOLS].sort(), Object.keys(RESIDENT_PROGRAMS).sort());
    for (const tool of RESIDENT_PROGRAM_TOOLS) assert.ok(SIM_TOOLS[tool], tool);
  });

  it("with no resident simulator, the wrapper runs the program as its own Node process", async () => {
    await stopResident(dir);
    const r = start("slicecheck-stress", ["--duration", "3", "--interval", "0.5"]);
    assert.ok(await until(() => r.out.includes("SLICECHECK stress "), 20_000), r.err);
    // The wrapper exec'd Node: the process is node itself, not bash.
    assert.match(cmdline(r.child.pid!), /node .*stress\.js --duration 3/);
    const end = await r.done;
    assert.equal(end.code, 0, r.err);
    assert.match(r.out, /SLICECHECK stress-final /);
  });

  it("stdout and stderr pipes (sshd's, the supervisor's): the resident writes into them, the client is bash alone", async () => {
    await ensureResident(dir);
    const r = start("slicecheck-stress", ["--duration", "2", "--interval", "0.5"], { piped: true });
    assert.ok(await until(() => r.out.includes("SLICECHECK stress "), 20_000), r.err);
    const pid = r.child.pid!;
    assert.match(cmdline(pid), /^\/bin\/bash .*slicecheck-stress --duration 2/);
    assert.deepEqual(childrenOf(pid), [], "no relay");
    assert.deepEqual(pids(), [pid]);
    assert.deepEqual(await r.done, { code: 0, signal: null }, r.err);
    await r.eof;
    assert.match(r.out, /SLICECHECK stress-final /);
    assert.deepEqual(pids(), []);
  });

  it("piped, a client killed alone (SIGKILL): its pipes reach end of file, nothing more is written", async () => {
    await ensureResident(dir);
    const r = start("slicecheck-stress", ["--duration", "30", "--interval", "0.2"], {
      piped: true,
    });
    assert.ok(await until(() => r.out.includes("SLICECHECK stress "), 20_000), r.err);
    r.child.kill("SIGKILL");
    assert.equal((await r.done).signal, "SIGKILL");
    let eof = false;
    void r.eof!.then(() => {
      eof = true;
    });
    // The resident closes its ends of the pipes: the reader is not held open past the process.
    assert.ok(await until(() => eof, 2_000), "the pipes ended");
    assert.ok(await until(() => pids().length === 0, 2_000), `still listed: ${pids()}`);
    assert.doesNotMatch(r.out, /stress-final|stopped/);
  });

  it("piped, TERM to the whole process group: the last lines still come, exit 143", async () => {
    await ensureResident(dir);
    const r = start("slicecheck-stress", ["--duration", "30", "--interval", "0.2"], {
      detached: true,
      piped: true,
    });
    assert.ok(await until(() => r.out.includes("SLICECHECK stress "), 20_000), r.err);
    process.kill(-r.child.pid!, "SIGTERM");
    assert.deepEqual(await r.done, { code: 143, signal: null }, r.err);
    await r.eof;
    assert.match(
      r.out,
      /SLICECHECK stress-final [^\n]*\nSLICECHECK stopped program=stress signal=SIGTERM /,
    );
  });

  it("stdout and stderr not pipes (Node's sockets here, a terminal, a file): two cats relay them, and the client's own pid is registered", async () => {
    await ensureResident(dir);
    const r = start("slicecheck-stress", ["--duration", "2", "--interval", "0.5"]);
    assert.ok(await until(() => r.out.includes("SLICECHECK stress "), 20_000), r.err);
    const pid = r.child.pid!;
    assert.match(cmdline(pid), /^\/bin\/bash .*slicecheck-stress --duration 2/);
    assert.deepEqual(childrenOf(pid).map(cmdline).sort(), ["/bin/cat ", "/bin/cat "]);
    assert.deepEqual(pids(), [pid]);
    const end = await r.done;
    assert.deepEqual(end, { code: 0, signal: null }, r.err);
    assert.deepEqual(pids(), []);
  });

  it("a client killed alone (SIGKILL) ends its program there: no more lines, its entry goes", async () => {
    await ensureResident(dir);
    const r = start("slicecheck-stress", ["--duration", "30", "--interval", "0.2"]);
    assert.ok(await until(() => r.out.includes("SLICECHECK stress "), 20_000), r.err);
    const cats = childrenOf(r.child.pid!);
    r.child.kill("SIGKILL");
    assert.equal((await r.done).signal, "SIGKILL");
    // The driver frees a dead process's context at once (here the resident, or the guardian).
    assert.ok(await until(() => pids().length === 0, 2_000), `still listed: ${pids()}`);
    assert.ok(await until(() => cats.every((c) => !isAlive(c)), 2_000), "the cats ended");
    const lines = r.out;
    await new Promise((done) => setTimeout(done, 600));
    assert.equal(r.out, lines, "nothing printed after the kill");
    assert.doesNotMatch(r.out, /stress-final|stopped/);
  });

  it("TERM to the whole process group (the harness's kill): the last lines still come, exit 143", async () => {
    await ensureResident(dir);
    const r = start("slicecheck-stress", ["--duration", "30", "--interval", "0.2"], {
      detached: true,
    });
    assert.ok(await until(() => r.out.includes("SLICECHECK stress "), 20_000), r.err);
    // The cats get the TERM too: they must relay what the graceful stop prints after it.
    process.kill(-r.child.pid!, "SIGTERM");
    assert.deepEqual(await r.done, { code: 143, signal: null }, r.err);
    assert.match(
      r.out,
      /SLICECHECK stress-final [^\n]*\nSLICECHECK stopped program=stress signal=SIGTERM /,
    );
    assert.deepEqual(pids(), []);
  });

  it("a forwarded SIGHUP ends the program by SIGHUP (no graceful stop), unregistered", async () => {
    await ensureResident(dir);
    const r = start("slicecheck-stress", ["--duration", "30", "--interval", "0.2"]);
    assert.ok(await until(() => r.out.includes("SLICECHECK stress "), 20_000), r.err);
    r.child.kill("SIGHUP");
    assert.deepEqual(await r.done, { code: null, signal: "SIGHUP" });
    assert.doesNotMatch(r.out, /stress-final|stopped/);
    assert.deepEqual(pids(), []);
  });

  it("nvidia-smi's changes and errors run in the resident: output, exit code and state as its own process's", async () => {
    await ensureResident(dir);
    // Two nodes alike: one changed through a client that only the resident can serve (exit 99
    // otherwise), one by nvidia-smi's own Node process.
    const viaResident = join(dir, "smi-resident");
    const viaOwn = join(dir, "smi-own");
    const only = join(dir, "only-program");
    mkdirSync(only, { recursive: true });
    writeFileSync(
      join(only, "nvidia-smi"),
      workloadWrapper("nvidia-smi", "exit 99", join(dir, PORT_FILE)),
    );
    chmodSync(join(only, "nvidia-smi"), 0o755);
    for (const d of [viaResident, viaOwn]) {
      mkdirSync(d, { recursive: true });
      initState(d, { node: "sim01", product: "H100-80GB", gpus: 2, driver: "550.127.05" });
    }
    const call = (file: string, args: string[], state: string) => {
      const r = spawnSync(file, args, {
        env: { PATH: process.env.PATH, SLICECHECK_SIM_STATE: state },
        encoding: "utf8",
      });
      return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    };
    for (const args of [
      ["-i", "0", "-mig", "1"],
      ["mig", "-i", "0", "-cgi", "9,19,19", "-C"],
      ["mig", "-i", "0", "-cgi", "99"],
      ["mig", "-i", "0", "-dci", "-gi", "1"],
      ["mig", "-i", "0", "-dgi", "-gi", "1"],
      ["-i", "7", "-L"],
      ["--bogus"],
    ]) {
      const a = call(join(only, "nvidia-smi"), args, viaResident);
      const b = call(process.execPath, [toolEntry("nvidia-smi"), ...args], viaOwn);
      assert.notEqual(a.code, 99, `the resident ran nvidia-smi ${args.join(" ")}`);
      assert.deepEqual(a, b, `nvidia-smi ${args.join(" ")}`);
    }
    const gis = (d: string) =>
      readState(d).gpus.map((g) => [g.mig, g.gis.map((x) => [x.id, x.profileId, x.cis.length])]);
    assert.deepEqual(gis(viaResident), gis(viaOwn));
    assert.ok(readState(viaResident).gpus[0]!.gis.length > 0, "the changes were made");
  });

  it("the resident dying under a client: exit 255 and a line that says so, never a pass", async () => {
    await ensureResident(dir);
    const r = start("slicecheck-stress", ["--duration", "30", "--interval", "0.2"]);
    assert.ok(await until(() => r.out.includes("SLICECHECK stress "), 20_000), r.err);
    const resident = readPid(join(dir, PID_FILE));
    assert.ok(resident && existsSync(`/proc/${resident}`));
    process.kill(resident, "SIGKILL");
    const end = await r.done;
    assert.equal(end.code, 255, r.err);
    assert.match(r.err, /slicecheck-stress \(simulated\): the resident simulator went away/);
    // Its guardian saw the resident go and the client die: the entry goes, as the driver frees
    // a dead process's context (the reaper is a Node start).
    assert.ok(await until(() => pids().length === 0, 10_000), `still listed: ${pids()}`);
  });

  it("one guardian for every client of the resident, none of registry.ts's own per workload", async () => {
    await ensureResident(dir);
    const runs = [0, 1, 2].map(() =>
      start("slicecheck-stress", ["--duration", "30", "--interval", "0.2"], { piped: true }),
    );
    assert.ok(await until(() => pids().length === 3, 20_000), runs.map((r) => r.err).join(""));
    // The resident's children that would run the reaper (other tests' residents have theirs).
    const resident = readPid(join(dir, PID_FILE));
    const found = childrenOf(resident!)
      .map(cmdline)
      .filter((c) => c.includes("reap."));
    assert.equal(found.length, 1, found.join("\n"));
    assert.match(found[0]!, /^\/bin\/bash -c .*declare -A/s);
    for (const r of runs) r.child.kill("SIGKILL");
    assert.ok(await until(() => pids().length === 0, 2_000), `still listed: ${pids()}`);
  });
});
