// `sim up --login-delay`: each login pays the delay once, as a real node's start-up files make
// it, and the command's own bash scripts (the simulated tools' wrappers) do not pay it again.
import assert from "node:assert/strict";
import { LOGIN_MARK } from "../../sim/src/sshd.js";
import { newRunId } from "../../src/transport/open.js";
import { SshTransport } from "../../src/transport/ssh.js";
import { useCluster } from "../helpers/cluster.js";

describe("a simulated slow login (real sshd)", function () {
  this.timeout(60_000);
  const c = useCluster([{ gpu: "H100-80GB", gpus: 1, loginDelayS: 0.2 }]);

  it("runs its start-up file once per login: the command's own bash does not source it again", async () => {
    const t = new SshTransport(c.inventory.nodes[0]!, { runId: newRunId() });
    await t.connect();
    try {
      const probe = `echo "login=\${${LOGIN_MARK}-}"; bash -c 'echo "child=\${BASH_ENV-none} \${${LOGIN_MARK}-}"'; nvidia-smi -L | head -1`;
      const r = await t.exec({ shell: probe });
      assert.equal(r.exitCode, 0, r.stderr);
      const [login, child, smi] = r.stdout.trim().split("\n");
      assert.equal(login, "login=slow", "the login sourced its start-up file");
      assert.equal(
        child,
        "child=none slow",
        "a bash the command starts gets no BASH_ENV to source",
      );
      assert.match(smi ?? "", /^GPU 0: NVIDIA H100/);
    } finally {
      await t.close();
    }
  });
});
