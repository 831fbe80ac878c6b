// Ansible inventories as Ansible reads them: INI and YAML, host ranges, variable precedence,
// group_vars/ and host_vars/, ansible_connection, ssh options in the ssh args.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { isSlicecheckError } from "../../src/errors.js";
import { expandHostRange, hostRangeSize, MAX_HOSTS } from "../../src/inventory/host-range.js";
import { loadInventory } from "../../src/inventory/load.js";
import type { Inventory, NodeSpec } from "../../src/inventory/types.js";
import { tempDir } from "../helpers/tmp.js";

const FIX = resolve("test/fixtures/ansible");
const dir = tempDir("ansible");
let n = 0;
function write(text: string, name = `inv${n++}.ini`): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}
const byName = (inv: Inventory): Record<string, NodeSpec> =>
  Object.fromEntries(inv.nodes.map((x) => [x.name, x]));
function failure(p: string): string {
  try {
    loadInventory(p, { sshConfig: null });
  } catch (e) {
    assert.ok(isSlicecheckError(e), String(e));
    return e.message;
  }
  assert.fail("accepted");
}

describe("Ansible host ranges", () => {
  it("expands numbers with their padding, letters, strides and several ranges", () => {
    assert.deepEqual(expandHostRange("gpu[01:03]"), ["gpu01", "gpu02", "gpu03"]);
    assert.equal(expandHostRange("gpu[01:16]").length, 16);
    assert.deepEqual(expandHostRange("db-[a:c]-x"), ["db-a-x", "db-b-x", "db-c-x"]);
    assert.deepEqual(expandHostRange("n[0:10:2]"), ["n0", "n2", "n4", "n6", "n8", "n10"]);
    assert.deepEqual(expandHostRange("r[1:2]c[a:b]"), ["r1ca", "r1cb", "r2ca", "r2cb"]);
    assert.deepEqual(expandHostRange("n[:2]"), ["n0", "n1", "n2"]);
    assert.throws(() => expandHostRange("gpu[01:5]"), /same width/);
    assert.throws(() => expandHostRange("gpu[3:1:x]"), /step/);
  });
});

