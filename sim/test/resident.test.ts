// The cluster's resident simulator (sim/src/resident) must answer exactly what each tool's own
// process prints, or not at all: a difference would make every end-to-end test check a node that
// is not the one the tools describe. Each call is made twice, through a wrapper whose own-process
// path is cut off (exit 99: only the resident simulator can answer it) and by the tool's own
// Node process, and the two must agree byte for byte, exit code included.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { tempDir } from "../../test/helpers/tmp.js";
import { appendKernelLog } from "../src/klog/log.js";
import { initState, readState, type SimState, writeState } from "../src/nvsmi/state.js";
import { ANSWERS_DIR, PID_FILE, PORT_FILE } from "../src/resident/files.js";
import { ensureResident, stopResident } from "../src/resident/lifecycle.js";
import { PROTOCOL_VERSION } from "../src/resident/protocol.js";
import { RESIDENT_TOOLS } from "../src/resident/tools.js";
import { isAlive, readPid } from "../src/sshd.js";
import { installSlurmTools, installTools, residentWrapper, toolEntry } from "../src/tools.js";

const NOT_ANSWERED = 99;

interface Out {
  code: number | null;
  stdout: string;
}

/** Lines that carry the clock (the table's date line, -q's Timestamp) may differ by a second. */
const clockFree = (s: string) => s.replace(/^.*\d\d:\d\d:\d\d.*$/gm, "<clock>");

