// enroot under the containers suite (issue 23): the pure part (src/workloads/enroot.ts: argv of
// each step, the image's CUDA read inside, `enroot list` read) and the simulated enroot
// (sim/src/containers/enroot-*.ts) on a node state of its own: import refused without a
// registry, create/list/remove, and what the nvidia hook gives a started container (the host's
// NVIDIA_VISIBLE_DEVICES over --env, `void` nothing, a too-new image refused, the planted
// container-sees-all and no-toolkit faults).
import assert from "node:assert/strict";
import { enrootMain } from "../../sim/src/containers/enroot-cli.js";
import { readStarts } from "../../sim/src/containers/images.js";
import { plantFault } from "../../sim/src/faults.js";
import { initState, readState } from "../../sim/src/nvsmi/state.js";
import type { SuiteNode } from "../../src/harness/api-types.js";
import { runArgv } from "../../src/workloads/containers.js";
import {
  createArgv,
  enrootImageCuda,
  enrootImageProblem,
  enrootName,
  listedNames,
  removeArgv,
  startArgv,
} from "../../src/workloads/enroot.js";
import { EnrootLedger, enrootImages } from "../../suites/lib/containers-enroot.js";
import { tempDir } from "../helpers/tmp.js";

const SQSH = "/opt/enroot/nvidia+cuda+12.4.1-base-ubuntu22.04.sqsh";
const TOO_NEW = "/opt/enroot/nvidia+cuda+13.0.0-base-ubuntu24.04.sqsh";

