// The containers suite end to end (real sshd, one simulated H100 on driver 550, CUDA 12.4):
// three instances of one GPU, the 3g in a CUDA 12.4 image and the 2g in a CUDA 12.2 image at
// the same time, each seeing only its instance; the 1g's CUDA 13.0 image is refused before any
// container of it starts; a runtime that gives containers every device fails
// CONTAINER_SEES_OTHERS; a named runtime the node lacks is not assessed, never passed. Under
// enroot: the same two CUDA versions side by side from .sqsh images, the 13.0 one refused before
// any container of it is given a GPU, the run's enroot containers removed (the simulated
// `enroot list` is empty), and sees-all failing it the same way.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { readStarts } from "../../sim/src/containers/images.js";
import { readState } from "../../sim/src/nvsmi/state.js";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";

interface Check {
  suite: string;
  title: string;
  status: string;
  code: string;
  message: string;
  figures: Record<string, unknown>;
  instance: { profile: string; uuid: string } | null;
}

const IMAGES = {
  "3g.40gb": "nvidia/cuda:12.4.1-base-ubuntu22.04",
  "2g.20gb": "nvidia/cuda:12.2.0-base-ubuntu22.04",
  "1g.10gb": "nvidia/cuda:13.0.0-base-ubuntu24.04",
};
/** A site-built image: nvidia/cuda 13.0 plus cuda-compat-13-0 (sim/src/containers/images.ts). */
const COMPAT = "nvidia/cuda:13.0.0-compat-ubuntu24.04";
/** The same images as `enroot import -o` left them on the node (sim/src/containers/images.ts). */
const SQSH = Object.fromEntries(
  Object.entries(IMAGES).map(([p, i]) => [p, `/opt/enroot/${i.replace(/[/:]/g, "+")}.sqsh`]),
);