describe("the resident simulator answers as each tool's own process does", function () {
  this.timeout(60_000);
  const dir = tempDir("resident");
  const stateDir = join(dir, "nodes", "sim01", "state");
  const onlyResident = join(dir, "only-resident");
  const bin = join(dir, "nodes", "sim01", "bin");

  const env = (extra: NodeJS.ProcessEnv = {}) => ({
    PATH: process.env.PATH,
    SLICECHECK_SIM_STATE: stateDir,
    ...extra,
  });
  const run = (file: string, args: string[], extra?: NodeJS.ProcessEnv): Out => {
    const r = spawnSync(file, args, { env: env(extra), encoding: "utf8" });
    return { code: r.status, stdout: r.stdout };
  };
  const resident = (tool: string, args: string[], extra?: NodeJS.ProcessEnv) =>
    run(join(onlyResident, tool), args, extra);
  const own = (tool: string, args: string[], extra?: NodeJS.ProcessEnv) =>
    run(process.execPath, [toolEntry(tool), ...args], extra);
  const edit = (fn: (s: SimState) => void) => {
    const s = readState(stateDir);
    fn(s);
    writeState(stateDir, s);
  };

  /** Answered by the resident simulator, and as the tool's own process answers. */
  function same(tool: string, args: string[], extra?: NodeJS.ProcessEnv): Out {
    const r = resident(tool, args, extra);
    assert.notEqual(r.code, NOT_ANSWERED, `the resident simulator answered ${tool} ${args}`);
    const o = own(tool, args, extra);
    assert.equal(r.code, o.code, `${tool} ${args.join(" ")}: exit code`);
    assert.equal(clockFree(r.stdout), clockFree(o.stdout), `${tool} ${args.join(" ")}: stdout`);
    return r;
  }

  before(async () => {
    mkdirSync(stateDir, { recursive: true });
    initState(stateDir, { node: "sim01", product: "H100-80GB", gpus: 2, driver: "550.127.05" });
    writeFileSync(join(dir, "cluster.json"), '{"version":1,"nodes":[]}\n');
    installTools(bin, dir);
    mkdirSync(onlyResident);
    for (const tool of RESIDENT_TOOLS) {
      const path = join(onlyResident, tool);
      writeFileSync(path, residentWrapper(tool, `exit ${NOT_ANSWERED}`, join(dir, PORT_FILE)));
      chmodSync(path, 0o755);
    }
    await ensureResident(dir);
    // MIG instances on GPU 0, changed by the tool's own process (the resident one never changes
    // a node).
    for (const args of [
      ["-i", "0", "-mig", "1"],
      ["mig", "-i", "0", "-cgi", "9,19,19", "-C"],
    ])
      assert.equal(run(join(bin, "nvidia-smi"), args).code, 0, args.join(" "));
  });
  after(() => stopResident(dir));

  it("nvidia-smi: listings, queries, the table, wrong arguments", () => {
    const calls = [
      [],
      ["-L"],
      ["-q"],
      ["-i", "1", "-L"],
      ["-i", "7", "-L"],
      ["mig", "-lgi"],
      ["mig", "-lci"],
      ["mig", "-lgip"],
      ["mig", "-lgipp"],
      ["mig", "-lcip"],
      ["mig", "-i", "1", "-lgi"],
      ["--query-gpu=index,uuid,name,pci.bus_id,mig.mode.current", "--format=csv,noheader"],
      ["--query-gpu=bogus", "--format=csv"],
      ["--query-compute-apps=gpu_uuid,pid,used_memory", "--format=csv"],
      ["vgpu", "-q"],
      ["topo", "-m"],
      ["--no-such-flag"],
    ];
    for (const args of calls) same("nvidia-smi", args);
    assert.match(same("nvidia-smi", ["-L"]).stdout, /MIG 3g\.40gb/);
  });

  it("nvidia-smi: a fenced caller sees only its devices; none, nothing", () => {
    const mig = /UUID: (MIG-[0-9a-f-]+)/.exec(own("nvidia-smi", ["-L"]).stdout)?.[1];
    assert.ok(mig);
    const fenced = same("nvidia-smi", ["-L"], { SLICECHECK_SIM_FENCE: mig });
    assert.equal(fenced.stdout.match(/UUID: MIG-/g)?.length, 1, fenced.stdout);
    same("nvidia-smi", ["-L"], { SLICECHECK_SIM_FENCE: "none" });
  });

  it("a session whose PATH lacks cat still gets the whole answer (a container's environment)", () => {
    assert.match(same("nvidia-smi", ["-L"], { PATH: "/nowhere" }).stdout, /^GPU 0: /);
  });

  it("nvidia-smi: a lost GPU's lines come first; the reachable one answers", () => {
    edit((s) => {
      s.gpus[1]!.lost = true;
    });
    try {
      assert.match(same("nvidia-smi", ["-L"]).stdout, /GPU is lost/);
      same("nvidia-smi", ["mig", "-lgi"]);
      same("nvidia-smi", ["-i", "1", "-q"]);
    } finally {
      edit((s) => {
        delete s.gpus[1]!.lost;
      });
    }
  });

  it("lsmod, pgrep, nvidia-ctk and nvidia-container-cli, with driver clients held", () => {
    for (const held of [[], ["nvidia-persistenced", "nvidia_drm"]]) {
      edit((s) => {
        s.gpus[0]!.holders = held;
      });
      same("lsmod", []);
      same("pgrep", ["-x", "nvidia-persistenced"]);
      same("pgrep", ["-l", "nv-hostengine"]);
    }
    same("nvidia-ctk", ["--version"]);
    same("nvidia-container-cli", ["info"]);
  });

  it("dmesg: the kernel log in each time format", async () => {
    await appendKernelLog(stateDir, [
      "NVRM: Xid (PCI:0000:07:00): 31, pid=4242, name=crasher, Ch 00000008, intr 00000000",
    ]);
    for (const args of [[], ["-T"], ["--time-format", "iso"], ["-t"], ["-r"], ["-k", "-P"]])
      same("dmesg", args);
    assert.match(same("dmesg", []).stdout, /Xid \(PCI:0000:07:00\): 31, pid=4242/);
  });

  it("dcgmi: the refusal of a node without nv-hostengine; with one running, its own process", () => {
    const dmon = ["dmon", "-e", "1002,252", "-c", "1"];
    for (const args of [dmon, ["discovery", "-c"]])
      assert.match(same("dcgmi", args).stdout, /Unable to connect to host engine/);
    // The host engine answering, a field dmon lacks, a command not simulated: the tool's own.
    const not = (args: string[]) => assert.equal(resident("dcgmi", args).code, NOT_ANSWERED);
    not(["dmon", "-e", "9999"]);
    not(["diag", "-r", "1"]);
    edit((s) => {
      s.gpus[0]!.holders = ["nv-hostengine"];
    });
    try {
      not(dmon);
      assert.match(own("dcgmi", dmon).stdout, /^#Entity +SMACT +FBUSD\nID\nGPU 0 /);
    } finally {
      edit((s) => {
        s.gpus[0]!.holders = [];
      });
    }
  });

  it("leaves to the tool's own process what changes the node or is not the node's", () => {
    const not = (tool: string, args: string[]) =>
      assert.equal(resident(tool, args).code, NOT_ANSWERED, `${tool} ${args.join(" ")}`);
    not("nvidia-smi", ["mig", "-i", "0", "-dci"]);
    not("nvidia-smi", ["-i", "0", "-mig", "0"]);
    // The host's own processes are the real pgrep's to list.
    not("pgrep", ["-x", "sshd"]);
    not("nvidia-ctk", ["cdi", "generate"]);
    // Clearing the kernel log changes it; a wrong option's usage goes to stderr.
    for (const args of [["-c"], ["-C"], ["--read-clear"], ["--bogus"]]) not("dmesg", args);
    assert.match(own("dmesg", []).stdout, /pid=4242/, "the log was not cleared by asking");
    edit((s) => {
      s.noToolkit = true;
    });
    try {
      not("nvidia-ctk", ["--version"]);
      assert.equal(run(join(bin, "nvidia-ctk"), ["--version"]).code, 127);
    } finally {
      edit((s) => {
        delete s.noToolkit;
      });
    }
    assert.equal(readState(stateDir).gpus[0]!.gis.length, 3, "nothing was changed by asking");
  });

  it("a caller of another uid is left to its own process (its file permissions)", async () => {
    const port = Number(readFileSync(join(dir, PORT_FILE), "utf8"));
    const ask = (uid: number) =>
      new Promise<string>((resolve, reject) => {
        const s = createConnection(port, "127.0.0.1");
        let got = "";
        s.on("data", (b) => {
          got += b;
        });
        s.on("end", () => resolve(got));
        s.on("error", reject);
        s.end(
          [PROTOCOL_VERSION, "nvidia-smi", stateDir, "", "", String(uid), "1", "-L", ""].join("\0"),
        );
      });
    const mine = typeof process.getuid === "function" ? process.getuid() : 0;
    // Its own uid's answer is in a file for the wrapper to read (protocol.ts), gone once the
    // caller has closed the connection.
    const head = /^F 0 (\/\S+)\n$/.exec(await ask(mine));
    assert.ok(head, "an answer in a file");
    assert.ok(head[1]!.startsWith(join(dir, ANSWERS_DIR)), head[1]);
    const left = () => readdirSync(join(dir, ANSWERS_DIR));
    for (let i = 0; i < 50 && left().length > 0; i++) await sleep(100);
    assert.deepEqual(left(), [], "the answer's file is gone with its connection");
    assert.equal(await ask(mine + 1), "fallback\n");
  });

  it("a Slurm command's wrapper: the resident syncs the config, then Slurm's own command runs", () => {
    // A Slurm command of its own prints what it was given; the wrapper's own Node process would
    // run /usr/bin's instead, so this output can only come through the resident.
    const slurmBin = join(dir, "fake-slurm");
    const wrappers = join(dir, "slurm-wrappers");
    mkdirSync(slurmBin, { recursive: true });
    mkdirSync(wrappers, { recursive: true });
    const fake = join(slurmBin, "scontrol");
    writeFileSync(fake, '#!/bin/sh\necho "conf=$SLURM_CONF args=$*"\nexit 3\n');
    chmodSync(fake, 0o755);
    installSlurmTools(wrappers, dir, slurmBin);
    const r = run(join(wrappers, "scontrol"), ["show", "node", "sim01"]);
    assert.deepEqual(r, {
      code: 3,
      stdout: `conf=${join(dir, "slurm", "slurm.conf")} args=show node sim01\n`,
    });
  });

  it("without a resident simulator, every wrapper answers through the tool's own process", async () => {
    await stopResident(dir);
    try {
      for (const [tool, args] of [
        ["nvidia-smi", ["-L"]],
        ["lsmod", []],
        ["nvidia-ctk", ["--version"]],
      ] as const) {
        assert.equal(resident(tool, [...args]).code, NOT_ANSWERED, `${tool}: none answers`);
        const w = run(join(bin, tool), [...args]);
        const o = own(tool, [...args]);
        assert.deepEqual(w, o, `${tool} through its wrapper`);
      }
    } finally {
      await ensureResident(dir);
    }
  });
});

describe("a resident simulator whose cluster is gone", function () {
  this.timeout(30_000);
  it("leaves by itself (a test that deleted its cluster without `sim down`)", async () => {
    const dir = tempDir("resident-gone");
    writeFileSync(join(dir, "cluster.json"), '{"version":1,"nodes":[]}\n');
    await ensureResident(dir);
    const pid = readPid(join(dir, PID_FILE));
    assert.ok(pid && isAlive(pid));
    rmSync(join(dir, "cluster.json"));
    // It looks every 5 s; 15 s is a bound on the wait, not a measure.
    for (let t = 0; t < 15_000 && isAlive(pid); t += 100) await sleep(100);
    assert.equal(isAlive(pid), false);
  });
});
