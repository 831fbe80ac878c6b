// The run's checks as mocha tests, reported by allure-mocha: a suite per node (parentSuite), GPU
// (suite) and instance (subSuite); one test per instance × workload suite and per isolation
// verdict. The checks already ran; each test replays one outcome, so that a failed check is an
// AssertionError (Allure `failed`) and a harness problem a plain Error (Allure `broken`).
// Titles carry no run-specific value (no run id, no figure, no UUID), so history lines up.
import { AssertionError } from "node:assert";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import * as allure from "allure-js-commons";
import AllureMochaReporter from "allure-mocha";
import Mocha from "mocha";
import { type ContextRow, type ExtraCheck, gpuTitle, type RunContext } from "./context.js";

/** Allure's testCaseId hashes the file with the titles: one fixed name keeps history stable. */
const SUITE_FILE = resolve("suites/slicecheck-run");

export const CATEGORIES = [
  {
    name: "Isolation violation",
    matchedStatuses: ["failed"],
    messageRegex: "(?s).*isolation violation.*",
  },
  { name: "Driver regression", matchedStatuses: ["failed"], messageRegex: "(?s).*regression.*" },
  { name: "Layout drift", matchedStatuses: ["failed"], messageRegex: "(?s).*layout drift.*" },
  {
    name: "Node unreachable",
    matchedStatuses: ["broken"],
    messageRegex: "(?s).*node unreachable.*",
  },
  { name: "Harness error", matchedStatuses: ["broken"], messageRegex: "(?s).*" },
];

/** Who ran it: GitHub Actions, GitLab CI, or this machine. `report` fills a local buildOrder. */
export function executorInfo(ctx: RunContext, env = process.env): Record<string, unknown> {
  if (env.GITHUB_ACTIONS) {
    const url = `${env.GITHUB_SERVER_URL ?? "https://github.com"}/${env.GITHUB_REPOSITORY}/actions/runs/${env.GITHUB_RUN_ID}`;
    return {
      name: "GitHub Actions",
      type: "github",
      buildName: `${env.GITHUB_WORKFLOW ?? "slicecheck"} #${env.GITHUB_RUN_NUMBER ?? "?"}`,
      buildOrder: Number(env.GITHUB_RUN_NUMBER) || undefined,
      buildUrl: url,
      reportName: `slicecheck ${ctx.runId}`,
    };
  }
  if (env.GITLAB_CI) {
    return {
      name: "GitLab CI",
      type: "gitlab",
      buildName: `${env.CI_JOB_NAME ?? "slicecheck"} #${env.CI_PIPELINE_IID ?? env.CI_PIPELINE_ID ?? "?"}`,
      buildOrder: Number(env.CI_PIPELINE_IID ?? env.CI_PIPELINE_ID) || undefined,
      buildUrl: env.CI_JOB_URL ?? env.CI_PIPELINE_URL,
      reportName: `slicecheck ${ctx.runId}`,
    };
  }
  return {
    name: "local",
    type: "local",
    buildName: ctx.label ? `${ctx.runId} (${ctx.label})` : ctx.runId,
    reportName: `slicecheck ${ctx.runId}`,
  };
}

export function environmentInfo(ctx: RunContext): Record<string, string> {
  const env: Record<string, string> = {
    "run.id": ctx.runId,
    "run.label": ctx.label ?? "-",
    "run.suites": ctx.suites.join(","),
    layout: ctx.layout ? `${ctx.layout.file} -c ${ctx.layout.config}` : "as found",
  };
  for (const n of ctx.nodes) {
    env[`${n.node}.driver`] = n.driver ?? "unknown";
    env[`${n.node}.cuda`] = n.cuda ?? "unknown";
    env[`${n.node}.gpus`] = n.gpus.map((g) => g.name).join(", ") || "unknown";
  }
  return env;
}

function fmtMetrics(m: Record<string, number>): string {
  return Object.entries(m)
    .map(([k, v]) => `${k}=${Number.isInteger(v) ? v : v.toFixed(2)}`)
    .join(", ");
}

async function common(ctx: RunContext, node: string, gpu: string, sub: string): Promise<void> {
  const n = ctx.nodes.find((x) => x.node === node);
  await allure.parentSuite(node);
  await allure.suite(gpu);
  await allure.subSuite(sub);
  await allure.parameter("node", node);
  await allure.parameter("driver", n?.driver ?? "unknown");
  await allure.parameter("CUDA", n?.cuda ?? "unknown");
  await allure.parameter(
    "layout",
    ctx.layout ? `${ctx.layout.file} -c ${ctx.layout.config}` : "as found",
  );
}

async function rowTest(ctx: RunContext, r: ContextRow): Promise<void> {
  await common(ctx, r.node, gpuTitle(ctx, r.node, r.gpu), `${r.instance} ${r.profile}`);
  await allure.epic("MIG partition validation");
  await allure.feature(r.suite === "nccl" ? "NCCL" : "Stress");
  await allure.story(r.profile);
  await allure.severity(allure.Severity.NORMAL);
  // MIG UUIDs change whenever an instance is re-created: shown, not part of the history key.
  await allure.parameter("instance UUID", r.instanceUuid, { excluded: true });
  await allure.description(
    `${r.suite} on ${r.node} ${r.instance} (${r.profile}, slices ${r.placement ?? "-"}, ${r.sm ?? "?"} SMs): ${fmtMetrics(r.metrics)}`,
  );
  if (existsSync(r.log)) await allure.attachmentPath("workload log", r.log, "text/plain");
  await allure.attachment("metrics.json", JSON.stringify(r.metrics, null, 2), "application/json");
  if (r.status === "broken")
    throw new Error(`harness error: ${r.suite} could not be measured: ${r.note ?? "no figures"}`);
  if (r.status === "failed")
    throw new AssertionError({
      message: `${r.suite} failed on ${r.node} ${r.instance} (${r.profile}): ${r.note ?? ""} ${fmtMetrics(r.metrics)}`,
    });
}

