// health: at the end of the run, per GPU: the driver answers, persistence mode (reported, never
// failed), no uncorrected volatile ECC errors, no new Xid on the GPU's bus since the run started
// (a critical Xid always fails; only the Xids an injected fault kind produces on its aggressor's
// GI/CI are excused, with a note), and the GPU as one failure domain: a GPU that fell off the
// bus fails once, stating that every instance on it is lost with it.
import { forEachGpu, forEachNode, harness, type VerdictView } from "slicecheck/suite";
import { brokenIf, judgeVerdict } from "./lib/judge.js";

// What the run prepares for this suite, and how reports label it.
const run = harness({
  readsKernelLog: true,
  unfitOnFailure: true,
  labels: { epic: "MIG partition validation", feature: "GPU health", severity: "critical" },
});
const TITLES = [
  "driver answers",
  "persistence mode",
  "has no uncorrected ECC errors",
  "logged no new Xid",
  "failure domain",
];

describe("health", () => {
  // Every node read at once (at most --concurrency at a time), each node's tests awaiting its
  // own: read in each node's own `before`, mocha would read them one after another. A node
  // that could not be reached is not read (its tests are broken with why).
  const reads = run.eachNode(async (node) => (node.error ? [] : run.health(node)));
  before(() => reads.start());
  forEachNode(run.nodes, (node) => {
    const judge = async (gpu: number | null, title: string) => {
      brokenIf(node.error);
      let verdicts: VerdictView[];
      try {
        verdicts = await reads.result(node);
      } catch (e) {
        return brokenIf((e as Error).message);
      }
      // A driver that does not answer at all yields one node-wide verdict.
      const v =
        verdicts.find((x) => x.gpu === gpu && x.title.endsWith(title)) ??
        verdicts.find((x) => x.gpu === null);
      if (!v) return brokenIf(`no ${title} verdict came back`, "HEALTH_UNDECIDED");
      judgeVerdict(v, "HEALTH");
    };
    if (node.gpus.length === 0) it("driver answers", () => judge(null, "driver answers"));
    forEachGpu(node, (gpu) => {
      for (const t of TITLES) it(t, () => judge(gpu.index, t));
    });
  });
});
