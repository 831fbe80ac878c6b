// The container runtime's configuration (unit): docker info's runtimes and CDI folders,
// podman's containers.conf, containerd's config dump, each parsed from a fixture in the tool's
// documented shape and judged; each judge shown failing on a configuration that cannot give a
// container a GPU, with the fix and RUNTIME_NOT_CONFIGURED.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { readRuntimeConfig, runtimeProbe } from "../../src/harness/runtime-config.js";
import {
  parseContainerdDump,
  parseDockerInfo,
  parseTomlTables,
  podmanCdiDirs,
} from "../../src/nvsmi/runtime-config.js";
import { judgeRuntimeConfig, type SpecFile } from "../../src/verdicts/runtime-config.js";

/** A fixture without its `# source:` line. */
const fixture = (f: string) =>
  readFileSync(join("test/fixtures/toolkit", f), "utf8")
    .split("\n")
    .filter((l) => !l.startsWith("# source:"))
    .join("\n");
const DEFAULTS = ["/etc/cdi", "/var/run/cdi"];
const SPEC: SpecFile = { file: "/etc/cdi/nvidia.yaml", kind: "nvidia.com/gpu" };

describe("container runtime configuration: parsers (unit)", () => {
  it("reads docker info's runtimes and CDI folders", () => {
    const d = parseDockerInfo(
      fixture("docker-info-runtimes-nvidia.txt"),
      fixture("docker-info-cdi-dirs.txt"),
    );
    assert.equal(d.runtimes.nvidia, "nvidia-container-runtime");
    assert.deepEqual(d.cdiSpecDirs, DEFAULTS);
    // A docker before 25 has no CDISpecDirs: its template prints `<no value>`.
    assert.equal(
      parseDockerInfo(fixture("docker-info-runtimes-plain.txt"), "<no value>").cdiSpecDirs,
      null,
    );
    assert.throws(() => parseDockerInfo("Cannot connect to the Docker daemon", null));
  });

  it("reads podman's cdi_spec_dirs (a multi-line array with comments), the last file that sets it winning", () => {
    assert.deepEqual(podmanCdiDirs([fixture("podman-containers.conf")], DEFAULTS), [
      "/opt/site/cdi",
      "/var/run/cdi",
    ]);
    assert.deepEqual(podmanCdiDirs(["[engine]\ncgroup_manager = 'systemd'\n"], DEFAULTS), DEFAULTS);
    assert.deepEqual(
      podmanCdiDirs(
        [fixture("podman-containers.conf"), '[engine]\ncdi_spec_dirs = ["/x"]\n'],
        DEFAULTS,
      ),
      ["/x"],
    );
  });

  it("reads containerd 1.7's and 2.x's CRI plugin: enable_cdi, its folders, the nvidia runtime", () => {
    const v17 = parseContainerdDump(fixture("containerd-1.7-config-dump.toml"), DEFAULTS);
    assert.deepEqual(
      [v17.plugin, v17.cdiEnabled, v17.nvidiaRuntimes, v17.defaultRuntime],
      ["io.containerd.grpc.v1.cri", false, ["nvidia"], "runc"],
    );
    const v2 = parseContainerdDump(fixture("containerd-2.0-config-dump.toml"), DEFAULTS);
    assert.deepEqual(
      [v2.plugin, v2.cdiEnabled, v2.cdiSpecDirs, v2.nvidiaRuntimes],
      ["io.containerd.cri.v1.runtime", true, DEFAULTS, []],
    );
    // containerd 2.x with enable_cdi left out: on (its default); 1.7 left out: off.
    const bare2 = parseContainerdDump("[plugins.'io.containerd.cri.v1.runtime']\n", DEFAULTS);
    const bare17 = parseContainerdDump('[plugins."io.containerd.grpc.v1.cri"]\n', DEFAULTS);
    assert.deepEqual([bare2.cdiEnabled, bare17.cdiEnabled], [true, false]);
    assert.equal(parseContainerdDump("version = 2\n", DEFAULTS).plugin, null);
  });

  it("splits TOML table names on dots outside quotes", () => {
    const t = parseTomlTables('[a."b.c".d]\nx = "1 # not a comment" # a comment\ny = [1, 2]\n');
    assert.deepEqual(t[1]!.path, ["a", "b.c", "d"]);
    assert.deepEqual(t[1]!.values, { x: "1 # not a comment", y: [1, 2] });
  });
});

