// `run --via slurm` under ConstrainDevices: whether the nodes' jobs have their devices confined,
// read from real Slurm 22.05 captures of `scontrol show config`; the gres a confined task asks
// for; what is refused before anything is submitted.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { SlicecheckError } from "../../src/errors.js";
import {
  constrainFromConfig,
  deviceConstraint,
  gpuGres,
  refuseConfined,
} from "../../src/harness/via-slurm-devices.js";
import { suiteOf } from "../../src/util/suite-registry.js";
import { parseGres } from "../../src/verdicts/slurm.js";

const capture = (name: string) =>
  readFileSync(`fixtures/captures/slurm-22.05.8_scontrol-show-config_${name}.txt`, "utf8").replace(
    /^#.*\n/,
    "",
  );

describe("run --via slurm: device confinement (ConstrainDevices)", () => {
  const cgroup = capture("task-cgroup_constraindevices-yes");
  const none = capture("task-none");

  it("reads ConstrainDevices from the controller's Cgroup Support Configuration block", () => {
    assert.equal(constrainFromConfig(cgroup), true);
    assert.equal(
      constrainFromConfig(cgroup.replace(/ConstrainDevices( *)= yes/, "ConstrainDevices$1= no")),
      false,
    );
    // No block (no plugin uses cgroups): the controller does not say.
    assert.equal(constrainFromConfig(none), null);
    // A ConstrainDevices of another block (none exists; a site's plugin parameters) is not it.
    assert.equal(
      constrainFromConfig(`${none}\nOther Configuration:\nConstrainDevices = yes\n`),
      null,
    );
  });

  it("the controller's word first, else the cgroup.conf beside slurm.conf, else Slurm's default (no)", () => {
    const off = cgroup.replace(/ConstrainDevices( *)= yes/, "ConstrainDevices$1= no");
    assert.equal(deviceConstraint(off, "ConstrainDevices=yes\n").on, false);
    assert.equal(deviceConstraint(cgroup, null).on, true);
    assert.equal(deviceConstraint(none, "# site\nconstraindevices=YES # gpus\n").on, true);
    assert.match(deviceConstraint(none, "ConstrainDevices=yes\n").source, /^cgroup\.conf/);
    assert.equal(deviceConstraint(none, "ConstrainCores=yes\n").on, false);
    assert.deepEqual(deviceConstraint(none, null), {
      on: false,
      source: "no readable cgroup.conf (Slurm's default: no)",
    });
  });

  it("a confined task asks for every GPU gres of its node, typed as Slurm lists them", () => {
    assert.deepEqual(gpuGres(parseGres("gpu:3g.40gb:1,gpu:2g.20gb:1,gpu:1g.10gb:2(S:0)")), {
      tres: "gres:gpu:3g.40gb:1,gres:gpu:2g.20gb:1,gres:gpu:1g.10gb:2",
      devices: 4,
    });
    assert.deepEqual(gpuGres(parseGres("gpu:4,shard:8,mig:1g.10gb:1")), {
      tres: "gres:gpu:4,gres:mig:1g.10gb:1",
      devices: 5,
    });
    assert.equal(gpuGres(parseGres("(null)")), null);
  });

  it("refuses --layout and the probe-job suite where devices are confined (exit 3), nothing else", () => {
    const on = { on: true, source: "cgroup.conf (ConstrainDevices=yes)" };
    const refused = (o: { layout: string | null; suites: string[] }) => {
      try {
        refuseConfined(on, o);
        return null;
      } catch (e) {
        assert.ok(e instanceof SlicecheckError);
        assert.equal(e.code, "USAGE");
        return e.message;
      }
    };
    assert.match(
      refused({ layout: "/l.yaml", suites: ["stress"] }) ?? "",
      /cannot apply --layout here: .*ConstrainDevices=yes.*run it directly over SSH/,
    );
    assert.match(
      refused({ layout: null, suites: ["stress", suiteOf("confinement")] }) ?? "",
      /probe jobs could never start beside it/,
    );
    assert.equal(refused({ layout: null, suites: ["stress", "health"] }), null);
    // Not confined: nothing refused.
    refuseConfined(
      { on: false, source: "x" },
      { layout: "/l.yaml", suites: [suiteOf("confinement")] },
    );
  });
});
