// `slicecheck exec` as pdsh users expect it (issue 25): lines stream as the nodes print them,
// `node: ` without padding, -N, -w, -g, -f/--fanout, an unknown -x name ignored with a
// warning, pdsh's `exited with exit code N` line, and Ctrl-C listing what still ran (exit 130).
import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";

/** bin/slicecheck.js on the sources, as a real process (signals, output as it comes). */
function spawnCli(args: string[]): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ["--import", "tsx", "test/helpers/cli-entry.ts", ...args], {
    stdio: ["pipe", "pipe", "pipe"],
  });
}

interface Watched {
  stdout: () => string;
  stderr: () => string;
  /** Resolves once stdout holds a line matching `re`; `exited` says whether the process had
   * already exited by then. */
  line: (re: RegExp) => Promise<{ exited: boolean; stdout: string }>;
  done: Promise<{ code: number | null; signal: string | null }>;
  kill: (sig: NodeJS.Signals) => void;
}

function watch(p: ChildProcessWithoutNullStreams): Watched {
  let stdout = "";
  let stderr = "";
  let exited = false;
  const waiters: { re: RegExp; resolve: (v: { exited: boolean; stdout: string }) => void }[] = [];
  const check = () => {
    for (const w of [...waiters]) {
      if (!w.re.test(stdout)) continue;
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve({ exited, stdout });
    }
  };
  p.stdout.on("data", (d) => {
    stdout += d;
    check();
  });
  p.stderr.on("data", (d) => {
    stderr += d;
  });
  const done = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    p.on("close", (code, signal) => {
      exited = true;
      for (const w of waiters.splice(0))
        w.resolve({ exited: true, stdout: `${stdout}\n(no such line: ${w.re})` });
      resolve({ code, signal });
    }),
  );
  return {
    stdout: () => stdout,
    stderr: () => stderr,
    line: (re) =>
      new Promise((resolve) => {
        waiters.push({ re, resolve });
        check();
      }),
    done,
    kill: (sig) => p.kill(sig),
  };
}

