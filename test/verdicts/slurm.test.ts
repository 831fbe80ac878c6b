// The slurm suite's parsing and comparison, on a capture of Debian's Slurm 22.05.8.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  compareGres,
  expandHostlist,
  parseGres,
  parseGresConf,
  parseNodes,
  parsePartitions,
  parseProbe,
  probeDevice,
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
      { type: "1g.10gb", file: "/dev/nvidia-caps/nvidia-cap[21-23]", count: 3 },
    ]);
  });
});

describe("slurm suite: gres against the live instances", () => {
  const live = { profiles: ["1g.10gb", "1g.10gb", "3g.40gb"], wholeCards: 0, migGpus: 1 };

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
      "SLICECHECK_PROBE node=sim01 job=4 cvd=2 uuid=MIG-8ad9\nSLICECHECK stress t=1.0 tflops=8.10 errors=0\nSLICECHECK stress-final tflops=8.11 errors=0 iterations=99\n",
    );
    assert.deepEqual(p, { node: "sim01", cvd: "2", uuid: "MIG-8ad9", tflops: 8.11, errors: 0 });
    assert.equal(parseProbe("srun: error: Unable to allocate resources").node, null);
  });

  it("names the probe's one device, or says why not: none, several, or a File with no UUID", () => {
    const p = (cvd: string, uuid: string) =>
      probeDevice({ node: "n", cvd: cvd || null, uuid: uuid || null, tflops: null, errors: null });
    assert.deepEqual(p("2", "MIG-8ad9"), { kind: "uuid", uuid: "MIG-8ad9" });
    assert.deepEqual(p("MIG-8ad9", "MIG-8ad9"), { kind: "uuid", uuid: "MIG-8ad9" });
    assert.equal(p("", "").kind, "none");
    assert.equal(p("0,1", "").kind, "several");
    const real = p("0", "nvidia-cap21");
    assert.equal(real.kind, "unmapped");
    assert.match("why" in real ? real.why : "", /names no instance UUID .*AutoDetect=nvml/);
  });
});