describe("containers suite: CUDA 12.2 and 12.4 images side by side on one H100, a too-new image refused (real sshd, simulated)", function () {
  this.timeout(240_000);
  const c = useCluster([{ gpu: "H100-80GB", gpus: 1, driver: "550.127.05" }]);
  const stateDir = () => join(c.dir, ".sim.d/nodes/sim01/state");
  /** The inventory with `containers:` (and more) in its defaults. */
  const inventory = (extra: Record<string, unknown>, name: string) => {
    const inv = parse(readFileSync(c.inventoryPath, "utf8")) as {
      defaults?: Record<string, unknown>;
    };
    // The CDI spec follows the run's layout (podman reads it: the runtime check needs it).
    inv.defaults = { ...inv.defaults, containers: IMAGES, regenerate_cdi: true, ...extra };
    const file = join(c.dir, name);
    writeFileSync(file, stringify(inv));
    return file;
  };
  const run = async (inv: string, label: string) => {
    const r = await cli(
      "run",
      "-i",
      inv,
      "--suites",
      "containers",
      "--layout",
      "test/fixtures/containers-layout.yaml",
      "-c",
      "three-profiles",
      "--duration",
      "2",
      "--out",
      join(c.dir, label),
      "--json",
    );
    const checks = (JSON.parse(r.stdout) as { checks: Check[] }).checks.filter(
      (x) => x.suite === "containers",
    );
    return { ...r, checks };
  };
  const of = (checks: Check[], profile: string, title: RegExp) =>
    checks.find((x) => x.instance?.profile === profile && title.test(x.title));
  const enrootInventory = (images: Record<string, string> = SQSH) =>
    inventory({ container_runtime: "enroot", containers: images }, "inv-enroot.yaml");
  /** The simulated node's own `enroot list`: what containers are left there. */
  const enrootList = () =>
    execFileSync(join(c.dir, ".sim.d/nodes/sim01/bin/enroot"), ["list"], {
      env: { ...process.env, SLICECHECK_SIM_STATE: stateDir() },
      encoding: "utf8",
    });

  it("runs the 12.4 and 12.2 containers at once, each seeing only its instance; refuses the 13.0 image before it starts", async () => {
    const r = await run(inventory({}, "inv.yaml"), "side");
    assert.equal(r.code, 1, r.stderr);
    for (const [profile, cuda] of [
      ["3g.40gb", "12.4.1"],
      ["2g.20gb", "12.2.0"],
    ] as const) {
      const start = of(r.checks, profile, /sees exactly its instance/);
      assert.deepEqual([start?.status, start?.code], ["passed", "OK"], JSON.stringify(start));
      assert.equal(start?.figures.cudaInside, cuda);
      // The modelled start cost is a floor (0.5 s); the bare probe's time is the figure beside it.
      assert.ok(Number(start?.figures.containerStartS) >= 0.5, JSON.stringify(start?.figures));
      assert.ok(Number(start?.figures.bareStartS) > 0, JSON.stringify(start?.figures));
      const stress = of(r.checks, profile, /computes in its container/);
      assert.deepEqual([stress?.status, stress?.code], ["passed", "OK"], JSON.stringify(stress));
      assert.ok(Number(stress?.figures.tflops) > 0);
    }
    // podman reads the spec --regenerate-cdi wrote after the apply: its runtime passes.
    const rt = r.checks.find((x) => /container runtime can give/.test(x.title));
    assert.deepEqual([rt?.status, rt?.figures.paths], ["passed", "CDI"], JSON.stringify(rt));
    const together = r.checks.find((x) => /at the same time/.test(x.title));
    assert.equal(together?.status, "passed", JSON.stringify(together));
    assert.equal(together?.figures.cudaVersions, "12.4.1, 12.2.0");
    assert.ok(Number(together?.figures.overlapS) > 1);

    const refused = of(r.checks, "1g.10gb", /sees exactly its instance/);
    assert.deepEqual([refused?.status, refused?.code], ["failed", "IMAGE_CUDA_TOO_NEW"]);
    assert.deepEqual(
      [refused?.figures.imageCuda, refused?.figures.driverCuda, refused?.figures.forwardCompat],
      ["13.0.0", "12.4", false],
    );
    assert.match(
      refused?.message ?? "",
      /nvidia\/cuda:13\.0\.0-base\S*: image CUDA 13\.0\.0 is newer than the driver's CUDA 12\.4, and it carries none in \/usr\/local\/cuda\/compat: .*cuda-compat-13-0.*no container of it was given a GPU/,
    );
    assert.equal(of(r.checks, "1g.10gb", /computes in its container/)?.status, "skipped");

    // The runtime's own record: the 13.0 image's one container was its compat folder's listing,
    // given no GPU; every container given one got its parent GPU and exactly one MIG device.
    const starts = readStarts(stateDir());
    const newer = starts.filter((s) => s.image === IMAGES["1g.10gb"]);
    assert.deepEqual(
      newer.map((s) => [s.outcome, s.devices]),
      [["started", []]],
      JSON.stringify(starts),
    );
    const gpu = readState(stateDir()).gpus[0]!;
    const mine = ["3g.40gb", "2g.20gb"].map((p) => of(r.checks, p, /sees exactly/)?.instance?.uuid);
    const started = starts.filter((s) => s.outcome === "started" && s.devices.length > 0);
    assert.equal(started.length, 4, "a probe and a stress container for each of the two instances");
    for (const s of started) assert.equal(s.devices.length, 2, JSON.stringify(s));
    // The probes one after the other, then the two stress containers together (either first).
    const migOf = (k: number) => started[k]!.devices[1];
    assert.deepEqual([migOf(0), migOf(1)], mine);
    assert.deepEqual([migOf(2), migOf(3)].sort(), [...mine].sort());
    for (const s of started) assert.equal(s.devices[0], gpu.uuid);
  });

  it("a runtime that gives containers every device fails CONTAINER_SEES_OTHERS", async () => {
    const f = (...a: string[]) =>
      cli("sim", "fault", "sim01", ...a, "--inventory", c.inventoryPath);
    assert.equal((await f("container-sees-all")).code, 0);
    const r = await run(inventory({}, "inv.yaml"), "all");
    assert.equal((await f("--clear")).code, 0);
    assert.equal(r.code, 1, r.stderr);
    for (const profile of ["3g.40gb", "2g.20gb"]) {
      const start = of(r.checks, profile, /sees exactly its instance/);
      assert.deepEqual(
        [start?.status, start?.code],
        ["failed", "CONTAINER_SEES_OTHERS"],
        JSON.stringify(start),
      );
      assert.match(start?.message ?? "", /sees 3 MIG devices/);
    }
  });

  it("docker's legacy path (--gpus device=MIG UUID) gives each container its instance the same way; a 13.0 image with cuda-compat runs, reported as forward-compat", async () => {
    const before = readStarts(stateDir()).length;
    // The 1g's 13.0 image now carries the forward-compatibility libraries (the first case's
    // bare 13.0 image, refused, is the planted fault beside it).
    const images = { ...IMAGES, "1g.10gb": COMPAT };
    const inv = inventory({ container_runtime: "docker", containers: images }, "inv-docker.yaml");
    const r = await run(inv, "docker");
    assert.equal(r.code, 0, r.stderr);
    for (const profile of ["3g.40gb", "2g.20gb", "1g.10gb"])
      for (const title of [/sees exactly its instance/, /computes in its container/])
        assert.equal(of(r.checks, profile, title)?.status, "passed", `${profile}: ${r.stdout}`);
    const compat = of(r.checks, "1g.10gb", /sees exactly its instance/);
    assert.deepEqual(
      [compat?.figures.forwardCompat, compat?.figures.compatDriver, compat?.figures.cudaInside],
      [true, "580.65.06", "13.0.0"],
    );
    assert.equal(compat?.figures.compatLibcuda, "/usr/local/cuda/compat/libcuda.so.580.65.06");
    assert.match(
      compat?.message ?? "",
      /image CUDA 13\.0\.0 is newer than the driver's CUDA 12\.4: it runs through the forward-compatibility libraries .*data-center GPUs only/,
    );
    assert.equal(of(r.checks, "3g.40gb", /sees exactly/)?.figures.forwardCompat, undefined);
    const mine = of(r.checks, "3g.40gb", /sees exactly/)?.instance?.uuid;
    // docker names the MIG device by UUID, not by CDI index: the runtime resolved that name.
    const started = readStarts(stateDir()).slice(before);
    assert.ok(started.length > 0 && started.every((x) => x.runtime === "docker"));
    assert.ok(
      started.some((x) => x.devices[1] === mine),
      JSON.stringify(started),
    );
    // The compat image: its listing with no GPU, then its probe and its stress with one.
    const of13 = started.filter((x) => x.image === COMPAT);
    assert.deepEqual(
      of13.map((x) => [x.outcome, x.devices.length]),
      [
        ["started", 0],
        ["started", 2],
        ["started", 2],
      ],
    );
  });

  it("under enroot: 12.4 and 12.2 .sqsh containers at once, each seeing only its instance; the 13.0 image refused before it is given a GPU; the containers removed", async () => {
    const before = readStarts(stateDir()).length;
    const r = await run(enrootInventory(), "enroot");
    assert.equal(r.code, 1, r.stderr);
    const names = new Set<unknown>();
    for (const [profile, cuda] of [
      ["3g.40gb", "12.4.1"],
      ["2g.20gb", "12.2.0"],
    ] as const) {
      const start = of(r.checks, profile, /sees exactly its instance/);
      assert.deepEqual([start?.status, start?.code], ["passed", "OK"], JSON.stringify(start));
      assert.equal(start?.figures.cudaInside, cuda);
      assert.match(String(start?.figures.enrootContainer), /^sc-\d{8}T\d{6}Z-[0-9a-f]{6}-\d+$/);
      names.add(start?.figures.enrootContainer);
      assert.ok(Number(start?.figures.containerStartS) >= 0.5, JSON.stringify(start?.figures));
      assert.ok(Number(start?.figures.bareStartS) > 0, JSON.stringify(start?.figures));
      const stress = of(r.checks, profile, /computes in its container/);
      assert.deepEqual([stress?.status, stress?.code], ["passed", "OK"], JSON.stringify(stress));
    }
    assert.equal(names.size, 2, "one container per image");
    const together = r.checks.find((x) => /at the same time/.test(x.title));
    assert.equal(together?.status, "passed", JSON.stringify(together));
    assert.equal(together?.figures.cudaVersions, "12.4.1, 12.2.0");
    const refused = of(r.checks, "1g.10gb", /sees exactly its instance/);
    assert.deepEqual([refused?.status, refused?.code], ["failed", "IMAGE_CUDA_TOO_NEW"]);
    assert.equal(refused?.figures.imageCuda, "13.0.0");
    assert.equal(of(r.checks, "1g.10gb", /computes in its container/)?.status, "skipped");
    // The 13.0 image's container was started once, with no GPU (its CUDA read); every start with
    // a GPU got its parent GPU and exactly one MIG device: a probe and a stress per instance.
    const starts = readStarts(stateDir()).slice(before);
    assert.ok(starts.every((s) => s.runtime === "enroot" && s.outcome === "started"));
    const newer = starts.filter((s) => s.image === SQSH["1g.10gb"]);
    assert.deepEqual(
      newer.map((s) => s.devices),
      [[]],
      JSON.stringify(newer),
    );
    const withGpu = starts.filter((s) => s.devices.length > 0);
    assert.equal(withGpu.length, 4, JSON.stringify(starts));
    for (const s of withGpu) assert.equal(s.devices.length, 2, JSON.stringify(s));
    const removed = r.checks.find((x) => /removes the run's enroot containers/.test(x.title));
    assert.deepEqual([removed?.status, removed?.code], ["passed", "OK"], JSON.stringify(removed));
    assert.equal(removed?.figures.enrootContainersRemoved, 3, "one per image, the 13.0 one too");
    assert.equal(enrootList(), "");
  });

  it("under enroot, a runtime that gives containers every device fails CONTAINER_SEES_OTHERS", async () => {
    const f = (...a: string[]) =>
      cli("sim", "fault", "sim01", ...a, "--inventory", c.inventoryPath);
    assert.equal((await f("container-sees-all")).code, 0);
    // One image (the 3g's) is enough to show it, and keeps the run short.
    const r = await run(enrootInventory({ "3g.40gb": SQSH["3g.40gb"]! }), "enroot-all");
    assert.equal((await f("--clear")).code, 0);
    assert.equal(r.code, 1, r.stderr);
    for (const profile of ["3g.40gb"]) {
      const start = of(r.checks, profile, /sees exactly its instance/);
      assert.deepEqual(
        [start?.status, start?.code],
        ["failed", "CONTAINER_SEES_OTHERS"],
        JSON.stringify(start),
      );
      assert.match(start?.message ?? "", /sees 3 MIG devices/);
    }
    assert.equal(enrootList(), "");
  });

  it("a runtime never configured for the toolkit fails RUNTIME_NOT_CONFIGURED with the fix, before any container; doctor shows it", async () => {
    const f = (...a: string[]) =>
      cli("sim", "fault", "sim01", ...a, "--inventory", c.inventoryPath);
    assert.equal((await f("runtime-unconfigured")).code, 0);
    try {
      const before = readStarts(stateDir()).length;
      const inv = inventory({}, "inv.yaml");
      const r = await run(inv, "unconfigured");
      assert.equal(r.code, 1, r.stderr);
      const rt = r.checks.find((x) => /container runtime can give/.test(x.title));
      assert.deepEqual(
        [rt?.status, rt?.code],
        ["failed", "RUNTIME_NOT_CONFIGURED"],
        JSON.stringify(rt),
      );
      // The spec --regenerate-cdi wrote is outside the folder containers.conf points podman at.
      assert.match(
        rt?.message ?? "",
        /podman cannot give containers a GPU: the nvidia\.com\/gpu spec \S+\/cdi\/nvidia\.yaml is outside .*cdi-site.*fix: add \S+\/cdi to cdi_spec_dirs/,
      );
      const rest = r.checks.filter((x) => x !== rt);
      assert.deepEqual([...new Set(rest.map((x) => x.status))], ["skipped"]);
      assert.ok(
        rest.some((x) => x.code === "RUNTIME_NOT_CONFIGURED"),
        JSON.stringify(rest),
      );
      assert.equal(readStarts(stateDir()).length, before, "no container was asked for");

      const doctor = async (i: string) => {
        const d = await cli("doctor", "--json", "-i", i);
        return (
          JSON.parse(d.stdout) as {
            nodes: { toolkit: { runtime: { status: string; fix: string } }; warnings: string[] }[];
          }
        ).nodes[0]!;
      };
      const dk = await doctor(inventory({ container_runtime: "docker" }, "inv-docker.yaml"));
      assert.equal(dk.toolkit.runtime.status, "not-configured");
      assert.equal(
        dk.toolkit.runtime.fix,
        "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker",
      );
      assert.ok(dk.warnings.some((w) => /no nvidia runtime .*\[RUNTIME_NOT_CONFIGURED\]/.test(w)));
      assert.match((await cli("doctor", "-i", inv)).stdout, /podman:NO-GPU/);
    } finally {
      assert.equal((await f("--clear")).code, 0);
    }
    // Configured again: docker's nvidia runtime is what doctor names.
    const ok = await cli(
      "doctor",
      "-i",
      inventory({ container_runtime: "docker" }, "inv-docker.yaml"),
    );
    assert.match(ok.stdout, /docker:nvidia/);
  });

  it("a named runtime the node lacks: every check not assessed with the reason, none passed", async () => {
    const f = (...a: string[]) =>
      cli("sim", "fault", "sim01", ...a, "--inventory", c.inventoryPath);
    assert.equal((await f("no-runtime", "--name", "enroot")).code, 0);
    const r = await run(inventory({ container_runtime: "enroot" }, "inv-none.yaml"), "none");
    assert.equal((await f("--clear")).code, 0);
    assert.ok(r.checks.length > 0);
    assert.deepEqual([...new Set(r.checks.map((x) => x.status))], ["skipped"]);
    assert.match(r.checks[0]!.message, /container_runtime enroot is not on the node's PATH/);
  });
});