async function verdictTest(ctx: RunContext, v: RunContext["isolation"][number]): Promise<void> {
  const inst = ctx.rows.find((r) => r.node === v.node && r.instance === v.aggressor);
  await common(ctx, v.node, gpuTitle(ctx, v.node, v.gpu), `${v.aggressor} ${v.profile}`);
  await allure.epic("Tenant isolation");
  await allure.feature(`fault: ${v.fault}`);
  await allure.story(v.verdict);
  await allure.severity(allure.Severity.CRITICAL);
  await allure.parameter("mode", v.mode);
  if (inst) await allure.parameter("instance UUID", inst.instanceUuid, { excluded: true });
  await allure.description(v.summary);
  await allure.attachment("evidence.json", JSON.stringify(v.evidence, null, 2), "application/json");
  if (v.status === "broken") throw new Error(`harness error: broken verdict: ${v.summary}`);
  if (v.status === "failed")
    throw new AssertionError({
      message: `isolation violation on ${v.node} GPU ${v.gpu}: ${v.verdict} (${v.fault} by ${v.aggressor}): ${v.summary}`,
    });
}

const EXTRA_FEATURE = {
  layout: "Layout",
  health: "GPU health",
  regression: "Driver regression",
} as const;

async function extraTest(ctx: RunContext, x: ExtraCheck): Promise<void> {
  await common(ctx, x.node, gpuTitle(ctx, x.node, x.gpu), x.suite);
  await allure.epic("MIG partition validation");
  await allure.feature(EXTRA_FEATURE[x.suite]);
  await allure.severity(x.suite === "health" ? allure.Severity.CRITICAL : allure.Severity.NORMAL);
  for (const [k, v] of Object.entries(x.parameters)) await allure.parameter(k, v);
  await allure.description(x.message);
  if (x.attachment) await allure.attachment(x.attachment.name, x.attachment.content, "text/plain");
  if (x.status === "broken") throw new Error(`harness error: ${x.message}`);
  if (x.status === "failed") throw new AssertionError({ message: x.message });
}

/** Builds the mocha tree from the run context. Exported for tests. */
export function buildSuites(root: Mocha.Suite, ctx: RunContext): void {
  const suiteOf = (parent: Mocha.Suite, title: string): Mocha.Suite => {
    const found = parent.suites.find((s) => s.title === title);
    if (found) return found;
    const s = Mocha.Suite.create(parent, title);
    s.file = SUITE_FILE;
    return s;
  };
  const add = (parent: Mocha.Suite, title: string, fn: () => Promise<void>) => {
    const t = new Mocha.Test(title, fn);
    t.file = SUITE_FILE;
    parent.addTest(t);
  };
  for (const r of ctx.rows) {
    const s = suiteOf(
      suiteOf(suiteOf(root, r.node), gpuTitle(ctx, r.node, r.gpu)),
      `${r.instance} ${r.profile}`,
    );
    add(s, `${r.suite} on ${r.node} ${r.instance} (${r.profile})`, () => rowTest(ctx, r));
  }
  for (const v of ctx.isolation) {
    const s = suiteOf(
      suiteOf(suiteOf(root, v.node), gpuTitle(ctx, v.node, v.gpu)),
      `${v.aggressor} ${v.profile}`,
    );
    add(s, `isolation ${v.fault} ${v.verdict} on ${v.node} (aggressor ${v.aggressor})`, () =>
      verdictTest(ctx, v),
    );
  }
  for (const x of ctx.checks ?? []) {
    const s = suiteOf(suiteOf(suiteOf(root, x.node), gpuTitle(ctx, x.node, x.gpu)), x.suite);
    add(s, x.title, () => extraTest(ctx, x));
  }
  for (const p of ctx.problems) {
    const s = suiteOf(root, p.node);
    add(s, `${p.node} can be checked${p.suite ? ` (${p.suite})` : ""}`, async () => {
      await allure.parentSuite(p.node);
      await allure.epic("MIG partition validation");
      await allure.feature("Node reachability");
      await allure.parameter("node", p.node);
      const unreachable = /connect|unreachable|ECONN|ETIMEDOUT|EHOSTUNREACH|host key/i.test(
        p.message,
      );
      throw new Error(`${unreachable ? "node unreachable" : "harness error"}: ${p.message}`);
    });
  }
}

/**
 * Runs the replayed checks through allure-mocha into `resultsDir` (serial: allure-mocha does
 * not work in mocha 12's parallel mode). Returns the number of failed or broken tests.
 */
export async function writeAllureResults(ctx: RunContext, resultsDir: string): Promise<number> {
  mkdirSync(resultsDir, { recursive: true });
  const mocha = new Mocha({
    reporter: AllureMochaReporter as unknown as Mocha.ReporterConstructor,
    reporterOptions: {
      resultsDir,
      environmentInfo: environmentInfo(ctx),
      categories: CATEGORIES,
    },
    timeout: 60_000,
    forbidOnly: false,
  });
  buildSuites(mocha.suite, ctx);
  const failures = await new Promise<number>((done) => mocha.run(done));
  mocha.dispose();
  // allure-mocha writes environment.properties and categories.json, never executor.json.
  writeFileSync(`${resultsDir}/executor.json`, `${JSON.stringify(executorInfo(ctx), null, 2)}\n`);
  return failures;
}
