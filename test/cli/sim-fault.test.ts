import assert from "node:assert/strict";
import { join } from "node:path";
import { readState } from "../../sim/src/nvsmi/state.js";
import { cli } from "../helpers/cli.js";
import { useCluster } from "../helpers/cluster.js";

describe("slicecheck sim fault (real sshd, simulated H100 x2)", function () {
  this.timeout(60_000);
  const c = useCluster([{ gpu: "H100-80GB", driver: "580.65.06", gpus: 2 }]);
  const fault = (...args: string[]) => cli("sim", "fault", ...args, "--inventory", c.inventoryPath);
  const stateDir = () => join(c.dir, ".sim.d/nodes/sim01/state");

  it("plants faults the node shows the way a real node does, and --clear undoes exactly them", async () => {
    const before = readState(stateDir());
    const planted = [
      await fault("sim01", "foreign-process", "--gpu", "1"),
      await fault("sim01", "holder", "--name", "nvidia-persistenced", "--gpu", "0"),
      await fault("sim01", "holder", "--name", "nvidia_drm"),
      await fault("sim01", "slurm", "--state", "drained"),
      await fault("sim01", "no-reset", "--gpu", "1"),
    ];
    assert.deepEqual(
      planted.map((r) => r.code),
      [0, 0, 0, 0, 0],
    );
    assert.match(
      planted[0]!.stdout,
      /sim01: planted foreign-process: compute process 31000 \(python3, 2048 MiB\) on GPU 1/,
    );

    const probe = [
      "nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,noheader,nounits",
      "echo ---",
      "nvidia-smi",
      "echo ---",
      "pgrep -x nvidia-persistenced && echo persistenced-running",
      "pgrep -x nv-hostengine || echo no-hostengine",
      "lsmod | grep '^nvidia_drm '",
      "scontrol show node sim01 | grep -o 'State=[^ ]*'",
      "nvidia-smi --query-gpu=index,virtualization_mode --format=csv,noheader",
    ].join("; ");
    const r = await cli("exec", "-i", c.inventoryPath, "--json", "--shell", "--", probe);
    assert.equal(r.code, 0, r.stdout);
    const out = (JSON.parse(r.stdout).nodes[0] as { stdout: string }).stdout;
    const [apps, table, host] = out.split("---\n");
    const uuid1 = before.gpus[1]!.uuid;
    assert.equal(apps!.trim(), `${uuid1}, 31000, python3, 2048`);
    assert.match(table!, /\|\s+1\s+N\/A\s+N\/A\s+31000\s+C\s+python3\s+2048MiB \|/);
    assert.match(host!, /^\d+\npersistenced-running\nno-hostengine\nnvidia_drm +\d+ +0\n/);
    assert.match(host!, /State=IDLE\+DRAIN\n0, None\n1, Pass-Through\n$/);

    const cleared = await fault("sim01", "--clear");
    assert.equal(cleared.code, 0);
    assert.match(cleared.stdout, /sim01: cleared 5 planted fault\(s\)/);
    assert.deepEqual(readState(stateDir()), before);
    const after = await cli(
      "exec",
      "-i",
      c.inventoryPath,
      "--shell",
      "--",
      "scontrol show node sim01 | grep -o 'State=[^ ]*'; pgrep -x nvidia-persistenced || echo none",
    );
    assert.match(after.stdout, /sim01: State=IDLE\nsim01: none\n/);
  });

  it("refuses an unknown kind, a missing --name and a GPU the node lacks, with exit 3", async () => {
    const unknown = await fault("sim01", "meteor");
    assert.equal(unknown.code, 3);
    assert.match(
      unknown.stderr,
      /unknown fault kind 'meteor'; the kinds are:\n {2}foreign-process --gpu N/,
    );
    const name = await fault("sim01", "holder");
    assert.equal(name.code, 3);
    assert.match(name.stderr, /holder needs --name nvidia-persistenced\|nv-hostengine\|nvidia_drm/);
    const gpu = await fault("sim01", "no-reset", "--gpu", "5");
    assert.equal(gpu.code, 3);
    assert.match(gpu.stderr, /node sim01 has no GPU 5; it has GPUs 0-1/);
    const node = await fault("sim09", "no-reset");
    assert.equal(node.code, 3);
    assert.match(node.stderr, /no simulated node 'sim09'/);
  });

  it("gpu-lost: Xid 79 in the kernel log, then nvidia-smi reports the GPU lost as a real driver does; ecc-uncorrectable: the count and Xid 95", async () => {
    const lost = await fault("sim01", "gpu-lost", "--gpu", "1");
    assert.equal(lost.code, 0, lost.stderr);
    const ecc = await fault("sim01", "ecc-uncorrectable", "--gpu", "0");
    assert.equal(ecc.code, 0, ecc.stderr);
    const probe = [
      "nvidia-smi --query-gpu=index,ecc.errors.uncorrected.volatile.total --format=csv,noheader; echo exit=$?",
      "nvidia-smi -i 1 -L; echo exit=$?",
      "dmesg | grep -E 'Xid|fallen off'",
    ].join("; ");
    const r = await cli("exec", "-i", c.inventoryPath, "--json", "--shell", "--", probe);
    const out = (JSON.parse(r.stdout).nodes[0] as { stdout: string }).stdout;
    const pci1 = readState(stateDir()).gpus[1]!.pciBusId.replace(/^0000/, "");
    const line = `Unable to determine the device handle for GPU${pci1}: GPU is lost.  Reboot the system to recover this GPU`;
    assert.ok(out.startsWith(`${line}\n0, 1\nexit=15\n${line}\nexit=15\n`), out);
    assert.match(
      out,
      /NVRM: Xid \(PCI:0000:[0-9a-f]{2}:00\): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus\./,
    );
    assert.match(out, /NVRM: GPU 0000:[0-9a-f]{2}:00\.0: GPU has fallen off the bus\./);
    assert.match(
      out,
      /: 95, pid='<unknown>', name=<unknown>, Uncontained: FBHUB\. RST: Yes, D-RST: No/,
    );
    const cleared = await fault("sim01", "--clear");
    assert.match(cleared.stdout, /cleared 2 planted fault/);
    assert.equal(readState(stateDir()).gpus[1]!.lost, undefined);
  });
});
