// layout: right after the run applied --layout FILE -c NAME, every GPU matches that config
// (MIG mode, GPU instances with their placements). Failed: drift, with what differs. Without
// --layout, every GPU is held to its node's intended layout (inventory mig_config): one that
// differs (a node back from a driver upgrade with no instances) fails LAYOUT_NOT_INTENDED.
import { forEachGpu, forEachNode, harness, type VerdictView } from "slicecheck/suite";
import { brokenIf, judgeVerdict } from "./lib/judge.js";

// What the run prepares for this suite, and how reports label it.
const run = harness({
  needsLayout: true,
  labels: { epic: "MIG partition validation", feature: "Layout" },
});
const config = run.options.layout?.config;
const title = config ? `matches config ${config}` : "is in its intended layout";

describe("layout", () => {
  // Every node read at once (at most --concurrency at a time), each node's tests awaiting its
  // own: read in each node's own `before`, mocha would read them one after another. A node
  // that could not be reached is not read (its tests are broken with why).
  const reads = run.eachNode(async (node) => (node.error ? null : run.layout(node)));
  before(() => reads.start());
  forEachNode(run.nodes, (node) => {
    const judge = async (gpu: number | null) => {
      brokenIf(node.error);
      let verdicts: VerdictView[] | null;
      try {
        verdicts = await reads.result(node);
      } catch (e) {
        return brokenIf((e as Error).message);
      }
      const v = verdicts?.find((x) => x.gpu === gpu) ?? verdicts?.find((x) => x.gpu === null);
      if (!v)
        return brokenIf(
          verdicts ? "the assert did not cover this GPU" : "no --layout was given",
          "NO_LAYOUT",
        );
      judgeVerdict(v, "LAYOUT_DRIFT");
    };
    if (node.gpus.length === 0) it(title, () => judge(null));
    forEachGpu(node, (gpu) => {
      it(title, () => judge(gpu.index));
    });
  });
});
