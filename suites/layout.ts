// layout: right after the run applied --layout FILE -c NAME, every GPU matches that config
// (MIG mode, GPU instances with their placements). Failed: drift, with what differs.
import { forEachGpu, forEachNode, harness, type VerdictView } from "slicecheck/suite";
import { brokenIf, judgeVerdict } from "./lib/judge.js";

// What the run prepares for this suite, and how reports label it.
const run = harness({
  needsLayout: true,
  labels: { epic: "MIG partition validation", feature: "Layout" },
});
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
      judgeVerdict(v, "LAYOUT_DRIFT");
    };
    if (node.gpus.length === 0) it(`matches config ${config}`, () => judge(null));
    forEachGpu(node, (gpu) => {
      it(`matches config ${config}`, () => judge(gpu.index));
    });
  });
});
