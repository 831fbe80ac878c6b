import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { isSlicecheckError } from "../../src/errors.js";
import { loadInventory } from "../../src/inventory/load.js";
import { tempDir } from "../helpers/tmp.js";

const dir = tempDir("inv");
let n = 0;
function write(text: string, name = `inv${n++}.yaml`): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}
function failure(text: string): { code: string; message: string } {
  const p = write(text);
  try {
    loadInventory(p, { sshConfig: null });
  } catch (e) {
    assert.ok(isSlicecheckError(e), `expected a SlicecheckError, got ${String(e)}`);
    return { code: e.code, message: e.message.replaceAll(p, "FILE") };
  }
  assert.fail("the inventory was accepted");
}

describe("inventory: native format", () => {
  it("applies defaults, resolves relative paths from the file's folder and expands ~", () => {
    const p = write(
      [
        "defaults:",
        "  user: admin",
        "  identity_file: keys/id",
        "  known_hosts: ~/kh",
        "nodes:",
        "  gpu01: {host: 10.0.0.1, tags: [a100]}",
        "  gpu02:",
        "    host: 10.0.0.2",
        "    port: 2222",
        "    user: other",
        "    become: sudo",
        "    slurm_node: n2",
        "  gpu03:",
        "groups:",
        "  pair: [gpu01, gpu02]",
      ].join("\n"),
    );
    const inv = loadInventory(p, { sshConfig: null });
    assert.equal(inv.format, "native");
    const [a, b, c] = inv.nodes;
    assert.deepEqual(
      {
        host: a!.host,
        port: a!.port,
        user: a!.user,
        key: a!.identityFile,
        kh: a!.knownHosts,
        tags: a!.tags,
      },
      {
        host: "10.0.0.1",
        port: 22,
        user: "admin",
        key: join(dir, "keys/id"),
        kh: join(homedir(), "kh"),
        tags: ["a100"],
      },
    );
    assert.deepEqual([b!.port, b!.user, b!.become, b!.slurmNode], [2222, "other", "sudo", "n2"]);
    assert.equal(c!.host, "gpu03", "a node without host: is reached by its name");
    assert.equal(
      a!.hostKeyPolicy,
      "strict",
      "host keys are strict unless the inventory says otherwise",
    );
    assert.deepEqual(inv.groups, { pair: ["gpu01", "gpu02"] });
  });

  it("resolves jump hosts from inventory nodes and user@host:port, and refuses loops", () => {
    const p = write(
      [
        "nodes:",
        "  bastion: {host: 192.0.2.1, user: jumper}",
        "  inner: {host: 192.0.2.2, jump: bastion}",
        "  deep: {host: 192.0.2.3, jump: [inner, 'ops@198.51.100.7:2200']}",
      ].join("\n"),
    );
    const inv = loadInventory(p, { sshConfig: null });
    const deep = inv.nodes.find((x) => x.name === "deep")!;
    assert.deepEqual(
      deep.jump.map((j) => `${j.user}@${j.host}:${j.port}`),
      [
        "jumper@192.0.2.1:22",
        "root@192.0.2.2:22".replace("root", deep.user),
        "ops@198.51.100.7:2200",
      ],
    );
    const loop = failure(["nodes:", "  a: {jump: b}", "  b: {jump: a}"].join("\n"));
    assert.match(loop.message, /jump hosts loop through 'a'/);
  });

  it("names file, line, path and expectation for a bad port", () => {
    const f = failure(["nodes:", "  gpu01:", "    host: h1", "    port: 'abc'"].join("\n"));
    assert.equal(f.code, "INVENTORY_SCHEMA");
    assert.equal(
      f.message,
      'FILE:4: nodes.gpu01.port: expected a port number (integer 1-65535), got "abc"',
    );
  });

  it("takes connect_timeout as seconds or a duration with a unit, as the CLI does", () => {
    const inv = loadInventory(
      write(
        "nodes:\n  a: {host: h1, connect_timeout: 30s}\n  b: {host: h2, connect_timeout: 2m}\n  c: {host: h3, connect_timeout: 7}\n",
      ),
      { sshConfig: null },
    );
    assert.deepEqual(
      inv.nodes.map((x) => x.connectTimeoutS),
      [30, 120, 7],
    );
    const f = failure("nodes:\n  a: {host: h1}\n  b:\n    host: h2\n    connect_timeout: soon\n");
    assert.equal(f.code, "INVENTORY_SCHEMA");
    assert.match(
      f.message,
      /^FILE:5: nodes\.b\.connect_timeout: expected a number of seconds or a duration \(10, 30s, 2m; at most 1h\)/,
    );
  });

  it("names an unknown field and lists the known ones", () => {
    const f = failure(["nodes:", "  gpu01:", "    hots: h1"].join("\n"));
    assert.match(
      f.message,
      /^FILE:3: nodes\.gpu01: unknown field 'hots'; expected one of: host, port, user,/,
    );
  });

  it("refuses a node name that could inject into a shell", () => {
    const f = failure(["nodes:", '  "gpu01;rm -rf /": {host: h1}'].join("\n"));
    assert.equal(f.code, "INVENTORY_SCHEMA");
    assert.match(f.message, /node names use letters, digits/);
  });

  it("refuses a host that starts with '-' or holds shell characters", () => {
    for (const host of ["-oProxyCommand=x", "h1;reboot", "$(id)"]) {
      const f = failure(["nodes:", `  gpu01: {host: ${JSON.stringify(host)}}`].join("\n"));
      assert.match(f.message, /nodes\.gpu01\.host: expected a host name or address/, host);
    }
  });

  it("refuses a group member that is not a node, naming the line", () => {
    const f = failure(
      ["nodes:", "  gpu01: {host: h1}", "groups:", "  g: [gpu01, gpu09]"].join("\n"),
    );
    assert.equal(
      f.message,
      "FILE:4: groups.g.1: group 'g' names node 'gpu09', which is not in nodes:",
    );
  });

  it("reports YAML syntax errors with their line", () => {
    const f = failure(["nodes:", "  gpu01: {host: h1", "  gpu02: {}"].join("\n"));
    assert.equal(f.code, "INVENTORY_YAML");
    assert.match(f.message, /^FILE:\d+: not valid YAML: /);
  });

  it("reports a missing file with the path", () => {
    try {
      loadInventory(join(dir, "nope.yaml"));
      assert.fail("accepted");
    } catch (e) {
      assert.ok(isSlicecheckError(e, "INVENTORY_NOT_FOUND"));
      assert.match(e.message, /nope\.yaml: cannot read the inventory: ENOENT/);
    }
  });

  it("reads the example inventories shipped in inventory/", () => {
    const staging = loadInventory("inventory/staging.example.yaml", { sshConfig: null });
    assert.deepEqual(
      staging.nodes.map((x) => x.name),
      ["gpu01", "gpu02", "gpu03", "bastion"],
    );
    assert.equal(staging.nodes[2]!.jump[0]!.host, "bastion.staging.example.org");
    assert.equal(staging.nodes[3]!.become, null);
    const ansible = loadInventory("inventory/ansible.example.yaml", { sshConfig: null });
    assert.equal(ansible.format, "ansible");
    assert.deepEqual(
      ansible.nodes.map((x) => x.name),
      ["gpu01", "gpu02", "gpu03"],
    );
  });
});

