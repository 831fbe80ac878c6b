// slicecheck.config.yaml, SLICECHECK_* variables and flags: precedence, origins, bad values with
// their file and line, durations with units, `-` for standard input, "did you mean", `sim -i`.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { main } from "../../src/cli/main.js";
import { durationSeconds } from "../../src/cli/options.js";
import { useCluster } from "../helpers/cluster.js";
import { tempDir } from "../helpers/tmp.js";

/** The CLI in-process in folder `cwd` with environment `env` (nothing of this shell's). */
async function cliIn(cwd: string, env: Record<string, string>, ...args: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await main(
    ["node", "slicecheck", ...args],
    {
      out: (l) => {
        stdout += `${l}\n`;
      },
      err: (l) => {
        stderr += `${l}\n`;
      },
    },
    { cwd, env },
  );
  return { code, stdout, stderr };
}

/** A project folder (with .git, where the search stops) holding `config` as its config file. */
function project(config: string | null): string {
  const dir = tempDir("config");
  mkdirSync(join(dir, ".git"));
  if (config !== null) writeFileSync(join(dir, "slicecheck.config.yaml"), config);
  return dir;
}

interface Shown {
  key: string;
  value: unknown;
  origin: string;
}
function setting(stdout: string, key: string): Shown {
  const s = (JSON.parse(stdout).settings as Shown[]).find((x) => x.key === key);
  assert.ok(s, `no setting ${key}`);
  return s;
}

const CONFIG = "# staging defaults\ninventory: inv/staging.yaml\nduration: 5m\ntolerance: 7%\n";

describe("config: slicecheck.config.yaml, SLICECHECK_* and flags", () => {
  it("takes the flag over the variable over the file over the default, and says which", async () => {
    const dir = project(CONFIG);
    const env = { SLICECHECK_DURATION: "90s" };
    const flag = await cliIn(dir, env, "config", "--json", "--duration", "1h30m");
    assert.equal(flag.code, 0, flag.stderr);
    assert.deepEqual(
      { v: setting(flag.stdout, "duration").value, o: setting(flag.stdout, "duration").origin },
      { v: 5400, o: "flag" },
    );
    const fromEnv = await cliIn(dir, env, "config", "--json");
    assert.equal(setting(fromEnv.stdout, "duration").value, 90);
    assert.equal(setting(fromEnv.stdout, "duration").origin, "env SLICECHECK_DURATION");
    const fromFile = await cliIn(dir, {}, "config", "--json");
    assert.equal(setting(fromFile.stdout, "duration").value, 300);
    assert.equal(setting(fromFile.stdout, "duration").origin, "slicecheck.config.yaml:3");
    assert.equal(setting(fromFile.stdout, "tolerance").value, 0.07);
    // Paths in the file are from the file's folder, whatever folder the command runs in.
    assert.equal(setting(fromFile.stdout, "inventory").value, join(dir, "inv/staging.yaml"));
    assert.equal(setting(fromFile.stdout, "db").origin, "default");
    assert.equal(setting(fromFile.stdout, "db").value, null);
  });

  it("prints each value with its origin, and the file it found from a subfolder", async () => {
    const dir = project(CONFIG);
    mkdirSync(join(dir, "a", "b"), { recursive: true });
    const r = await cliIn(join(dir, "a", "b"), { SLICECHECK_DB: "x.db" }, "config");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^config file: .*slicecheck\.config\.yaml$/m);
    assert.match(r.stdout, /^duration +300s +\/\S+\/slicecheck\.config\.yaml:3 /m);
    assert.match(r.stdout, /^db +x\.db +env SLICECHECK_DB /m);
    assert.match(r.stdout, /^suites +stress +default /m);
  });

  it("does not look above the repository root (the folder holding .git)", async () => {
    const outer = project(CONFIG);
    const repo = join(outer, "checkout");
    mkdirSync(join(repo, ".git"), { recursive: true });
    const r = await cliIn(repo, {}, "config", "--json");
    assert.equal(JSON.parse(r.stdout).file, null);
    assert.equal(setting(r.stdout, "duration").origin, "default");
  });

  it("applies the file to real commands: an inventory the file names is the one used", async () => {
    const dir = project("inventory: nope/inv.yaml\n");
    const r = await cliIn(dir, {}, "exec", "--", "true");
    assert.equal(r.code, 3);
    assert.match(r.stderr, new RegExp(`inventory ${join(dir, "nope/inv.yaml")} does not exist`));
    // and a variable beats it
    const e = await cliIn(
      dir,
      { SLICECHECK_INVENTORY: join(dir, "env.yaml") },
      "exec",
      "--",
      "true",
    );
    assert.match(e.stderr, /env\.yaml does not exist/);
  });

  const bad: { name: string; file: string; expect: RegExp }[] = [
    {
      name: "an unknown key, with the nearest one",
      file: "duration: 5m\n\ntolerence: 5\n",
      expect:
        /slicecheck\.config\.yaml:3: unknown setting 'tolerence' \(did you mean 'tolerance'\?\); the settings are inventory, nodes/,
    },
    {
      name: "a value of the wrong type",
      file: "inventory: inv.yaml\nconcurrency: lots\n",
      expect: /slicecheck\.config\.yaml:2: concurrency: expected a whole number; fix the value/,
    },
    {
      name: "a duration its flag would refuse",
      file: "db: a.db\nduration: 5 minutes\n",
      expect:
        /slicecheck\.config\.yaml:2: duration: --duration expects a duration from 1 s to 7 days .* got '5 minutes'; fix the value in the file/,
    },
    {
      name: "a tolerance out of range",
      file: "tolerance: 0.05\n",
      expect: /slicecheck\.config\.yaml:1: tolerance: --tolerance is in percent/,
    },
    {
      name: "broken YAML",
      file: "duration: 5m\nsuites: [stress\n",
      expect: /slicecheck\.config\.yaml:\d: not valid YAML: .*; fix the YAML syntax/,
    },
    {
      name: "not a mapping",
      file: "- duration\n",
      expect: /slicecheck\.config\.yaml:1: expected a mapping of settings/,
    },
  ];
  for (const b of bad) {
    it(`refuses ${b.name} with the file and line (exit 3, CONFIG)`, async () => {
      const dir = project(b.file);
      const r = await cliIn(dir, {}, "config");
      assert.equal(r.code, 3, r.stdout);
      assert.match(r.stderr, b.expect);
      assert.match(r.stderr, /\[CONFIG\]$/m);
    });
  }

  it("refuses a bad variable naming it, before any command work", async () => {
    const dir = project(null);
    const r = await cliIn(dir, { SLICECHECK_DURATION: "soon" }, "run", "-i", "x.yaml");
    assert.equal(r.code, 3);
    assert.match(r.stderr, /\$SLICECHECK_DURATION='soon': duration: --duration expects a duration/);
    assert.match(r.stderr, /fix or unset the variable \[CONFIG\]/);
  });

  it("leaves commands without settings alone when the file is broken", async () => {
    const dir = project("nonsense: [\n");
    const r = await cliIn(
      dir,
      {},
      "parse",
      "gpus",
      join(process.cwd(), "fixtures/captures/nvidia-smi_-L_A30-24GB_535.183.01_2dev.txt"),
    );
    assert.equal(r.code, 0, r.stderr);
  });
});

