// ProxyCommand end to end: an Ansible inventory whose ssh args say
// `-o ProxyCommand="ssh -W %h:%p bastion"` (the shape of the Ansible FAQ's "How do I configure a
// jump host to access servers that I have no direct access to?"), a bastion that is a second
// simulated sshd, and `slicecheck exec` reaching the node through it.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "../helpers/cli.js";
import { useCluster, waitFor } from "../helpers/cluster.js";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("ProxyCommand (real sshd: a simulated bastion in front of a simulated node)", function () {
  this.timeout(90_000);
  const c = useCluster(2);

  it("runs exec through `ssh -W %h:%p bastion`, tokens expanded, and kills the proxy afterwards", async () => {
    const [bastion, target] = c.inventory.nodes as [
      (typeof c.inventory.nodes)[0],
      (typeof c.inventory.nodes)[0],
    ];
    const mark = join(c.dir, "proxy-ran");
    // The wrapper records its expanded arguments and its pid (exec keeps it), then becomes
    // OpenSSH's own client speaking -W through the bastion.
    const proxy = [
      `sh -c 'echo "$0 $1 $$" >> ${mark}; exec ssh -F none -o BatchMode=yes`,
      `-o UserKnownHostsFile=${bastion.knownHosts} -o StrictHostKeyChecking=yes`,
      `-i ${bastion.identityFile} -p ${bastion.port} -l ${bastion.user} -W "$0:$1" ${bastion.host}' %h %p`,
    ].join(" ");
    const inv = join(c.dir, "proxied.ini");
    writeFileSync(
      inv,
      [
        "[gpus]",
        `${target.name} ansible_host=${target.host} ansible_port=${target.port}`,
        "[gpus:vars]",
        `ansible_user=${target.user}`,
        `ansible_ssh_private_key_file=${target.identityFile}`,
        `slicecheck_known_hosts=${target.knownHosts}`,
        `ansible_ssh_common_args='-o ProxyCommand="${proxy.replaceAll('"', '\\"')}"'`,
        "",
      ].join("\n"),
    );
    const shown = await cli("inventory", "-i", inv, "--host", target.name, "--json");
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(
      JSON.parse(shown.stdout).proxyCommand,
      new RegExp(` ${target.host.replaceAll(".", "\\.")} ${target.port}$`),
    );

    const r = await cli("exec", "-i", inv, "--", "nvidia-smi", "-L");
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      new RegExp(`^${target.name}: GPU 0: NVIDIA H100 80GB HBM3 \\(UUID: GPU-`),
    );
    const [host, port, pid] = readFileSync(mark, "utf8").trim().split(" ");
    assert.deepEqual([host, port], [target.host, String(target.port)], "%h %p expanded");
    assert.ok(await waitFor(() => !alive(Number(pid)), 10_000), `proxy ${pid} still running`);
  });

  it("says why when the ProxyCommand exits before the handshake", async () => {
    const t = c.inventory.nodes[1]!;
    const inv = join(c.dir, "broken.yaml");
    writeFileSync(
      inv,
      `defaults: {ssh_config: none}\nnodes:\n  ${t.name}: {host: ${t.host}, port: ${t.port}, user: ${t.user}, identity_file: ${t.identityFile}, known_hosts: ${t.knownHosts}, proxy_command: "sh -c 'echo no route to %h >&2; exit 7'"}\n`,
    );
    const r = await cli("exec", "-i", inv, "--json", "--", "true");
    assert.equal(r.code, 2, r.stderr);
    assert.match(
      JSON.parse(r.stdout).nodes[0].error,
      new RegExp(
        `\\[CONNECT\\] ${t.name}: ProxyCommand .* exited with 7: no route to ${t.host.replaceAll(".", "\\.")}`,
      ),
    );
  });
});