describe("inventory: Ansible YAML", () => {
  it("inherits vars through children, host vars winning, and maps connection vars", () => {
    const p = write(
      [
        "all:",
        "  vars: {ansible_user: base, ansible_port: 22}",
        "  children:",
        "    a100:",
        "      vars: {ansible_port: 2200, slicecheck_tags: [a100]}",
        "      hosts:",
        "        gpu01: {ansible_host: 10.1.1.1}",
        "        gpu02: {ansible_host: 10.1.1.2, ansible_port: '2300', ansible_become: true}",
        "    h100:",
        "      hosts:",
        "        gpu03: {ansible_host: 10.1.1.3, ansible_ssh_common_args: '-o ProxyJump=ops@bastion:2022'}",
      ].join("\n"),
    );
    const inv = loadInventory(p, { sshConfig: null });
    const by = Object.fromEntries(inv.nodes.map((x) => [x.name, x]));
    assert.deepEqual(
      [by.gpu01!.host, by.gpu01!.port, by.gpu01!.user, by.gpu01!.tags],
      ["10.1.1.1", 2200, "base", ["a100"]],
    );
    assert.deepEqual([by.gpu02!.port, by.gpu02!.become], [2300, "sudo"]);
    assert.deepEqual(
      by.gpu03!.jump.map((j) => `${j.user}@${j.host}:${j.port}`),
      ["ops@bastion:2022"],
    );
    assert.deepEqual(inv.groups.a100, ["gpu01", "gpu02"]);
    assert.deepEqual(inv.groups.all?.sort(), ["gpu01", "gpu02", "gpu03"]);
  });

  it("names the host's path when a var is wrong", () => {
    const f = failure(["all:", "  hosts:", "    gpu01: {ansible_port: 70000}"].join("\n"));
    assert.match(f.message, /^FILE:3: all\.hosts\.gpu01\.port: expected a port number/);
  });
});

describe("inventory: ~/.ssh/config", () => {
  it("fills HostName, User, Port, IdentityFile and ProxyJump; the inventory wins", () => {
    const cfg = write(
      [
        "Host gpu*",
        "  HostName %h.internal",
        "  User cfguser",
        "  Port 2022",
        "  IdentityFile ~/.ssh/cfgkey",
        "  ProxyJump hop@bastion:2200",
        "Host gpu02",
        "  HostName 10.9.9.9",
      ].join("\n"),
      "ssh_config",
    );
    const p = write(["nodes:", "  gpu02: {}", "  gpu05: {user: mine, port: 22}"].join("\n"));
    const inv = loadInventory(p, { sshConfig: cfg });
    const [a, b] = inv.nodes;
    assert.equal(
      a!.host,
      "gpu02.internal",
      "the first HostName that matches wins, with %h expanded, as in ssh",
    );
    assert.deepEqual(
      [a!.user, a!.port, a!.identityFile],
      ["cfguser", 2022, join(homedir(), ".ssh/cfgkey")],
    );
    assert.deepEqual(
      a!.jump.map((j) => `${j.user}@${j.host}:${j.port}`),
      ["hop@bastion:2200"],
    );
    assert.deepEqual([b!.user, b!.port], ["mine", 22]);
  });
});
