// `slicecheck inventory`: what slicecheck resolved, and from where, without connecting.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { cli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

const dir = tempDir("invcmd");

describe("slicecheck inventory", () => {
  // Addresses nothing listens on: a command that connected would fail or hang. One address per
  // node: two nodes at one address:port are refused (one machine under two names).
  const inv = join(dir, "hosts");
  writeFileSync(
    inv,
    [
      "ctl ansible_connection=local",
      "[gpus]",
      "gpu01 ansible_host=192.0.2.1 ansible_user=ops",
      "[gpus:vars]",
      "ansible_port=2222",
      "ansible_become=true",
      "ansible_ssh_common_args='-J jump@198.51.100.1:2022 -o ServerAliveInterval=5'",
      "[gpus]",
      "gpu02 ansible_host=192.0.2.2 ansible_user=ops",
      "gpu03 ansible_host=192.0.2.3 ansible_user=ops",
      "",
    ].join("\n"),
  );

  it("--list --json gives every node, its groups and the warnings", async () => {
    const r = await cli("inventory", "-i", inv, "--list", "--json");
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout);
    assert.equal(j.format, "ansible");
    assert.deepEqual(
      j.nodes.map((n: { name: string }) => n.name),
      ["ctl", "gpu01", "gpu02", "gpu03"],
    );
    const g = j.nodes[1];
    assert.deepEqual(
      [g.host, g.port, g.user, g.become, g.transport, g.jump, g.groups],
      [
        "192.0.2.1",
        2222,
        "ops",
        "sudo",
        "ssh",
        [{ name: "jump@198.51.100.1:2022", host: "198.51.100.1", port: 2022, user: "jump" }],
        ["all", "gpus"],
      ],
    );
    assert.equal(j.nodes[0].transport, "local");
    assert.match(
      j.warnings.join("\n"),
      /hosts:7: ansible_ssh_common_args: -o ServerAliveInterval is not used/,
    );
    assert.match(r.stderr, /warning: .*ServerAliveInterval/);
  });

  it("--host names where each value came from", async () => {
    const r = await cli("inventory", "-i", inv, "--host", "gpu02");
    assert.equal(r.code, 0, r.stderr);
    const line = (k: string) => r.stdout.split("\n").find((l) => l.trimStart().startsWith(k)) ?? "";
    const file = resolve(inv).replace(`${process.cwd()}/`, "");
    assert.match(line("port"), new RegExp(`2222 +from ${file}:5 \\(ansible_port\\)`));
    assert.match(line("user"), new RegExp(`ops +from ${file}:9 \\(ansible_user\\)`));
    assert.match(
      line("via"),
      /jump@198\.51\.100\.1:2022 +from .*:7 \(ansible_ssh_common_args: -J jump@198\.51\.100\.1:2022\)/,
    );
    assert.match(line("transport"), /ssh +from default/);
  });

  it("prints a table by default and refuses an unknown --host with exit 3", async () => {
    const r = await cli("inventory", "-i", inv);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^NODE +ADDRESS +USER +BECOME +VIA/);
    assert.match(r.stdout, /\ngpu01 +192\.0\.2\.1:2222 +ops +sudo +jump@198\.51\.100\.1:2022\n/);
    assert.match(r.stdout, /\nctl +- +\S+ +- +local\n/);
    const bad = await cli("inventory", "-i", inv, "--host", "gpu09");
    assert.equal(bad.code, 3);
    assert.match(bad.stderr, /--host "gpu09": no such node/);
  });
});
