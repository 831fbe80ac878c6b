// Discovery started beside the node lock (NodeSession.discoverBesideLock): its login is paid
// beside the lock's, and its reads wait on the node until the lease is this run's. Local
// transport, a node state folder of its own, and an nvidia-smi first on PATH that answers with
// real captures (an H200, MIG disabled) and writes down, at each call, the lease it finds.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { leaseAwait } from "../../src/harness/lease-script.js";
import { NodeSession } from "../../src/harness/session.js";
import { readTopology } from "../../src/store/topology.js";
import { runTagFor } from "../../src/transport/managed.js";
import { builtins } from "../../src/workloads/node-run.js";
import { nodeSpec } from "../helpers/node.js";
import { notingTools } from "../helpers/noting-tools.js";
import { taggedPids, waitFor } from "../helpers/procs.js";
import { tempDir } from "../helpers/tmp.js";

const node = nodeSpec("early01", { host: "localhost", transport: "local" });
const CAPTURES = join(import.meta.dirname, "..", "..", "fixtures", "captures");
const LISTING = join(CAPTURES, "nvidia-smi_-L_H200_580.159.04_whole-gpu.txt");
const TABLE = join(CAPTURES, "nvidia-smi_default-table_H200_580.159.04_mig-disabled.txt");

/** An nvidia-smi of captures that logs `ARGS | LEASE LINE` (or `none`) at each call, in one
 * write: the four reads of a discovery run side by side. */
function fakeNvidiaSmi(bin: string, log: string): void {
  mkdirSync(bin, { recursive: true });
  const script = `#!/bin/sh
l=$(cat "$SLICECHECK_STATE_DIR/node.lease" 2>/dev/null) || l=none
printf '%s | %s\n' "$*" "$l" >> '${log}'
case "$1" in
  -L) tail -n +2 '${LISTING}' ;;
  --query-gpu=*) echo "0, None, 143771" ;;
  "") tail -n +2 '${TABLE}' ;;
  *) echo "No MIG-enabled devices found."; exit 6 ;;
esac
`;
  writeFileSync(join(bin, "nvidia-smi"), script);
  chmodSync(join(bin, "nvidia-smi"), 0o755);
  // The built-in workloads' check asks the node's nvcc: logged the same way, and none here.
  const nvcc = `#!/bin/sh
l=$(cat "$SLICECHECK_STATE_DIR/node.lease" 2>/dev/null) || l=none
printf 'nvcc %s | %s\\n' "$*" "$l" >> '${log}'
exit 1
`;
  writeFileSync(join(bin, "nvcc"), nvcc);
  chmodSync(join(bin, "nvcc"), 0o755);
}

/** The node's wait for `tag`'s lease, then `then`, under `shell` and at most 0.3 s (the wait
 * polls every 20 ms for LEASE_AWAIT_S; `timeout` ends one that never passes): its stdout. */
function afterWait(tag: string, shell: string, then = "echo through", path = process.env.PATH) {
  return spawnSync("timeout", ["0.3", shell, "-c", `${leaseAwait(tag)} ${then}`], {
    encoding: "utf8",
    env: { ...process.env, PATH: path },
  }).stdout;
}

