// A sampled phase sends its workloads' requests to the node's supervisor before the sampler's
// looping command: the sampler waits an interval before its first reading anyway, and on a node
// whose cores every launch shares, its start ahead of them delayed the last workload's.
import assert from "node:assert/strict";
import { SlicecheckError } from "../../src/errors.js";
import type {
  Command,
  ExecOptions,
  ExecResult,
  Supervisor,
  Transport,
} from "../../src/transport/types.js";
import { withUtilization } from "../../src/workloads/utilization.js";
import { nodeSpec } from "../helpers/node.js";

describe("a sampled phase's order of requests", () => {
  it("sends every workload's request before the sampler's", async () => {
    const sent: string[] = [];
    const sup: Supervisor = {
      fallback: null,
      close: async () => {},
      exec: (c: Command, o?: ExecOptions) => {
        sent.push("argv" in c ? c.argv.join(" ") : "sampler");
        // The sampler's loop runs until the phase's end stops it.
        return new Promise<ExecResult>((resolve, reject) => {
          if ("argv" in c) resolve({ exitCode: 0, stdout: "", stderr: "" } as ExecResult);
          o?.signal?.addEventListener("abort", () =>
            reject(new SlicecheckError("INTERRUPTED", "stopped")),
          );
        });
      },
    };
    const t = { node: nodeSpec("n1"), supervise: async () => sup } as unknown as Transport;
    const { result } = await withUtilization(t, [], { sample: true, durationS: 30 }, async (p) => {
      assert.ok(p);
      await Promise.all([1, 2, 3].map((i) => p.supervisor.exec({ argv: ["wl", String(i)] })));
      return { outcomes: [] };
    });
    assert.deepEqual(result.outcomes, []);
    assert.deepEqual(sent, ["wl 1", "wl 2", "wl 3", "sampler"]);
  });
});