describe("durations: seconds or with units", () => {
  const cases: [string, number][] = [
    ["30", 30],
    ["1.5", 1.5],
    ["30s", 30],
    ["5m", 300],
    ["1h", 3600],
    ["1h30m", 5400],
    ["2d", 172_800],
    [" 10m ", 600],
  ];
  for (const [text, s] of cases)
    it(`reads '${text}' as ${s} s`, () => assert.equal(durationSeconds(text), s));
  for (const text of ["", "5min", "m", "5 m", "30m1h", "1m1m", "-5", "1e3", "5s3"])
    it(`refuses '${text}'`, () => assert.ok(Number.isNaN(durationSeconds(text))));
});

/** bin/slicecheck.js on the sources, as a real process. */
function spawnCli(args: string[]) {
  return spawn(process.execPath, ["--import", "tsx", "test/helpers/cli-entry.ts", ...args], {
    stdio: ["pipe", "pipe", "pipe"],
  });
}
function done(p: ReturnType<typeof spawnCli>) {
  let stdout = "";
  let stderr = "";
  p.stdout.on("data", (d) => {
    stdout += d;
  });
  p.stderr.on("data", (d) => {
    stderr += d;
  });
  return new Promise<{
    code: number | null;
    signal: string | null;
    stdout: string;
    stderr: string;
  }>((resolve) => p.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })));
}