/** Pids of this machine's processes whose command line is exactly `argv` (the nodes are local). */
function pidsRunning(argv: string[]): number[] {
  const want = `${argv.join("\0")}\0`;
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return readFileSync(`/proc/${d}/cmdline`, "latin1") === want;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Each node's lines of `out`, in the order they came. */
function byNode(out: string): Record<string, string[]> {
  const r: Record<string, string[]> = {};
  for (const l of out.trim().split("\n")) {
    const [name, text] = [l.slice(0, l.indexOf(": ")), l.slice(l.indexOf(": ") + 2)];
    r[name] = [...(r[name] ?? []), text];
  }
  return r;
}

const onNode = (ip: string, then: string, otherwise: string) =>
  `case "$SSH_CONNECTION" in *" ${ip} "*) ${then};; *) ${otherwise};; esac`;

describe("slicecheck exec as pdsh users expect (real sshd)", function () {
  this.timeout(120_000);
  const c = useCluster(3);

  it("streams a node's first line while its command still runs", async () => {
    // The command prints, then waits (sleeping) until the test has seen that line: it can only
    // end well if the line came while it ran. Buffered output would come only at the
    // --timeout, too late: the node would then exit 124, never print `second`.
    const go = join(c.dir, "stream-go");
    rmSync(go, { force: true });
    const p = watch(
      spawnCli([
        "exec",
        "-i",
        c.inventoryPath,
        "-w",
        "sim02",
        "--timeout",
        "20",
        "--",
        `echo first; while [ ! -e ${go} ]; do sleep 0.2; done; echo second`,
      ]),
    );
    const first = await p.line(/^sim02: first$/m);
    assert.equal(first.exited, false, first.stdout);
    assert.doesNotMatch(first.stdout, /second/);
    writeFileSync(go, "");
    const { code } = await p.done;
    assert.equal(code, 0, p.stderr());
    assert.equal(p.stdout(), "sim02: first\nsim02: second\n");
  });

  it("prints lines in the order they arrive, each node's own in its order", async () => {
    // sim01 (127.0.0.10) finishes last, so its line comes last.
    const r = await cli(
      "exec",
      "-i",
      c.inventoryPath,
      "--",
      `${onNode("127.0.0.10", "sleep 2", "true")}; echo done`,
    );
    const lines = r.stdout.trim().split("\n");
    assert.equal(lines.at(-1), "sim01: done");
    assert.deepEqual([...lines].sort(), ["sim01: done", "sim02: done", "sim03: done"]);
  });

  it("-N drops the prefix; names are not padded unless --align", async () => {
    const inv = join(c.dir, "long.yaml");
    const n = c.inventory.nodes[0]!;
    const m = c.inventory.nodes[1]!;
    writeFileSync(
      inv,
      `defaults: {user: ${n.user}, identity_file: ${n.identityFile}, known_hosts: ${n.knownHosts}, ssh_config: none}\nnodes:\n  a: {host: ${n.host}, port: ${n.port}}\n  longer: {host: ${m.host}, port: ${m.port}}\n`,
    );
    const plain = await cli("exec", "-i", inv, "--", "echo hi");
    assert.deepEqual(plain.stdout.trim().split("\n").sort(), ["a: hi", "longer: hi"]);
    const aligned = await cli("exec", "-i", inv, "--align", "--", "echo hi");
    assert.deepEqual(aligned.stdout.trim().split("\n").sort(), ["a     : hi", "longer: hi"]);
    const bare = await cli("exec", "-i", inv, "-N", "--", "echo hi");
    assert.equal(bare.code, 0, bare.stderr);
    assert.equal(bare.stdout, "hi\nhi\n");
  });

  it("a node that exits non-zero gets pdsh's `exited with exit code N` line", async () => {
    const r = await cli(
      "exec",
      "-i",
      c.inventoryPath,
      "--",
      `${onNode("127.0.0.11", "echo bye; exit 7", "echo ok")}`,
    );
    assert.equal(r.code, 7, "the exit code rules stay: the worst node's");
    assert.deepEqual(byNode(r.stdout), { sim01: ["ok"], sim02: ["bye"], sim03: ["ok"] });
    const ends = r.stderr.split("\n").filter((l) => /exit code/.test(l));
    assert.deepEqual(ends, ["sim02: exited with exit code 7"]);
  });

  it("-w and -g select nodes as pdsh does; -f/--fanout bounds nodes at once", async () => {
    const inv = join(c.dir, "groups.yaml");
    const n = c.inventory.nodes[0]!;
    const nodes = c.inventory.nodes
      .map((x) => `  ${x.name}: {host: ${x.host}, port: ${x.port}}`)
      .join("\n");
    writeFileSync(
      inv,
      `defaults: {user: ${n.user}, identity_file: ${n.identityFile}, known_hosts: ${n.knownHosts}, ssh_config: none}\nnodes:\n${nodes}\ngroups:\n  edge: [sim01, sim03]\n`,
    );
    const names = (out: string) => Object.keys(byNode(out)).sort();
    const w = await cli("exec", "-i", inv, "-w", "sim0[2-3]", "--", "echo x");
    assert.deepEqual(names(w.stdout), ["sim02", "sim03"]);
    const g = await cli("exec", "-i", inv, "-g", "edge", "--", "echo x");
    assert.deepEqual(names(g.stdout), ["sim01", "sim03"]);
    const gw = await cli("exec", "-i", inv, "-g", "edge", "-w", "sim02", "--", "echo x");
    assert.deepEqual(names(gw.stdout), ["sim01", "sim02", "sim03"]);
    const bad = await cli("exec", "-i", inv, "-g", "nosuch", "--", "echo x");
    assert.equal(bad.code, 3);
    assert.match(bad.stderr, /no group 'nosuch'/);
    // Each node leaves a file while it runs and counts the files: with a fanout of 1 it only
    // ever sees its own; with 3 the nodes overlap and see each other's (the check can fail).
    const marks = join(c.dir, "fanout-marks");
    const count = `mkdir -p ${marks}; touch ${marks}/$$; sleep 2; n=$(ls ${marks} | wc -l); rm -f ${marks}/$$; echo n=$n`;
    const f1 = await cli("exec", "-i", inv, "-f", "1", "--", count);
    assert.deepEqual(byNode(f1.stdout), { sim01: ["n=1"], sim02: ["n=1"], sim03: ["n=1"] });
    const f3 = await cli("exec", "-i", inv, "--fanout", "3", "--", count);
    assert.match(f3.stdout, /n=[23]/);
    const f0 = await cli("exec", "-i", inv, "--fanout", "0", "--", "true");
    assert.equal(f0.code, 3);
    assert.match(f0.stderr, /--fanout expects a whole number from 1 to 1024/);
  });

  it("-x of a name the inventory lacks is ignored with a warning; --nodes stays strict", async () => {
    const x = await cli("exec", "-i", c.inventoryPath, "-x", "sim02,sim09", "--", "echo x");
    assert.equal(x.code, 0, x.stderr);
    assert.deepEqual(Object.keys(byNode(x.stdout)).sort(), ["sim01", "sim03"]);
    assert.match(
      x.stderr,
      /slicecheck: warning: --exclude "sim09": no node named 'sim09' .*; ignored, as pdsh ignores an unknown -x host/,
    );
    // A range that runs past the inventory still leaves out the nodes it does name.
    const r = await cli("exec", "-i", c.inventoryPath, "-x", "sim0[2-5]", "--", "echo x");
    assert.deepEqual(Object.keys(byNode(r.stdout)), ["sim01"]);
    assert.match(r.stderr, /no node named 'sim04'/);
    const w = await cli("exec", "-i", c.inventoryPath, "-w", "sim09", "--", "echo x");
    assert.equal(w.code, 3);
    assert.match(w.stderr, /--nodes "sim09": no node named 'sim09'/);
  });

  it("Ctrl-C lists the nodes still running, stops their commands and exits 130", async () => {
    const p = watch(
      spawnCli([
        "exec",
        "-i",
        c.inventoryPath,
        "--",
        onNode("127.0.0.10", "echo quick", "echo started; sleep 599.75; echo never"),
      ]),
    );
    await p.line(/^sim02: started$/m);
    await p.line(/^sim03: started$/m);
    await p.line(/^sim01: quick$/m);
    // sim01's end may still be on its way to the CLI: give it the time to be counted done.
    await new Promise((res) => setTimeout(res, 1000));
    p.kill("SIGINT");
    const { code } = await p.done;
    assert.equal(code, 130, p.stderr());
    const err = p.stderr();
    assert.match(err, /^sim02: command in progress$/m);
    assert.match(err, /^sim03: command in progress$/m);
    assert.doesNotMatch(err, /sim01: command in progress/);
    assert.match(err, /slicecheck: interrupted \(SIGINT\): still running on sim\[02-03\] \(2\)/);
    assert.doesNotMatch(p.stdout(), /never/);
    assert.deepEqual(pidsRunning(["sleep", "599.75"]), [], "the nodes' commands were stopped");
  });

  it("Ctrl-C with --json still gives what each node had printed", async () => {
    const p = watch(
      spawnCli([
        "exec",
        "-i",
        c.inventoryPath,
        "-w",
        "sim03",
        "--json",
        "--",
        "echo partial; sleep 599.5",
      ]),
    );
    // Nothing reaches stdout before the end with --json: wait for the node's sleep instead.
    for (let i = 0; i < 300 && pidsRunning(["sleep", "599.5"]).length === 0; i++)
      await new Promise((res) => setTimeout(res, 100));
    assert.equal(pidsRunning(["sleep", "599.5"]).length, 1, "the command started");
    p.kill("SIGINT");
    const { code } = await p.done;
    assert.equal(code, 130, p.stderr());
    const j = JSON.parse(p.stdout()) as {
      interrupted: string;
      nodes: { name: string; stdout: string; error: string }[];
    };
    assert.equal(j.interrupted, "SIGINT");
    assert.equal(j.nodes[0]!.stdout, "partial\n");
    assert.match(j.nodes[0]!.error, /\[INTERRUPTED\] sim03: interrupted \(SIGINT\)/);
    assert.match(p.stderr(), /^sim03: command in progress$/m);
    assert.deepEqual(pidsRunning(["sleep", "599.5"]), []);
  });
});
