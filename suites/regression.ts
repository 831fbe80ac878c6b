// regression: this run's measurements against the latest run of the same nodes on another
// driver in the records (the comparison `slicecheck diff` makes), one test per product,
// profile, workload and metric. Runs last, so every other suite's measurements are recorded.
import Mocha from "mocha";
import { current, harness, type VerdictView } from "slicecheck/suite";
import { brokenIf, judgeVerdict } from "./lib/judge.js";

// What the run prepares for this suite, and how reports label it.
const run = harness({
  labels: { epic: "MIG partition validation", feature: "Driver regression" },
});
/** The one verdict regressionChecks gives when there is nothing to compare with. */
const NOTHING = "measurements compared with another driver";

describe("regression", () => {
  let verdicts: VerdictView[] = [];
  let problem: string | null = null;
  const judge = (v: VerdictView) => judgeVerdict(v, "DRIVER_REGRESSION");
  before(async function () {
    try {
      verdicts = await run.regressions();
    } catch (e) {
      problem = `the records could not be compared: ${(e as Error).message}`;
      return;
    }
    // The comparisons are known only now: one test each, added before mocha runs the tests.
    const suite = this.test?.parent;
    for (const v of verdicts.filter((x) => x.title !== NOTHING)) {
      const t = new Mocha.Test(v.title, () => judge(v));
      t.file = this.test?.file;
      suite?.addTest(t);
    }
  });
  it(NOTHING, () => {
    brokenIf(problem, "RECORDS");
    const none = verdicts.find((x) => x.title === NOTHING);
    if (none) return judge(none);
    current().figures({ compared: verdicts.length });
  });
});
