// layout: right after the run applied --layout FILE -c NAME, every GPU matches that config
// (MIG mode, GPU instances with their placements). Failed: drift, with what differs.
import {
  current,
  fail,
  forEachGpu,
  forEachNode,
  harness,
  type VerdictView,
} from "slicecheck/suite";
import { brokenIf } from "./lib/judge.js";

const run = harness();
const config = run.options.layout?.config ?? "(no --layout)";

describe("layout", () => {
  forEachNode(run.nodes, (node) => {
    let verdicts: VerdictView[] | null = null;
    let problem: string | null = null;
    before(async () => {
      if (node.error) return;
      try {
        verdicts = await run.layout(node);
      } catch (e) {
        problem = (e as Error).message;
      }
    });
    const judge = (gpu: number | null) => {
      brokenIf(node.error ?? problem);
      const v = verdicts?.find((x) => x.gpu === gpu) ?? verdicts?.find((x) => x.gpu === null);
      if (!v)
        return brokenIf(
          verdicts ? "the assert did not cover this GPU" : "no --layout was given",
          "NO_LAYOUT",
        );
      const check = current();
      check.figures(v.figures);
      check.note(v.message);
      for (const e of v.evidence) check.evidence(e.name, e.content);
      if (v.status === "broken") brokenIf(v.message, v.code);
      if (v.status === "failed") fail("LAYOUT_DRIFT", v.message);
    };
    if (node.gpus.length === 0) it(`matches config ${config}`, () => judge(null));
    forEachGpu(node, (gpu) => {
      it(`matches config ${config}`, () => judge(gpu.index));
    });
  });
});
