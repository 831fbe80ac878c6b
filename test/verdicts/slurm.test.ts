// The slurm suite's parsing and comparison, on a capture of Debian's Slurm 22.05.8.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migMinorsText } from "../../sim/src/nvsmi/caps.js";
import { mknodDead } from "../../sim/src/slurmd/procs.js";
import {
  compareGres,
  expandHostlist,
  judgeConfinement,
  migGresName,
  type ProbeAnswer,
  parseCgroupConf,
  parseGres,
  parseGresConf,
  parseNodes,
  parsePartitions,
  parseProbe,
  probeDevice,
  probeScript,
} from "../../src/verdicts/slurm.js";

const capture = readFileSync(
  "fixtures/captures/slurm-22.05.8_scontrol-show-node-partition_mig-and-whole-card.txt",
  "utf8",
);

describe("slurm suite: parsing Slurm's answers", () => {
  it("reads nodes, their typed gres, partitions and version from scontrol -o", () => {
    const nodes = parseNodes(capture);
    assert.deepEqual(
      nodes.map((n) => [n.name, n.state, n.partitions, n.version]),
      [
        ["sim01", "IDLE", ["mig"], "22.05.8"],
        ["sim02", "IDLE", ["gpu"], "22.05.8"],
      ],
    );
    assert.deepEqual(nodes[0]?.gres, [
      { name: "gpu", type: "3g.40gb", count: 1 },
      { name: "gpu", type: "2g.20gb", count: 1 },
      { name: "gpu", type: "1g.10gb", count: 2 },
    ]);
    assert.deepEqual(parsePartitions(capture).get("gpu"), ["sim02"]);
  });

  it("reads a drain reason with spaces, untyped and socket-bound gres, and hostlists", () => {
    const [n] = parseNodes(
      "NodeName=gpu07 Gres=gpu:4(S:0-1),gpu:a100:2(S:0) State=IDLE+DRAIN Partitions=gpu,debug Reason=slicecheck sc-1 gres check failed [root@2026-01-05T09:00:00]",
    );
    assert.equal(n?.reason, "slicecheck sc-1 gres check failed");
    assert.deepEqual(n?.gres, [
      { name: "gpu", type: null, count: 4 },
      { name: "gpu", type: "a100", count: 2 },
    ]);
    assert.deepEqual(parseGres("(null)"), []);
    assert.deepEqual(expandHostlist("sim[01-03,07],gpu1"), [
      "sim01",
      "sim02",
      "sim03",
      "sim07",
      "gpu1",
    ]);
  });

  it("takes gres.conf lines for the node only, device ranges as counts, and AutoDetect", () => {
    const conf = parseGresConf(
      [
        "AutoDetect=nvml",
        "NodeName=gpu[01-02] Name=gpu Type=1g.10gb File=/dev/nvidia-caps/nvidia-cap[21-23]",
        "NodeName=gpu03 Name=gpu Type=a100 File=/dev/nvidia0",
        "# NodeName=gpu01 Name=gpu Type=7g.80gb File=/dev/nvidia1",
      ].join("\n"),
      "gpu02",
    );
    assert.equal(conf.autoDetect, "nvml");
    assert.deepEqual(conf.lines, [
      { name: "gpu", type: "1g.10gb", file: "/dev/nvidia-caps/nvidia-cap[21-23]", count: 3 },
    ]);
  });

  it("takes the document's mig:<profile> gres lines too, a MultipleFiles line as one device", () => {
    const conf = parseGresConf(
      [
        "NodeName=gpu01 Name=mig Type=2g.20gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap30,/dev/nvidia-caps/nvidia-cap31",
        "NodeName=gpu01 Name=bandwidth Count=4G",
      ].join("\n"),
      "gpu01",
    );
    assert.deepEqual(conf.lines, [
      {
        name: "mig",
        type: "2g.20gb",
        file: "/dev/nvidia0,/dev/nvidia-caps/nvidia-cap30,/dev/nvidia-caps/nvidia-cap31",
        count: 1,
      },
    ]);
  });
});