describe("node session: discovery beside the lock", function () {
  this.timeout(30_000);
  const dir = tempDir("early-discovery");
  const saved = { PATH: process.env.PATH, STATE: process.env.SLICECHECK_STATE_DIR };
  let log = "";
  let n = 0;
  const calls = () => {
    try {
      return readFileSync(log, "utf8").trimEnd().split("\n").filter(Boolean);
    } catch {
      return [];
    }
  };
  beforeEach(() => {
    const here = join(dir, `case${++n}`);
    log = join(here, "calls.log");
    fakeNvidiaSmi(join(here, "bin"), log);
    mkdirSync(join(here, "state"), { recursive: true });
    process.env.PATH = `${join(here, "bin")}:${saved.PATH}`;
    process.env.SLICECHECK_STATE_DIR = join(here, "state");
  });
  afterEach(() => {
    process.env.PATH = saved.PATH;
    if (saved.STATE === undefined) delete process.env.SLICECHECK_STATE_DIR;
    else process.env.SLICECHECK_STATE_DIR = saved.STATE;
  });

  it("reads once the lease is this run's, and discover() takes that answer", async () => {
    const runId = "sc-test-early1";
    const s = new NodeSession(node, runId);
    let catalogue: Promise<unknown> = Promise.resolve();
    let build: Promise<unknown> = Promise.resolve();
    // The records' catalogue reads and the workloads' build check too (run-tasks.ts), with
    // the session's options for them.
    const besideLock = (x: NodeSession) => {
      catalogue = readTopology(x, x.readsBesideLock());
      build = builtins(x, x.readsBesideLock()).catch(() => null);
    };
    try {
      await s.open({ lock: true, command: "test", discoverEarly: true, besideLock });
      await catalogue;
      await build;
      const inv = await s.discover();
      assert.equal(inv.instances.length, 1);
      assert.equal(inv.driver, "580.159.04");
      const seen = calls();
      assert.equal(seen.filter((l) => l.startsWith("-L ")).length, 1, seen.join("\n"));
      assert.equal(seen.filter((l) => l.startsWith("mig -lgip")).length, 2, seen.join("\n"));
      assert.ok(
        seen.some((l) => l.startsWith("nvcc ")),
        `the build check never asked nvcc: ${seen}`,
      );
      const tag = runTagFor(runId, node.name);
      for (const l of seen) assert.match(l, new RegExp(` held ${tag}$`), "a read before the lease");
    } finally {
      await s.close();
    }
  });

  it("a lock refused: no read runs, and the waiting reads and the supervisor are stopped", async () => {
    const holder = new NodeSession(node, "sc-test-early-holder");
    await holder.open({ lock: true, command: "another controller" });
    const runId = "sc-test-early2";
    const s = new NodeSession(node, runId);
    try {
      // As a run starts them: the catalogue's reads, the workloads' build check, and the first
      // phase's supervisor.
      const besideLock = (x: NodeSession) => {
        void readTopology(x, x.readsBesideLock());
        builtins(x, x.readsBesideLock()).catch(() => {});
        x.prepareSupervisor();
      };
      await assert.rejects(
        s.open({ lock: true, command: "test", discoverEarly: true, besideLock }),
        (e: { code?: string }) => e.code === "NODE_LOCKED",
      );
      const mine = `SLICECHECK_RUN=${runTagFor(runId, node.name)}`;
      assert.ok(await waitFor(() => taggedPids(mine).length === 0, 5_000), "the read still waits");
      assert.deepEqual(calls(), [], "nvidia-smi ran on a node another run holds");
    } finally {
      await s.close();
      await holder.close();
    }
  });

  it("where the wait cannot read the lease, reads once the lock has answered", async () => {
    // A lease that is no file: the holder's writes go into the folder, and the wait can read
    // nothing, as under a state folder the login may not enter.
    mkdirSync(join(process.env.SLICECHECK_STATE_DIR!, "node.lease"));
    const s = new NodeSession(node, "sc-test-early4");
    try {
      await s.open({ lock: true, command: "test", discoverEarly: true });
      const inv = await s.discover();
      assert.equal(inv.driver, "580.159.04");
      const seen = calls();
      assert.equal(seen.filter((l) => l.startsWith("-L ")).length, 1, seen.join("\n"));
    } finally {
      await s.close();
    }
  });

  it("the wait gives up at once where it cannot read the lease, or see its folder", () => {
    const state = process.env.SLICECHECK_STATE_DIR!;
    const script = `${leaseAwait("sc-test-early5@early01")} echo through`;
    // As a user the folder shuts out (root passes every permission check).
    const asUser = (dir: string) => {
      const env = { ...process.env, SLICECHECK_STATE_DIR: dir };
      const argv = process.getuid?.() === 0 ? ["runuser", "-u", "nobody", "--"] : [];
      return spawnSync("timeout", ["5", ...argv, "sh", "-c", script], { env, encoding: "utf8" });
    };
    // The folders above stay open to that user (mkdtemp's is not): only `shut` keeps it out.
    chmodSync(dir, 0o755);
    const shut = join(state, "shut");
    mkdirSync(shut, { mode: 0o700 });
    writeFileSync(join(shut, "node.lease"), "4 9999999999 held sc-test-early5@early01\n");
    chmodSync(shut, process.getuid?.() === 0 ? 0o700 : 0o000);
    const r = asUser(shut);
    chmodSync(shut, 0o700);
    assert.equal(r.status, 75, `${r.stdout}${r.stderr}`);
    assert.match(r.stderr, / unreadable$/m);
    // Under a folder that shuts it out, the state folder looks as if it were not made yet.
    chmodSync(shut, process.getuid?.() === 0 ? 0o700 : 0o000);
    const under = asUser(join(shut, "inner", "state"));
    chmodSync(shut, 0o700);
    assert.equal(under.status, 75, `${under.stdout}${under.stderr}`);
    assert.match(under.stderr, / unreadable$/m);
    // A folder not made yet under open ones is waited for: the lock makes it.
    const absent = spawnSync("timeout", ["0.5", "sh", "-c", script], {
      env: { ...process.env, SLICECHECK_STATE_DIR: join(state, "not-yet", "state") },
      encoding: "utf8",
    });
    assert.equal(absent.status, 124, `${absent.stdout}${absent.stderr}`);
    mkdirSync(join(state, "odd", "node.lease"), { recursive: true });
    const odd = asUser(join(state, "odd"));
    assert.equal(odd.status, 75, `${odd.stdout}${odd.stderr}`);
  });

  it("the wait on the node lets nothing through but this run's lease, held and unexpired", () => {
    const tag = "sc-test-early3@early01";
    const lease = join(process.env.SLICECHECK_STATE_DIR!, "node.lease");
    const now = Math.floor(Date.now() / 1000);
    const gate = (shell: string) => afterWait(tag, shell);
    for (const shell of ["sh", "bash"]) {
      writeFileSync(lease, `4 ${now + 60} held ${tag}\n`);
      assert.equal(gate(shell), "through\n", `${shell}: this run's lease`);
      for (const other of [
        `4 ${now + 60} held sc-other@early01`,
        `4 ${now - 5} held ${tag}`,
        `4 ${now + 60} released ${tag}`,
        "garbage",
      ]) {
        writeFileSync(lease, `${other}\n`);
        assert.equal(gate(shell), "", `${shell}: went through on '${other}'`);
      }
    }
  });

  it("the wait under bash starts no process at its turns, and hands its command no extra fd", () => {
    const tag = "sc-test-early7@early01";
    const lease = join(process.env.SLICECHECK_STATE_DIR!, "node.lease");
    // sleep and date noted at each call: under sh a sleep every 20-ms turn.
    const tools = notingTools(["sleep", "date"]);
    const gate = (shell: string, then: string) => afterWait(tag, shell, then, tools.path);
    const noted = () => tools.calls();
    const now = Math.floor(Date.now() / 1000);
    writeFileSync(lease, `4 ${now + 60} held sc-other@early01\n`);
    for (const shell of ["bash", "sh"]) {
      tools.clear();
      assert.equal(gate(shell, "echo through"), "");
      if (shell === "bash") assert.deepEqual(noted(), [], "bash started a process at a turn");
      else assert.ok(noted().filter((c) => c === "sleep").length >= 3, `sh: ${noted()}`);
    }
    writeFileSync(lease, `4 ${now + 60} held ${tag}\n`);
    tools.clear();
    // The command sees the fds it would see without the wait: nothing of the wait's pipe.
    const fds = (out: string) => out.trim().split("\n").map(Number);
    const plain = spawnSync("bash", ["-c", "exec ls /proc/self/fd"], { encoding: "utf8" }).stdout;
    assert.deepEqual(fds(gate("bash", "exec ls /proc/self/fd")), fds(plain));
    assert.deepEqual(noted(), []);
  });

  it("the wait under sh reads the clock once the lease is this run's, not at every turn", () => {
    const tag = "sc-test-early6@early01";
    const lease = join(process.env.SLICECHECK_STATE_DIR!, "node.lease");
    // date noted at each call: a date process at every 20-ms turn was most of the wait's
    // processes on the node (reads beside the lock run under `sh -c` where the node has no bash).
    const tools = notingTools(["date"]);
    const gate = () => afterWait(tag, "sh", "echo through", tools.path);
    const count = () => tools.calls().length;
    const now = Math.floor(Date.now() / 1000);
    writeFileSync(lease, `4 ${now + 60} held sc-other@early01\n`);
    assert.equal(gate(), "");
    assert.equal(count(), 0, "the clock was read while another run held the lease");
    writeFileSync(lease, `4 ${now + 60} held ${tag}\n`);
    assert.equal(gate(), "through\n");
    assert.equal(count(), 1, "the clock was not read once, as the lease became this run's");
  });
});
