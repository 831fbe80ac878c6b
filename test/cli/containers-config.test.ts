// Where the containers suite's images come from (issue 23): `containers:` in
// slicecheck.config.yaml and in the inventory (with `container_runtime`); a bad key, image or
// runtime is refused naming the file and its line, before any node is touched.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfigFile } from "../../src/cli/config/file.js";
import { isSlicecheckError } from "../../src/errors.js";
import { loadInventory } from "../../src/inventory/load.js";
import { tempDir } from "../helpers/tmp.js";

function configFile(text: string): string {
  const dir = tempDir("containers-config");
  mkdirSync(join(dir, ".git"));
  const file = join(dir, "slicecheck.config.yaml");
  writeFileSync(file, text);
  return file;
}

function refusal(load: () => unknown): string {
  try {
    load();
  } catch (e) {
    assert.ok(isSlicecheckError(e), String(e));
    return e.message;
  }
  return assert.fail("accepted");
}

describe("containers: in the config file and the inventory (unit)", () => {
  it("reads images by profile and by instance from the config file; absent, none", () => {
    const f = loadConfigFile(
      configFile(
        'duration: 5m\ncontainers:\n  1g.10gb: nvidia/cuda:12.2.0-base-ubuntu22.04\n  "gpu0:0:4": site/train:1\n',
      ),
    );
    assert.deepEqual(f.containers, {
      "1g.10gb": "nvidia/cuda:12.2.0-base-ubuntu22.04",
      "gpu0:0:4": "site/train:1",
    });
    assert.equal(f.values.get("duration")?.value, "5m");
    assert.equal(loadConfigFile(configFile("duration: 5m\n")).containers, null);
  });

  it("takes enroot's .sqsh by its path on the node (and a docker:// URI, which the suite refuses)", () => {
    const sqsh = "/opt/enroot/nvidia+cuda+12.4.1-base-ubuntu22.04.sqsh";
    const f = loadConfigFile(
      configFile(`containers:\n  3g.40gb: ${sqsh}\n  1g.10gb: docker://nvidia/cuda:12.2.0\n`),
    );
    assert.deepEqual(f.containers, { "3g.40gb": sqsh, "1g.10gb": "docker://nvidia/cuda:12.2.0" });
    const shell = refusal(() =>
      loadConfigFile(configFile("containers:\n  1g.10gb: '/x y.sqsh'\n")),
    );
    assert.match(
      shell,
      /expected an image reference \(nvidia\/cuda:12\.4\.1-base-ubuntu22\.04\) or, for enroot, the path of a \.sqsh/,
    );
  });

  it("takes `aggressor: IMAGE`, the isolation aggressor's container, in the config file and the inventory", () => {
    const f = loadConfigFile(
      configFile("containers:\n  aggressor: nvidia/cuda:12.4.1-base-ubuntu22.04\n"),
    );
    assert.deepEqual(f.containers, { aggressor: "nvidia/cuda:12.4.1-base-ubuntu22.04" });
    const dir = tempDir("containers-inv");
    const inv = join(dir, "inv.yaml");
    writeFileSync(inv, "nodes:\n  n1: {host: 127.0.0.1, containers: {aggressor: site/aggr:1}}\n");
    assert.deepEqual(loadInventory(inv, { sshConfig: null }).nodes[0]!.containers, {
      aggressor: "site/aggr:1",
    });
    // Any other word is still refused, naming the line.
    assert.match(
      refusal(() => loadConfigFile(configFile("containers:\n  aggressors: x\n"))),
      /slicecheck\.config\.yaml:2: containers\.aggressors: .*or aggressor/,
    );
  });

  it("refuses a bad key, a bad image and a non-mapping, naming the file and the line", () => {
    const key = refusal(() =>
      loadConfigFile(configFile("duration: 5m\ncontainers:\n  1g.10gb: a:1\n  one-gig: b:2\n")),
    );
    assert.match(
      key,
      /slicecheck\.config\.yaml:4: containers\.one-gig: expected a MIG profile \(1g\.10gb\) or an instance as gpuN:START:SIZE/,
    );
    const image = refusal(() =>
      loadConfigFile(configFile("containers:\n  1g.10gb: '-v /:/host'\n")),
    );
    assert.match(
      image,
      /slicecheck\.config\.yaml:2: containers\.1g\.10gb: expected an image reference/,
    );
    const list = refusal(() => loadConfigFile(configFile("duration: 5m\ncontainers: [a, b]\n")));
    assert.match(list, /slicecheck\.config\.yaml:2: containers: expected a mapping/);
  });

  it("the inventory's containers and container_runtime reach the node; bad ones name file:line", () => {
    const dir = tempDir("containers-inv");
    const f = join(dir, "inv.yaml");
    writeFileSync(
      f,
      "defaults:\n  containers: {3g.40gb: 'nvidia/cuda:12.4.1-base-ubuntu22.04'}\nnodes:\n  n1: {host: 127.0.0.1, container_runtime: docker}\n  n2: {host: 127.0.0.2}\n",
    );
    const inv = loadInventory(f, { sshConfig: null });
    const n1 = inv.nodes.find((n) => n.name === "n1")!;
    assert.deepEqual(n1.containers, { "3g.40gb": "nvidia/cuda:12.4.1-base-ubuntu22.04" });
    assert.equal(n1.containerRuntime, "docker");
    assert.equal(inv.nodes.find((n) => n.name === "n2")!.containerRuntime, null);
    writeFileSync(f, "nodes:\n  n1:\n    host: 127.0.0.1\n    container_runtime: containerd\n");
    assert.match(
      refusal(() => loadInventory(f, { sshConfig: null })),
      /inv\.yaml:4.*expected one of docker, podman, enroot/s,
    );
    writeFileSync(f, "nodes:\n  n1:\n    host: 127.0.0.1\n    containers: {7g: x}\n");
    assert.match(
      refusal(() => loadInventory(f, { sshConfig: null })),
      /inv\.yaml:4.*gpuN:START:SIZE/s,
    );
  });
});