describe("standard input and Ctrl-C (a real process)", function () {
  this.timeout(60_000);
  it("parse query - reads the capture from standard input", async () => {
    const p = spawnCli(["parse", "query", "-", "--json"]);
    const r = done(p);
    p.stdin.end(
      readFileSync(
        "fixtures/captures/nvidia-smi_query-gpu-csv_H100-PCIe-80GB_525.125.06_mig-mode-current.txt",
      ),
    );
    const { code, stdout, stderr } = await r;
    assert.equal(code, 0, stderr);
    assert.ok(JSON.parse(stdout).rows.length >= 1);
  });

  it("a parse error on standard input names <stdin> and the line", async () => {
    const p = spawnCli(["parse", "gpus", "-"]);
    const r = done(p);
    p.stdin.end(
      "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0d0831da-0c98-2717-6446-8acd91d39b65)\n  MIG 1g.10gb     Device  0: (UUID: MIG-5ff0d5",
    );
    const { code, stderr } = await r;
    assert.equal(code, 3);
    assert.match(stderr, /<stdin>: gpus: line 2: expected/);
  });

  it("plan - reads the layout from standard input; a bad one names <stdin> and its line", async () => {
    const p = spawnCli(["plan", "-", "-c", "all-1g.10gb", "--gpu", "H100", "--json"]);
    const r = done(p);
    p.stdin.end(readFileSync("fixtures/layouts/default.yaml"));
    const { code, stdout, stderr } = await r;
    assert.equal(code, 0, stderr);
    assert.equal(JSON.parse(stdout).devices[0].instances.length, 7);
    const bad = spawnCli(["plan", "-", "--gpu", "H100"]);
    const rb = done(bad);
    bad.stdin.end("version: v1\nmig-configs:\n  a: [\n");
    const b = await rb;
    assert.equal(b.code, 3);
    assert.match(b.stderr, /<stdin>:\d+: /);
  });

  it("Ctrl-C while waiting exits 130", async () => {
    const p = spawnCli(["parse", "gpus", "-"]);
    const r = done(p);
    // Waiting on standard input that never ends; tsx takes a while to start on a loaded machine.
    await new Promise((res) => setTimeout(res, 6000));
    p.kill("SIGINT");
    const { code, signal } = await r;
    assert.deepEqual({ code, signal }, { code: 130, signal: null });
  });
});

describe("did you mean, for commands and kinds", () => {
  it("suggests the nearest command", async () => {
    const r = await cliIn(project(null), {}, "doctr");
    assert.equal(r.code, 3);
    assert.match(
      r.stderr,
      /unknown command 'doctr' \(did you mean 'doctor'\?\); the commands are exec, inventory, doctor/,
    );
  });
  it("suggests a sim subcommand with its parent", async () => {
    const r = await cliIn(project(null), {}, "sim", "stauts");
    assert.equal(r.code, 3);
    assert.match(r.stderr, /unknown command 'stauts' \(did you mean 'sim status'\?\)/);
  });
  it("suggests the nearest option of the command", async () => {
    const r = await cliIn(project(null), {}, "run", "--duraton", "5m");
    assert.equal(r.code, 3);
    assert.match(r.stderr, /unknown option '--duraton'\n\(Did you mean --duration\?\)/);
  });
  it("suggests nothing for a name far from every command", async () => {
    const r = await cliIn(project(null), {}, "frobnicate");
    assert.match(r.stderr, /unknown command 'frobnicate'; the commands are/);
  });
  it("suggests the nearest parse kind", async () => {
    const r = await cliIn(project(null), {}, "parse", "lgiq", "x.txt");
    assert.match(r.stderr, /unknown parse kind 'lgiq' \(did you mean 'lgip'\?\)/);
  });
  it("suggests the nearest --faults name", async () => {
    const r = await cliIn(
      project(null),
      {},
      "run",
      "-i",
      "inventory/demo-cluster.yaml",
      "--suites",
      "isolation",
      "--faults",
      "oom,crsh",
    );
    assert.match(r.stderr, /unknown fault 'crsh' \(did you mean 'crash'\?\)/);
  });
});

describe("sim subcommands take -i", function () {
  this.timeout(120_000);
  const c = useCluster(1);
  it("sim status -i PATH reads that cluster", async () => {
    const r = await cliIn(process.cwd(), {}, "sim", "status", "-i", c.inventoryPath, "--json");
    assert.equal(r.code, 0, r.stderr);
    const nodes = JSON.parse(r.stdout).nodes;
    assert.equal(nodes.length, 1);
    assert.equal(nodes[0].port, c.inventory.nodes[0]!.port);
  });
  it("ignores SLICECHECK_INVENTORY (a real inventory is never taken for a simulated one)", async () => {
    const r = await cliIn(
      process.cwd(),
      { SLICECHECK_INVENTORY: c.inventoryPath },
      "sim",
      "status",
      "-i",
      c.inventoryPath,
      "--json",
    );
    assert.equal(r.code, 0, r.stderr);
    const dir = project(null);
    const none = await cliIn(
      dir,
      { SLICECHECK_INVENTORY: c.inventoryPath },
      "sim",
      "status",
      "--json",
    );
    // the default inventory/sim.yaml, not the variable's cluster
    const ports = (JSON.parse(none.stdout).nodes as { port: number }[]).map((n) => n.port);
    assert.ok(!ports.includes(c.inventory.nodes[0]!.port!), none.stdout);
  });
});