describe("container runtime configuration: judged (unit)", () => {
  const docker = (runtimes: string, cdi: string | null, specs: SpecFile[] = []) =>
    judgeRuntimeConfig({
      runtime: "docker",
      info: parseDockerInfo(fixture(runtimes), cdi === null ? "[]" : fixture(cdi)),
      specs,
    });

  it("docker: the nvidia runtime, or CDI with a spec, gives GPUs; neither fails with the fix", () => {
    assert.deepEqual(docker("docker-info-runtimes-nvidia.txt", null).paths, ["nvidia runtime"]);
    // dockerd's own --gpus driver needs only the toolkit's hook on its PATH: not a failure.
    const hook = judgeRuntimeConfig({
      runtime: "docker",
      info: parseDockerInfo(fixture("docker-info-runtimes-plain.txt"), "[]"),
      hook: "/usr/bin/nvidia-container-runtime-hook",
      specs: [],
    });
    assert.deepEqual([hook.status, hook.paths], ["ok", ["gpus hook"]]);
    const cdiOnly = docker("docker-info-runtimes-plain.txt", "docker-info-cdi-dirs.txt", [SPEC]);
    assert.deepEqual([cdiOnly.status, cdiOnly.paths], ["ok", ["CDI"]]);
    const bad = docker("docker-info-runtimes-plain.txt", null);
    assert.equal(bad.status, "not-configured");
    assert.match(
      bad.message,
      /no nvidia runtime .*runc.*no nvidia-container-runtime-hook.*CDI is off/,
    );
    assert.match(
      bad.message,
      /fix: sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker \[RUNTIME_NOT_CONFIGURED\]$/,
    );
    // CDI on but no spec of kind nvidia.com/gpu in its folders: still nothing to give.
    const noSpec = docker("docker-info-runtimes-plain.txt", "docker-info-cdi-dirs.txt", [
      { file: "/etc/cdi/other.yaml", kind: "vendor.com/fpga" },
    ]);
    assert.equal(noSpec.status, "not-configured");
  });

  it("podman: a spec in the folders it reads; one outside them, or none, fails naming which", () => {
    const dirs = podmanCdiDirs([fixture("podman-containers.conf")], DEFAULTS);
    const ok = judgeRuntimeConfig({ runtime: "podman", dirs: DEFAULTS, specs: [SPEC] });
    assert.deepEqual([ok.status, ok.paths], ["ok", ["CDI"]]);
    const outside = judgeRuntimeConfig({ runtime: "podman", dirs, specs: [SPEC] });
    assert.equal(outside.status, "not-configured");
    assert.match(
      outside.message,
      /\/etc\/cdi\/nvidia\.yaml is outside .*\/opt\/site\/cdi, \/var\/run\/cdi/,
    );
    assert.match(outside.fix!, /add \/etc\/cdi to cdi_spec_dirs/);
    const none = judgeRuntimeConfig({ runtime: "podman", dirs: DEFAULTS, specs: [] });
    assert.equal(none.fix, "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml");
  });

  it("containerd: the nvidia runtime or CDI with a spec; 1.7 as installed fails with the fix", () => {
    const judge = (f: string, specs: SpecFile[]) =>
      judgeRuntimeConfig({
        runtime: "containerd",
        cri: parseContainerdDump(fixture(f), DEFAULTS),
        specs,
      });
    const rt = judge("containerd-1.7-config-dump.toml", []);
    assert.deepEqual([rt.status, rt.paths], ["ok", ["nvidia runtime"]]);
    assert.match(rt.message, /a RuntimeClass names it/);
    assert.deepEqual(judge("containerd-2.0-config-dump.toml", [SPEC]).paths, ["CDI"]);
    assert.equal(judge("containerd-2.0-config-dump.toml", []).status, "not-configured");
    const plain = judge("containerd-1.7-config-dump-plain.toml", [SPEC]);
    assert.equal(plain.status, "not-configured");
    assert.match(
      plain.message,
      /enable_cdi is off in \[plugins\."io\.containerd\.grpc\.v1\.cri"\]/,
    );
    assert.match(
      plain.fix!,
      /nvidia-ctk runtime configure --runtime=containerd && sudo systemctl restart containerd/,
    );
  });

  it("no runtime is `none` and enroot `unjudged`, neither a pass nor a failure", () => {
    assert.equal(judgeRuntimeConfig({ runtime: null }).status, "none");
    assert.equal(judgeRuntimeConfig({ runtime: "enroot" }).status, "unjudged");
  });
});

describe("container runtime configuration: the probe's answers (unit)", () => {
  /** A node answering the two probes: docker without the nvidia runtime, a spec on disk. */
  const node = (runtimes: string) => async (shell: string) => ({
    exitCode: 0,
    stdout: shell.startsWith("rt=")
      ? [
          "runtime=docker",
          "cdi_default=/etc/cdi /var/run/cdi",
          "runtimes_rc=0",
          `runtimes=${fixture(runtimes).trim()}`,
          "cdidirs_rc=0",
          "cdidirs=[]",
        ].join("\n")
      : "spec=/etc/cdi/nvidia.yaml nvidia.com/gpu\n",
  });

  it("reads docker through both probes, and an unreadable answer is `unread`, never ok", async () => {
    assert.equal(
      (await readRuntimeConfig(node("docker-info-runtimes-nvidia.txt"), null)).status,
      "ok",
    );
    const bad = await readRuntimeConfig(node("docker-info-runtimes-plain.txt"), null);
    assert.equal(bad.status, "not-configured");
    const broken = await readRuntimeConfig(
      async () => ({
        exitCode: 0,
        stdout: "runtime=docker\nruntimes_rc=1\nruntimes=Cannot connect\n",
      }),
      null,
    );
    assert.equal(broken.status, "unread");
    assert.match(broken.message, /docker info failed \(exit 1\): Cannot connect/);
  });

  it("quotes a named runtime into the probe", () => {
    assert.match(runtimeProbe("docker"), /command -v docker >\/dev\/null 2>&1 && rt=docker/);
    assert.match(runtimeProbe(null), /for r in podman docker containerd enroot/);
  });
});
