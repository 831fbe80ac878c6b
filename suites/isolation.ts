// isolation: on every GPU with two or more MIG instances, each instance (the first N with
// --aggressors) is the aggressor once: a baseline of its neighbours' stress alone, then per
// fault the victims' stress while the aggressor runs out of memory, hits an illegal address,
// is killed, hangs, or runs its own stress; the Xids the kernel log gained; a short stress on
// the aggressor afterwards. Four verdicts per fault. The suite injects faults, so the
// interlocks guard it: a node with someone else's compute process, or a Slurm node that is not
// drained, is never faulted (its tests are broken, saying why).
import {
  current,
  describeGpu,
  describeInstance,
  fail,
  forEachNode,
  harness,
  type VerdictView,
} from "slicecheck/suite";
import { brokenIf } from "./lib/judge.js";

const run = harness({ injectsFaults: true });

describe("isolation", () => {
  forEachNode(run.nodes, (node) => {
    const plan = run.isolation(node);
    before(() => plan.start());
    if (plan.scenarios.length === 0)
      it("has a GPU to partition", () =>
        brokenIf(node.refusal ? `refused: ${node.refusal}` : (node.error ?? plan.problem)));
    for (const gpu of node.gpus) {
      const mine = plan.scenarios.filter((s) => s.gpu === gpu.index);
      if (mine.length === 0) continue;
      describeGpu(gpu, () => {
        for (const sc of mine) {
          const title = `aggressor ${sc.aggressor.title}`;
          const inst = gpu.instances.find((i) => i.label === sc.aggressor.label);
          const scope = (fn: () => void) =>
            inst ? describeInstance(inst, fn, title) : describe(title, fn);
          scope(() => {
            for (const name of sc.verdictNames) {
              it(`${sc.fault}: ${name}`, async () => {
                const out = await sc.result();
                const v: VerdictView | undefined = out.verdicts.find((x) => x.title === name);
                const check = current();
                check.window(out.startMs, out.stopMs);
                for (const s of out.steps) check.phase(s.name, s.startMs, s.stopMs, s.status);
                check.parameter("mode", sc.mode);
                check.parameter("fault", sc.fault);
                check.parameter("aggressor", sc.aggressor.label);
                check.parameter("profile", sc.aggressor.profile);
                check.parameter("verdict", name);
                if (!v) return brokenIf(`no ${name} verdict came back`, "ISOLATION_UNDECIDED");
                check.figures(v.figures);
                check.note(v.message);
                for (const e of v.evidence) check.evidence(e.name, e.content);
                check.evidence(
                  "evidence.json",
                  JSON.stringify({ figures: v.figures }, null, 2),
                  "application/json",
                );
                if (v.status === "broken") brokenIf(v.message, v.code);
                if (v.status === "failed")
                  fail(
                    v.code,
                    `${node.name} GPU ${gpu.index}: ${name} (${sc.fault} by ${sc.aggressor.label}): ${v.message}`,
                  );
              });
            }
          });
        }
      });
    }
  });
});
