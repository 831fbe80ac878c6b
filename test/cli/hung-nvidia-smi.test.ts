// A hung nvidia-smi (a wedged driver) is a timeout of that command, never "tool missing" and
// never a missing `timeout`: one simulated node's nvidia-smi is replaced by a program that
// never answers (a wrapper first on the node's PATH), beside a healthy node.
import assert from "node:assert/strict";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { simNodeRecord } from "../../sim/src/cluster.js";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";

describe("a hung nvidia-smi is a COMMAND_TIMEOUT of nvidia-smi (real sshd)", function () {
  this.timeout(180_000);
  const c = useCluster(2);

  before(() => {
    const bin = join(simNodeRecord(c.inventoryPath, "sim02").dir, "bin", "nvidia-smi");
    writeFileSync(bin, "#!/bin/sh\n# a wedged driver: nvidia-smi never returns\nexec sleep 3600\n");
    chmodSync(bin, 0o755);
  });

  it("doctor: names nvidia-smi and the timeout on that node; the other node is fine", async () => {
    const r = await cli("doctor", "-i", c.inventoryPath, "--timeout", "8", "--json");
    assert.equal(r.code, 2, r.stderr);
    const nodes = JSON.parse(r.stdout).nodes as { name: string; problems: string[] }[];
    const [ok, hung] = nodes;
    assert.deepEqual(ok!.problems, []);
    assert.equal(hung!.name, "sim02");
    assert.deepEqual(hung!.problems, [
      "nvidia-smi --query-gpu did not answer within 4 s and was killed: a hung driver or GPU? Check nvidia-smi and the kernel log on the node [COMMAND_TIMEOUT]",
    ]);
  });

  it("run: the node's discovery is a COMMAND_TIMEOUT of `nvidia-smi -L`, not TOOL_MISSING", async () => {
    const out = join(c.dir, "run-out");
    const r = await cli(
      "run",
      "-i",
      c.inventoryPath,
      "--duration",
      "1",
      "--out",
      out,
      "--db",
      join(c.dir, "r.db"),
      "--no-allure",
      "--json",
    );
    assert.equal(r.code, 2, r.stderr);
    const s = JSON.parse(r.stdout) as {
      checks: { suite: string; node: string | null; status: string; message: string }[];
    };
    assert.deepEqual(
      s.checks.filter((x) => x.suite === "stress").map((x) => [x.node, x.status]),
      [
        ["sim01", "passed"],
        ["sim02", "broken"],
      ],
      "the healthy node ran its stress; the hung one could not",
    );
    const problems = s.checks.filter((x) => x.suite === "run");
    assert.equal(problems.length, 1);
    assert.equal(problems[0]!.node, "sim02");
    assert.match(
      problems[0]!.message,
      /^\[COMMAND_TIMEOUT\] sim02: `nvidia-smi -L` did not answer within 30 s while reading the GPUs, and was killed/,
    );
    assert.doesNotMatch(problems[0]!.message, /TOOL_MISSING/);
  });
});