describe("enroot: the suite's argv and readings (unit)", () => {
  it("refuses a docker:// image with the import command, and anything but a .sqsh", () => {
    const uri = "docker://nvidia/cuda:12.4.1-base-ubuntu22.04";
    assert.match(
      enrootImageProblem(uri) ?? "",
      /a run never pulls one: import docker:\/\/nvidia\/cuda:12\.4\.1\S* first \(`enroot import -o \/path\/to\/image\.sqsh/,
    );
    assert.match(enrootImageProblem("nvidia/cuda:12.4.1") ?? "", /a path ending \.sqsh/);
    assert.equal(enrootImageProblem(SQSH), null);
  });

  it("names containers sc-<run id>-<n>, the run id's own sc- not doubled", () => {
    assert.equal(enrootName("sc-20261203T234000Z-ab12cd", 2), "sc-20261203T234000Z-ab12cd-2");
    assert.equal(enrootName("my run/1", 1), "sc-my_run_1-1");
  });

  it("gives the GPU by NVIDIA_VISIBLE_DEVICES on the host and with --env; mounts read-only", () => {
    const argv = startArgv("sc-r-1", "MIG-abc", ["prog", "-x"], ["/opt/sc"]);
    assert.deepEqual(argv, [
      "env",
      "NVIDIA_VISIBLE_DEVICES=MIG-abc",
      "enroot",
      "start",
      "--env",
      "NVIDIA_VISIBLE_DEVICES=MIG-abc",
      "--mount",
      "/opt/sc:/opt/sc:none:x-create=dir,bind,ro",
      "sc-r-1",
      "prog",
      "-x",
    ]);
    const inst = { gpu: 0, uuid: "MIG-abc" };
    assert.deepEqual(runArgv("enroot", inst, 3, "sc-r-1", ["prog", "-x"], ["/opt/sc"]), argv);
    assert.deepEqual(createArgv("sc-r-1", SQSH), ["enroot", "create", "--name", "sc-r-1", SQSH]);
    assert.deepEqual(removeArgv("sc-r-1"), ["enroot", "remove", "-f", "sc-r-1"]);
  });

  it("reads the image's CUDA from CUDA_VERSION, else version.json; null from neither", () => {
    assert.equal(enrootImageCuda("CUDA_VERSION=12.4.1\n"), "12.4.1");
    const json = JSON.stringify({ cuda: { name: "CUDA SDK", version: "12.8.0" } }, null, 3);
    assert.equal(enrootImageCuda(json), "12.8.0");
    assert.equal(enrootImageCuda(""), null);
    assert.equal(enrootImageCuda("CUDA_VERSION=none\n"), null);
  });

  it("reads enroot list, plain and --fancy (process lines are not names)", () => {
    assert.deepEqual(listedNames("a\nsc-r-1\n"), ["a", "sc-r-1"]);
    const fancy =
      "NAME   SIZE  PID    STATE  STARTED\ncentos 235M  24353  S+     05:39:23\n       24522  S+     05:39:31\nubuntu 70M\n";
    assert.deepEqual(listedNames(fancy), ["centos", "ubuntu"]);
  });
});

describe("simulated enroot: import, create, start through the nvidia hook, list, remove", function () {
  this.timeout(60_000);
  const node = () => {
    const dir = tempDir("enroot-sim");
    initState(dir, { node: "n1", product: "H100-80GB", gpus: 2, driver: "550.127.05" });
    return dir;
  };
  /** The simulated enroot in-process (its started command, `true`, is a real child process). */
  const enroot = async (dir: string, args: string[], host: Record<string, string> = {}) => {
    let out = "";
    let err = "";
    const saved = { ...process.env };
    process.env.SLICECHECK_SIM_STATE = dir;
    delete process.env.NVIDIA_VISIBLE_DEVICES;
    Object.assign(process.env, host);
    try {
      const code = await enrootMain(args, { out: (x) => (out += x), err: (x) => (err += x) });
      return { code, out, err };
    } finally {
      for (const k of ["SLICECHECK_SIM_STATE", "NVIDIA_VISIBLE_DEVICES"]) delete process.env[k];
      Object.assign(process.env, saved);
    }
  };
  /** The devices the last start was given, or its refusal. */
  const lastStart = (dir: string) => {
    const s = readStarts(dir).at(-1)!;
    return s.outcome === "started" ? s.devices.join(",") : `refused: ${s.reason}`;
  };
  const start = (dir: string, name: string, visible: string | null, host = {}) =>
    enroot(
      dir,
      ["start", ...(visible ? ["-e", `NVIDIA_VISIBLE_DEVICES=${visible}`] : []), name, "true"],
      host,
    );

  it("refuses to import (no registry), creates, lists and removes with --force only", async () => {
    const dir = node();
    const imp = await enroot(dir, ["import", "docker://nvidia/cuda:12.4.1-base-ubuntu22.04"]);
    assert.equal(imp.code, 1);
    assert.match(imp.err, /Could not resolve host: registry-1\.docker\.io/);
    assert.equal((await enroot(dir, ["create", "--name", "sc-r-1", SQSH])).code, 0);
    const again = await enroot(dir, ["create", "--name", "sc-r-1", SQSH]);
    assert.match(again.err, /\[ERROR\] File already exists: \$ENROOT_DATA_PATH\/sc-r-1/);
    assert.match((await enroot(dir, ["create", "/nowhere.sqsh"])).err, /No such file or directory/);
    assert.deepEqual(listedNames((await enroot(dir, ["list"])).out), ["sc-r-1"]);
    assert.equal((await enroot(dir, ["remove", "sc-r-1"])).code, 0);
    const kept = listedNames((await enroot(dir, ["list"])).out);
    assert.deepEqual(kept, ["sc-r-1"], "no --force: kept");
    assert.equal((await enroot(dir, ["remove", "-f", "sc-r-1"])).code, 0);
    assert.equal((await enroot(dir, ["list"])).out, "");
    assert.match((await enroot(dir, ["remove", "-f", "sc-r-1"])).err, /No such file or directory/);
  });

  it("gives what NVIDIA_VISIBLE_DEVICES names (the host's over --env), refuses a too-new image, sees-all and no-toolkit as planted", async () => {
    const dir = node();
    const [g0, g1] = readState(dir).gpus.map((g) => g.uuid);
    await enroot(dir, ["create", "--name", "ok", SQSH]);
    await enroot(dir, ["create", "--name", "new", TOO_NEW]);
    assert.equal((await start(dir, "ok", "0")).code, 0);
    assert.equal(lastStart(dir), g0);
    await start(dir, "ok", "0", { NVIDIA_VISIBLE_DEVICES: "1" });
    assert.equal(lastStart(dir), g1, "the host's value wins (98-nvidia.sh)");
    await start(dir, "ok", "void");
    assert.equal(lastStart(dir), "", "void: no GPU");
    // The image's own NVIDIA_VISIBLE_DEVICES=all (as nvidia/cuda images set it) gives both GPUs.
    await start(dir, "ok", null);
    assert.equal(lastStart(dir), `${g0},${g1}`);
    // A too-new image: its CUDA is readable with no GPU, refused once it is given one.
    assert.equal((await start(dir, "new", "void")).code, 0);
    const gpu = await start(dir, "new", "0");
    assert.equal(gpu.code, 1);
    assert.match(gpu.err, /requirement error: unsatisfied condition: cuda>=13\.0/);
    // The same CUDA with its forward-compatibility libraries: the hook lets it start.
    await enroot(dir, ["create", "--name", "compat", TOO_NEW.replace("-base-", "-compat-")]);
    assert.equal((await start(dir, "compat", "0")).code, 0);
    assert.equal(lastStart(dir), g0);
    await plantFault(dir, "container-sees-all", {});
    await start(dir, "ok", "0");
    assert.equal(lastStart(dir), `${g0},${g1}`);
    await plantFault(dir, "no-toolkit", {});
    const bare = await start(dir, "ok", "0");
    assert.equal(bare.code, 1);
    assert.match(bare.err, /Command not found: nvidia-container-cli/);
  });
});

describe("enroot: the suite's steps on a node (suites/lib/containers-enroot.ts, a fake node)", () => {
  /** A node that answers enroot's commands from a list of containers, and records every argv. */
  const fakeNode = (name: string, o: { failCreate?: boolean; keep?: boolean } = {}) => {
    const calls: string[][] = [];
    const made: string[] = [];
    const node = {
      name,
      exec: async (argv: readonly string[] | { shell: string }) => {
        const a = "shell" in argv ? ["sh", "-c", argv.shell] : [...argv];
        calls.push(a);
        const ok = (stdout = "") => ({ exitCode: 0, stdout, stderr: "" });
        const i = a.indexOf("enroot");
        if (a[i + 1] === "create") {
          if (o.failCreate) return { exitCode: 1, stdout: "", stderr: "[ERROR] No space left" };
          made.push(a[i + 3]!);
          return ok();
        }
        if (a[i + 1] === "start") return ok("CUDA_VERSION=12.4.1\ncompat-read=done\n");
        if (a[i + 1] === "list") return ok(made.map((m) => `${m}\n`).join(""));
        if (a[i + 1] === "remove" && !o.keep) made.splice(made.indexOf(a.at(-1)!), 1);
        return ok();
      },
    } as unknown as SuiteNode;
    return { node, calls };
  };

  it("refuses docker:// without a command; creates one container per image, reads its CUDA with no GPU", async () => {
    const ledger = new EnrootLedger("sc-20261204T000000Z-abcdef");
    const { node, calls } = fakeNode("n1");
    const got = await enrootImages(node, ledger, new Set(["docker://nvidia/cuda:12.4.1", SQSH]));
    assert.match(got.get("docker://nvidia/cuda:12.4.1")?.problem ?? "", /enroot import/);
    assert.deepEqual(
      { ...got.get(SQSH), createS: null },
      {
        cuda: "12.4.1",
        problem: null,
        container: "sc-20261204T000000Z-abcdef-1",
        createS: null,
        compat: { files: [], driver: null },
        compatProblem: null,
      },
    );
    assert.deepEqual(calls[0], createArgv("sc-20261204T000000Z-abcdef-1", SQSH));
    assert.deepEqual(calls[1]?.slice(0, 6), startArgv("sc-x", "void", []).slice(0, 6));
    assert.equal(calls.length, 2, "nothing asked of the node for the docker:// image");
  });

  it("removes every container it asked for, one call each, and names what enroot list still shows", async () => {
    const ledger = new EnrootLedger("r");
    const a = fakeNode("a");
    const b = fakeNode("b", { keep: true });
    const failed = fakeNode("c", { failCreate: true });
    await enrootImages(a.node, ledger, new Set([SQSH, TOO_NEW]));
    await enrootImages(b.node, ledger, new Set([SQSH]));
    const bad = await enrootImages(failed.node, ledger, new Set([SQSH]));
    assert.match(bad.get(SQSH)?.problem ?? "", /enroot create --name sc-r-4 .*No space left/);
    assert.deepEqual(await ledger.removeAll(a.node), { created: 2, left: null });
    assert.deepEqual(
      a.calls.filter((c) => c[1] === "remove"),
      [removeArgv("sc-r-1"), removeArgv("sc-r-2")],
    );
    const left = await ledger.removeAll(b.node);
    assert.equal(left.created, 1);
    assert.match(
      left.left ?? "",
      /^b: enroot containers left behind: sc-r-3 .*`enroot remove -f sc-r-3`/,
    );
    // Its create failed: nothing is listed, so nothing is left behind.
    assert.deepEqual(await ledger.removeAll(failed.node), { created: 1, left: null });
    assert.deepEqual(await ledger.removeAll(a.node), { created: 0, left: null }, "once only");
  });
});