describe("slurm suite: gres against the live instances", () => {
  const live = { profiles: ["1g.10gb", "1g.10gb", "3g.40gb"], wholeCards: 0, migGpus: 1 };

  it("reads the document's naming, and fails its stale whole-card gpu:8 on a one-GPU MIG node", () => {
    // The source document's line, on a node whose one GPU carries 2g.20gb x4 and nothing else.
    const gres = parseGres("gpu:8,mig:2g.20gb:4,mig:3g.40gb:2");
    assert.equal(migGresName(gres), "mig");
    assert.equal(migGresName(parseGres("gpu:1g.10gb:2,gpu:3g.40gb:1")), "gpu");
    const r = compareGres("scontrol", gres, {
      profiles: ["2g.20gb", "2g.20gb", "2g.20gb", "2g.20gb"],
      wholeCards: 0,
      migGpus: 1,
    });
    assert.deepEqual(r.problems, [
      "3g.40gb: scontrol has 2, the GPUs have 0",
      "scontrol offers 8 whole-card gpu gres, but 1 GPU(s) are in MIG mode and only 0 whole card(s) remain",
    ]);
    // An untyped mig gres names no profile.
    const u = compareGres("scontrol", parseGres("mig:4"), live);
    assert.ok(
      u.problems.includes("mig (untyped): scontrol has 4, the GPUs have 0"),
      u.problems.join("; "),
    );
  });

  it("passes matching counts per type", () => {
    const r = compareGres(
      "scontrol",
      [
        { type: "1g.10gb", count: 2 },
        { type: "3g.40gb", count: 1 },
      ],
      live,
    );
    assert.equal(r.ok, true, r.problems.join("; "));
  });

  it("names every type whose count differs, and a whole-card gres left on a MIG GPU", () => {
    const r = compareGres(
      "scontrol",
      [
        { type: "1g.10gb", count: 7 },
        { type: "h100", count: 1 },
      ],
      live,
    );
    assert.deepEqual(r.problems, [
      "1g.10gb: scontrol has 7, the GPUs have 2",
      "3g.40gb: scontrol has 0, the GPUs have 1",
      "scontrol offers 1 whole-card gpu gres, but 1 GPU(s) are in MIG mode and only 0 whole card(s) remain",
    ]);
    assert.equal(r.figures["scontrol:1g.10gb"], 7);
  });

  it("reads the probe job's device and the stress's figures", () => {
    const p = parseProbe(
      "SLICECHECK_PROBE node=sim01 job=4 cvd=2 gpus=2 file=/dev/nvidia-caps/nvidia-cap22 mig=gpu0/gi2/ci0 uuid=MIG-8ad9\nSLICECHECK stress t=1.0 tflops=8.10 errors=0\nSLICECHECK stress-final tflops=8.11 errors=0 iterations=99\n",
    );
    assert.deepEqual(p, {
      node: "sim01",
      job: "4",
      cvd: "2",
      gpus: "2",
      file: "/dev/nvidia-caps/nvidia-cap22",
      mig: "gpu0/gi2/ci0",
      uuid: "MIG-8ad9",
      tflops: 8.11,
      errors: 0,
      cvdSet: false,
      smi: [],
      caps: [],
      cudaUuid: null,
      cudaError: null,
      stressExit: null,
      reach: [],
    });
    assert.equal(parseProbe("srun: error: Unable to allocate resources").node, null);
  });

  it("names the probe's one device, or says why not: none, several, or a File it cannot map", () => {
    const p = (cvd: string, uuid: string, more: Partial<ProbeAnswer> = {}) =>
      probeDevice({
        node: "n",
        cvd: cvd || null,
        gpus: null,
        file: null,
        mig: null,
        uuid: uuid || null,
        tflops: null,
        errors: null,
        job: null,
        cvdSet: cvd !== "",
        smi: [],
        caps: [],
        cudaUuid: null,
        cudaError: null,
        stressExit: null,
        reach: [],
        ...more,
      });
    assert.deepEqual(p("2", "MIG-8ad9", { mig: "gpu0/gi2/ci0" }), {
      kind: "uuid",
      uuid: "MIG-8ad9",
      via: "mig-minors",
    });
    assert.deepEqual(p("MIG-8ad9", "MIG-8ad9"), {
      kind: "uuid",
      uuid: "MIG-8ad9",
      via: "CUDA_VISIBLE_DEVICES",
    });
    assert.equal(p("", "").kind, "none");
    assert.equal(p("0,1", "").kind, "several");
    // Under device cgroups CUDA_VISIBLE_DEVICES is 0; SLURM_STEP_GPUS says there were two.
    assert.equal(p("0", "", { gpus: "3,4" }).kind, "several");
    const whole = p("0", "", { file: "/dev/nvidia0" });
    assert.equal(whole.kind, "unmapped");
    assert.match(
      "why" in whole ? whole.why : "",
      /File \/dev\/nvidia0, which is no \/dev\/nvidia-caps device/,
    );
    const auto = p("0", "");
    assert.match("why" in auto ? auto.why : "", /no File in gres\.conf \(AutoDetect=nvml/);
    const gone = p("0", "", { file: "/dev/nvidia-caps/nvidia-cap22", mig: "gpu0/gi2/ci0" });
    assert.match("why" in gone ? gone.why : "", /is gpu0\/gi2\/ci0, which is no MIG instance/);
  });
});

// The probe's own shell script, run by a real sh on files shaped as a real node has them: a
// gres.conf naming /dev/nvidia-caps Files, the driver's mig-minors, Slurm's job variables.
describe("slurm suite: the probe job's script", () => {
  const dir = mkdtempSync(join(tmpdir(), "slicecheck-probe-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    join(dir, "gres.conf"),
    [
      "# a site's hand-written MIG gres.conf",
      "AutoDetect=off",
      "NodeName=gpu01 Name=gpu Type=3g.40gb File=/dev/nvidia-caps/nvidia-cap12",
      "NodeName=gpu01 Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap66,/dev/nvidia-caps/nvidia-cap67",
      "NodeName=gpu02 Name=gpu Type=1g.10gb File=/dev/nvidia-caps/nvidia-cap12",
      "nodename=gpu01 name=gpu type=h100 file=/dev/nvidia1",
    ].join("\n"),
  );
  mkdirSync(join(dir, "proc", "driver", "nvidia-caps"), { recursive: true });
  writeFileSync(join(dir, "proc", "driver", "nvidia-caps", "mig-minors"), migMinorsText());
  // A stress whose CUDA behaves as a fenced job's does: an index (as Slurm sets it) or nothing
  // gives the job's own device (STUB_OWN); a UUID is reached only if STUB_REACH lists it, else
  // CUDA's own refusal. It says what it ran on.
  writeFileSync(
    join(dir, "stress"),
    [
      "#!/bin/sh",
      'case "$CUDA_VISIBLE_DEVICES" in ""|[0-9]*) d="$STUB_OWN" ;; *) d="$CUDA_VISIBLE_DEVICES" ;; esac',
      'case " ${STUB_REACH:-$STUB_OWN} " in *" $d "*) [ -n "$d" ] && { echo "slicecheck-device program=stress uuid=$d sms=14"; echo "stress $* on $d"; echo "SLICECHECK stress-final tflops=1.00 errors=0 iterations=4"; exit 0; } ;; esac',
      'echo "CUDA error: no CUDA-capable device is detected (cudaErrorNoDevice=100 from cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) at slicecheck.cuh:191)" >&2',
      "exit 2",
      "",
    ].join("\n"),
    { mode: 0o755 },
  );
  // The job's nvidia-smi -L: what STUB_SMI holds.
  const smiBin = join(dir, "smi-bin");
  mkdirSync(smiBin, { recursive: true });
  writeFileSync(join(smiBin, "nvidia-smi"), "#!/bin/sh\nprintf '%b\\n' \"$STUB_SMI\"\n", {
    mode: 0o755,
  });
  const instances = [
    { label: "gpu0/gi1/ci0", uuid: "MIG-3g-uuid" },
    { label: "gpu0/gi7/ci0", uuid: "MIG-1g-uuid" },
  ];
  const probe = (env: Record<string, string>) => {
    const r = spawnSync("sh", ["-c", probeScript(2, instances, join(dir, "stress"))], {
      env: {
        PATH: `${smiBin}:${process.env.PATH ?? "/usr/bin:/bin"}`,
        SLURM_CONF: join(dir, "slurm.conf"),
        SLURMD_NODENAME: "gpu01",
        SLURM_JOB_ID: "42",
        SLICECHECK_PROC: join(dir, "proc"),
        SLICECHECK_DEV: join(dir, "no-dev"),
        STUB_OWN: "MIG-1g-uuid",
        ...env,
      },
      encoding: "utf8",
    });
    return { p: parseProbe(r.stdout), out: r.stdout };
  };

  it("maps a gres index to its /dev/nvidia-caps File and through mig-minors to its instance", () => {
    // The minors the files above name, as the simulated driver's mig-minors lists them.
    const minor = (key: string) =>
      Number(new RegExp(`^${key}/access (\\d+)$`, "m").exec(migMinorsText())?.[1]);
    assert.equal(minor("gpu0/gi7/ci0"), 67);
    assert.equal(minor("gpu0/gi1/ci0"), 13);
    const a = probe({ CUDA_VISIBLE_DEVICES: "1", SLURM_STEP_GPUS: "1" });
    assert.equal(a.p.mig, "gpu0/gi7/ci0", a.out);
    assert.equal(a.p.uuid, "MIG-1g-uuid");
    // The stress runs on what the job's CUDA gives it, nothing set by the probe.
    assert.match(a.out, /^stress --duration 2 --interval 0\.5 on MIG-1g-uuid$/m);
    assert.equal(a.p.cudaUuid, "MIG-1g-uuid");
    assert.equal(a.p.stressExit, 0);
    // File=…nvidia-cap12 is a GI's own access device, not a CI's: no instance is named.
    const b = probe({ CUDA_VISIBLE_DEVICES: "0" });
    assert.deepEqual([b.p.file, b.p.mig, b.p.uuid], ["/dev/nvidia-caps/nvidia-cap12", null, null]);
    assert.equal(probeDevice(b.p).kind, "unmapped");
    // Device cgroups renumber CUDA_VISIBLE_DEVICES from 0: SLURM_STEP_GPUS keeps the index.
    const c = probe({ CUDA_VISIBLE_DEVICES: "0", SLURM_STEP_GPUS: "1" });
    assert.equal(c.p.uuid, "MIG-1g-uuid");
    // Lowercase keys are keys too; a whole card's File maps to no MIG instance.
    const d = probe({ CUDA_VISIBLE_DEVICES: "2" });
    assert.deepEqual([d.p.file, d.p.uuid], ["/dev/nvidia1", null]);
  });

  it("with the document's mig gres (no variable set), reads the index from the job's own record", () => {
    // scontrol show job -d as Slurm 22.05.8 prints it for `srun --gres=mig:1g.10gb:1`.
    const bin = join(dir, "bin");
    mkdirSync(bin, { recursive: true });
    writeFileSync(
      join(bin, "scontrol"),
      '#!/bin/sh\necho "   JOB_GRES=mig:1g.10gb:1"\necho "     Nodes=gpu01 CPU_IDs=0 Mem=0 GRES=mig:1g.10gb:1(IDX:0)"\n',
      { mode: 0o755 },
    );
    mkdirSync(join(dir, "mig"), { recursive: true });
    writeFileSync(
      join(dir, "mig", "gres.conf"),
      "NodeName=gpu01 Name=gpu Type=h100 File=/dev/nvidia1\nNodeName=gpu01 Name=mig Type=1g.10gb File=/dev/nvidia-caps/nvidia-cap67\n",
    );
    const r = spawnSync("sh", ["-c", probeScript(2, instances, join(dir, "stress"), "mig")], {
      env: {
        PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`,
        SLURM_CONF: join(dir, "mig", "slurm.conf"),
        SLURMD_NODENAME: "gpu01",
        SLURM_JOB_ID: "7",
        SLICECHECK_PROC: join(dir, "proc"),
        STUB_OWN: "MIG-1g-uuid",
      },
      encoding: "utf8",
    });
    const p = parseProbe(r.stdout);
    assert.deepEqual(
      [p.gpus, p.file, p.mig, p.uuid],
      ["0", "/dev/nvidia-caps/nvidia-cap67", "gpu0/gi7/ci0", "MIG-1g-uuid"],
      r.stdout + r.stderr,
    );
    assert.match(r.stdout, /^stress --duration 2 --interval 0\.5 on MIG-1g-uuid$/m);
  });

  it("takes a MIG UUID from CUDA_VISIBLE_DEVICES as it is, and stops when nothing names a device", () => {
    const a = probe({ CUDA_VISIBLE_DEVICES: "MIG-3g-uuid" });
    assert.deepEqual(probeDevice(a.p), {
      kind: "uuid",
      uuid: "MIG-3g-uuid",
      via: "CUDA_VISIBLE_DEVICES",
    });
    // Nothing set, and the job's CUDA has no device: recorded as CUDA said it, not papered over.
    const none = probe({ STUB_OWN: "" });
    assert.equal(none.p.uuid, null);
    assert.equal(none.p.cvdSet, false);
    assert.equal(none.p.cudaUuid, null);
    assert.equal(none.p.stressExit, 2);
    assert.match(none.p.cudaError ?? "", /no CUDA-capable device is detected/);
    const other = probe({ CUDA_VISIBLE_DEVICES: "0", SLURMD_NODENAME: "gpu02" });
    assert.equal(other.p.file, "/dev/nvidia-caps/nvidia-cap12", "gpu02's own lines only");
  });

  it("records what the job sees (listing, caps it can open) and tries each neighbour by UUID", () => {
    const dev = join(dir, "dev", "nvidia-caps");
    mkdirSync(dev, { recursive: true });
    // Openable: config, and the job's own GI (7) and CI (gi7/ci0, minor 67); denied: GI 1's CI.
    for (const m of [1, 66, 67]) writeFileSync(join(dev, `nvidia-cap${m}`), "");
    mknodDead(join(dev, "nvidia-cap13"));
    const smi = [
      "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)",
      "  MIG 1g.10gb     Device  0: (UUID: MIG-1g-uuid)",
    ].join("\\n");
    const env = { SLICECHECK_DEV: join(dir, "dev"), STUB_SMI: smi, SLURM_STEP_GPUS: "1" };
    const fenced = probe({ ...env, CUDA_VISIBLE_DEVICES: "0" });
    const p = fenced.p;
    assert.equal(p.cvdSet, true);
    assert.deepEqual(p.smi.length, 2, fenced.out);
    assert.deepEqual(
      p.caps.map((c) => [c.minor, c.key, c.open]),
      [
        [1, "config", true],
        [13, "gpu0/gi1/ci0/access", false],
        [66, "gpu0/gi7/access", true],
        [67, "gpu0/gi7/ci0/access", true],
      ],
    );
    assert.match(p.caps[1]?.why ?? "", /cannot open .*nvidia-cap13/);
    assert.deepEqual(
      p.reach.map((r) => [r.target, r.exit, r.device]),
      [["MIG-3g-uuid", 2, null]],
    );
    assert.match(p.reach[0]?.why ?? "", /no CUDA-capable device/);
    const v = judgeConfinement(
      [{ asked: "gpu:1g.10gb:1", allocated: "MIG-1g-uuid", answer: p }],
      instances,
    );
    assert.deepEqual(v.problems, []);
    assert.equal(v.observed, true);
    // The neighbour's UUID reached, everything else fenced: still not confined.
    const leaky = probe({
      ...env,
      CUDA_VISIBLE_DEVICES: "0",
      STUB_REACH: "MIG-1g-uuid MIG-3g-uuid",
    });
    assert.deepEqual(
      leaky.p.reach.map((r) => [r.target, r.exit, r.device]),
      [["MIG-3g-uuid", 0, "MIG-3g-uuid"]],
    );
    const bad = judgeConfinement(
      [{ asked: "gpu:1g.10gb:1", allocated: "MIG-1g-uuid", answer: leaky.p }],
      instances,
    );
    assert.equal(bad.problems.length, 1);
    assert.match(
      bad.problems[0] ?? "",
      /^job 42 \(gpu:1g\.10gb:1, its instance gpu0\/gi7\/ci0\): its CUDA computes on 1 neighbour\(s\) named by UUID \(gpu0\/gi1\/ci0 MIG-3g-uuid\)$/,
    );
  });
});

describe("slurm suite: judging confinement as the job saw it", () => {
  const instances = [
    { label: "gpu0/gi1/ci0", uuid: "MIG-a" },
    { label: "gpu0/gi5/ci0", uuid: "MIG-b" },
    { label: "gpu0/gi13/ci0", uuid: "MIG-c" },
  ];
  const answer = (more: Partial<ProbeAnswer>): ProbeAnswer => ({
    ...parseProbe("SLICECHECK_PROBE node=sim01 job=9 cvd=0 cvdset=1 gpus=1\n"),
    ...more,
  });
  const smi = (...u: string[]) => u.map((x, i) => `  MIG 2g.20gb     Device  ${i}: (UUID: ${x})`);
  const cap = (key: string, open: boolean) => ({ minor: 0, key, open, why: open ? "" : "denied" });

  it("a job that sees, opens and reaches only its own instance is confined", () => {
    const v = judgeConfinement(
      [
        {
          asked: "gpu:2g.20gb:1",
          allocated: "MIG-b",
          answer: answer({
            smi: smi("MIG-b"),
            caps: [
              cap("config", true),
              cap("gpu0/gi5/access", true),
              cap("gpu0/gi1/ci0/access", false),
            ],
            reach: [
              { target: "MIG-a", exit: 2, device: null, why: "no CUDA-capable device" },
              { target: "MIG-c", exit: 2, device: null, why: "no CUDA-capable device" },
            ],
          }),
        },
      ],
      instances,
    );
    assert.deepEqual(v.problems, []);
    assert.deepEqual(v.figures, {
      jobs: 1,
      listedForeign: 0,
      capsForeign: 0,
      neighboursTried: 2,
      neighboursReached: 0,
    });
  });

  it("an unfenced job (every instance listed and open, neighbours reached) is not confined, each named", () => {
    const v = judgeConfinement(
      [
        {
          asked: "gpu:2g.20gb:1",
          allocated: "MIG-b",
          answer: answer({
            smi: smi("MIG-a", "MIG-b", "MIG-c"),
            caps: [cap("gpu0/gi1/ci0/access", true), cap("gpu0/gi5/ci0/access", true)],
            reach: [{ target: "MIG-c", exit: 0, device: "MIG-c", why: "" }],
          }),
        },
      ],
      instances,
    );
    assert.deepEqual(v.problems, [
      "job 9 (gpu:2g.20gb:1, its instance gpu0/gi5/ci0): its nvidia-smi -L lists 2 instance(s) not its own (gpu0/gi1/ci0, gpu0/gi13/ci0); it opens the /dev/nvidia-caps access of 1 other GPU instance(s) (gpu0/gi1); its CUDA computes on 1 neighbour(s) named by UUID (gpu0/gi13/ci0 MIG-c)",
    ]);
  });

  it("without a known allocation one instance is taken as the job's own, only the rest count", () => {
    const v = judgeConfinement(
      [{ asked: "mig:2g.20gb:1", allocated: null, answer: answer({ smi: smi("MIG-b") }) }],
      instances,
    );
    assert.deepEqual(v.problems, []);
    const two = judgeConfinement(
      [{ asked: "mig:2g.20gb:1", allocated: null, answer: answer({ smi: smi("MIG-a", "MIG-b") }) }],
      instances,
    );
    assert.equal(two.figures.listedForeign, 1);
  });

  it("a job that observed nothing is not called confined", () => {
    assert.equal(
      judgeConfinement([{ asked: "x", allocated: "MIG-b", answer: answer({}) }], instances)
        .observed,
      false,
    );
  });

  it("reads ConstrainDevices from cgroup.conf, case and comments as Slurm takes them", () => {
    assert.equal(
      parseCgroupConf("CgroupPlugin=autodetect\nConstrainDevices=yes\n").constrainDevices,
      "yes",
    );
    assert.equal(parseCgroupConf("constraindevices=No # tenants share\n").constrainDevices, "no");
    assert.equal(
      parseCgroupConf("#ConstrainDevices=yes\nConstrainCores=yes\n").constrainDevices,
      null,
    );
  });
});