describe("Ansible INI inventories", () => {
  const inv = loadInventory(join(FIX, "hosts.ini"), { sshConfig: null });
  const h = byName(inv);

  it("reads hosts, ranges, host:port, groups and children", () => {
    assert.equal(inv.format, "ansible");
    assert.deepEqual(
      inv.nodes.map((x) => x.name),
      [
        "login01.example.org",
        "gpu01.example.org",
        "gpu02.example.org",
        "gpu03.example.org",
        "gpu04.example.org",
        "gpu05.example.org",
        "hgx-a",
        "hgx-b",
        "hgx-c",
        "node0",
        "node5",
        "node10",
      ],
    );
    assert.deepEqual(inv.groups.ungrouped, ["login01.example.org"]);
    assert.deepEqual(inv.groups.gpus?.length, 11);
    assert.deepEqual(
      [h["gpu05.example.org"]!.host, h["gpu05.example.org"]!.port],
      ["10.0.0.5", 2205],
    );
  });

  it("lets host vars beat group vars, and a child group's vars beat its parent's", () => {
    const g1 = h["gpu01.example.org"]!;
    assert.equal(g1.user, "ops", "the inline host var wins over [a100:vars]");
    assert.equal(h["gpu05.example.org"]!.user, "should-lose-to-host-var");
    assert.equal(g1.port, 2222, "from [gpus:vars], the parent");
    assert.deepEqual([h["hgx-b"]!.port, h["hgx-b"]!.become], [2300, "sudo"]);
    assert.equal(h.node5!.port, 2222);
    assert.equal(h["login01.example.org"]!.port, 22);
  });

  it("takes ProxyCommand from -o in ansible_ssh_common_args, tokens expanded, and warns about the rest", () => {
    assert.equal(
      h["gpu01.example.org"]!.proxyCommand,
      "ssh -W gpu01.example.org:2222 -q jump@bastion.example.org",
    );
    assert.equal(
      h["gpu05.example.org"]!.proxyCommand,
      "ssh -W 10.0.0.5:2205 -q jump@bastion.example.org",
    );
    assert.equal(h.node0!.proxyCommand, null);
    assert.match(
      inv.warnings!.join("\n"),
      /hosts\.ini:16: ansible_ssh_common_args: -o ServerAliveInterval is not used by slicecheck .*\(hosts gpu01\.example\.org, gpu02\.example\.org, gpu03\.example\.org and 2 more\)/,
    );
  });

  it("says where each value came from", () => {
    const o = h["gpu01.example.org"]!.origins!;
    assert.equal(o.user, `${join(FIX, "hosts.ini")}:7 (ansible_user)`);
    assert.equal(o.port, `${join(FIX, "hosts.ini")}:23 (ansible_port)`);
    assert.match(
      o.proxyCommand!,
      /hosts\.ini:16 \(ansible_ssh_common_args: -o ProxyCommand=ssh -W %h:%p/,
    );
  });

  it("names file and line for a bad range, section or value", () => {
    assert.match(
      failure(write("[g]\ngpu[01:5]\n")),
      /inv\d+\.ini:2: gpu\[01:5\]: host range \[01:5\] must give begin and end with the same width/,
    );
    assert.match(
      failure(write("[g:hosts]\n")),
      /:1: section \[g:hosts\]: expected \[g\], \[g:vars\] or \[g:children\]/,
    );
    assert.match(
      failure(write("[g]\nh1 ansible_port=abc\n")),
      /:2: h1\.port: expected a port number .*got "abc" \(from ansible_port\)/,
    );
    assert.match(
      failure(write("[g]\nh1\n[g:vars]\nansible_connection=winrm\n")),
      /:4: h1: ansible_connection: winrm is not supported/,
    );
  });

  it("refuses children that loop", () => {
    assert.match(
      failure(write("[a:children]\nb\n[b:children]\na\n[b]\nh1\n")),
      /inv\d+\.ini: children of groups form a loop: a -> b -> a/,
    );
  });

  it("refuses a Jinja template it cannot render, and renders inventory_hostname", () => {
    const ok = loadInventory(write("h1 ansible_host={{inventory_hostname}}.example\n"), {
      sshConfig: null,
    });
    assert.equal(ok.nodes[0]!.host, "h1.example");
    assert.match(
      failure(write(`h1 ansible_host="{{ lookup('env','X') }}"\n`)),
      /:1: ansible_host: .* is a Jinja template/,
    );
  });
});

describe("slicecheck_regenerate_cdi (Ansible's boolean rules)", () => {
  it("reads it as Ansible's boolean() does: INI strings any case, YAML booleans, host over group", () => {
    const inv = loadInventory(
      write(
        "[gpu]\nh1\nh2 slicecheck_regenerate_cdi=False\nh3 slicecheck_regenerate_cdi=On\n[gpu:vars]\nslicecheck_regenerate_cdi=yes\n[cpu]\nh4\n",
      ),
      { sshConfig: null },
    );
    const h = byName(inv);
    // convert_bool.boolean(): 'yes' and 'on' (lower-cased) are true, 'false' false; unset: off.
    assert.deepEqual(
      ["h1", "h2", "h3", "h4"].map((x) => h[x]!.regenerateCdi ?? false),
      [true, false, true, false],
    );
    assert.match(h.h1!.origins!.regenerateCdi ?? "", /:6 \(slicecheck_regenerate_cdi\)/);
    const yaml = loadInventory(
      write(
        "all:\n  children:\n    gpu:\n      hosts: {y1: {}, y2: {slicecheck_regenerate_cdi: false}}\n      vars: {slicecheck_regenerate_cdi: true}\n",
        "inv-cdi.yaml",
      ),
      { sshConfig: null },
    );
    assert.deepEqual(
      yaml.nodes.map((x) => [x.name, x.regenerateCdi ?? false]),
      [
        ["y1", true],
        ["y2", false],
      ],
    );
  });

  it("refuses a value Ansible's boolean() refuses, naming where it was set", () => {
    assert.match(
      failure(write("[g]\nh1 slicecheck_regenerate_cdi=sometimes\n")),
      /:2: .*expected true or false.*slicecheck_regenerate_cdi/s,
    );
  });
});

describe("Ansible YAML inventories with group_vars/ and host_vars/", () => {
  const inv = loadInventory(join(FIX, "site/inventory.yaml"), { sshConfig: null });
  const h = byName(inv);

  it("expands ranges in YAML host keys", () => {
    assert.deepEqual(
      inv.nodes.map((x) => x.name),
      ["gpu01", "gpu02", "gpu03", "ctl"],
    );
  });

  it("merges in Ansible's order: file group vars < group_vars/all < group_vars/<group> < host vars < host_vars", () => {
    assert.deepEqual(
      [h.gpu01!.host, h.gpu01!.port, h.gpu01!.user, h.gpu01!.tags],
      ["10.1.0.1", 2100, "from-group_vars-a100", ["a100"]],
    );
    assert.equal(
      h.gpu01!.origins!.host,
      `${join(FIX, "site/host_vars/gpu01.yml")}:1 (ansible_host)`,
    );
    assert.equal(
      h.gpu01!.origins!.user,
      `${join(FIX, "site/group_vars/a100/20-user.yaml")}:1 (ansible_user)`,
    );
    assert.equal(h.ctl!.user, "from-group_vars-all");
  });

  it("keeps a host's own var over a child group's when the host is listed again elsewhere", () => {
    assert.equal(h.gpu02!.port, 2999);
    assert.deepEqual(inv.groups.h100, ["gpu02"]);
  });

  it("maps ansible_connection: local to the local transport", () => {
    assert.equal(h.ctl!.transport, "local");
    assert.equal(h.gpu01!.transport, "ssh");
  });

  it("honours -oKey=Value, -o 'Key Value' and -J in the ssh args, and names the others", () => {
    const g = h.gpu03!;
    assert.deepEqual([g.knownHosts, g.hostKeyPolicy], ["/tmp/kh-odd", "accept-new"]);
    assert.deepEqual(
      g.jump.map((j) => `${j.user}@${j.host}:${j.port}`),
      ["admin@gw:2022"],
    );
    assert.match(
      inv.warnings!.join("\n"),
      /inventory\.yaml:31: ansible_ssh_extra_args: -o Compression is not used by slicecheck .*\(host gpu03\)/,
    );
  });
});

describe("Ansible hosts and ssh_config together", () => {
  it("looks ssh_config up by ansible_host, as `ssh ansible_host` would, and inventory values win", () => {
    const cfg = write(
      [
        "Host 10.9.*",
        "  User cfg-user",
        "  Port 2022",
        "  ProxyCommand nc -X connect -x proxy:3128 %h %p",
        "Host gpuB",
        "  HostName 10.9.0.2",
      ].join("\n"),
      "ssh_config",
    );
    const p = write("gpuA ansible_host=10.9.0.1 ansible_port=2200\ngpuB\n", "cfg.ini");
    const inv = loadInventory(p, { sshConfig: cfg });
    const [a, b] = inv.nodes;
    assert.deepEqual([a!.host, a!.port, a!.user], ["10.9.0.1", 2200, "cfg-user"]);
    assert.equal(a!.proxyCommand, "nc -X connect -x proxy:3128 10.9.0.1 2200");
    assert.equal(a!.origins!.user, `${cfg}:2 (ssh_config User)`);
    assert.deepEqual(
      [b!.host, b!.port],
      ["10.9.0.2", 22],
      "Host gpuB matched the name, not the HostName",
    );
  });
});

describe("inventory size limits", () => {
  it("computes a range's size from its bounds and refuses one past the limit", () => {
    assert.equal(hostRangeSize("gpu[1:1000]x[1:1000]"), 1_000_000);
    assert.equal(hostRangeSize("n[0:10:2]"), 6);
    assert.equal(expandHostRange(`n[1:${MAX_HOSTS}]`).length, MAX_HOSTS);
    assert.throws(
      () => expandHostRange(`n[0:${MAX_HOSTS}]`),
      /expands to 100,001 hosts; one inventory may name at most 100,000/,
    );
    assert.throws(() => expandHostRange("n[1:99999999999999999999]"), /too large/);
  });

  it("refuses a native inventory with more nodes than the limit, at the first node past it", () => {
    const p = write(
      "nodes:\n  a: {host: 192.0.2.1}\n  b: {host: 192.0.2.2}\n  c: {host: 192.0.2.3}\n",
      "native-limit.yaml",
    );
    assert.equal(loadInventory(p, { sshConfig: null, maxHosts: 3 }).nodes.length, 3);
    assert.throws(
      () => loadInventory(p, { sshConfig: null, maxHosts: 2 }),
      /native-limit\.yaml:4: nodes\.c: the inventory names more than 2 hosts/,
    );
  });

  it("refuses an Ansible YAML inventory past the limit, naming the host's line", () => {
    const p = write(
      "all:\n  children:\n    a:\n      hosts:\n        n[1:2]:\n    b:\n      hosts:\n        m1:\n",
      "yaml-limit.yml",
    );
    assert.equal(loadInventory(p, { sshConfig: null, maxHosts: 3 }).nodes.length, 3);
    assert.throws(
      () => loadInventory(p, { sshConfig: null, maxHosts: 2 }),
      /yaml-limit\.yml:8: all\.children\.b\.hosts\.m1: the inventory names more than 2 hosts/,
    );
  });

  it("bounds listings too: the same hosts listed in group after group", () => {
    const groups = Array.from({ length: 11 }, (_, i) => `[g${i}]\nn[1:2]\n`).join("");
    const p = write(groups, "listings.ini");
    assert.throws(
      () => loadInventory(p, { sshConfig: null, maxHosts: 2 }),
      /listings\.ini:22: n\[1:2\]: the inventory lists more than 20 hosts/,
    );
    const fewer = write(groups.split("[g10]")[0]!, "listings-ok.ini");
    assert.equal(loadInventory(fewer, { sshConfig: null, maxHosts: 2 }).nodes.length, 2);
  });
});
