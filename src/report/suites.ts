// What the Allure results of a run carry besides the tests (allure-mocha writes those live from
// the suites): categories by the checks' stable codes, the environment, and the executor.

/** Categories group by the check's code, which every failed or broken check's message starts
 * with (`[ISOLATION_VIOLATION] …`); message text and figures vary from run to run. */
export const CATEGORIES = [
  {
    name: "Isolation violation",
    matchedStatuses: ["failed"],
    messageRegex: "(?s)^\\[ISOLATION_VIOLATION\\].*",
  },
  {
    name: "Driver regression",
    matchedStatuses: ["failed"],
    messageRegex: "(?s)^\\[DRIVER_REGRESSION\\].*",
  },
  { name: "Layout drift", matchedStatuses: ["failed"], messageRegex: "(?s)^\\[LAYOUT_DRIFT\\].*" },
  { name: "GPU health", matchedStatuses: ["failed"], messageRegex: "(?s)^\\[HEALTH\\].*" },
  {
    name: "Node unreachable",
    matchedStatuses: ["broken"],
    messageRegex:
      "(?s)^\\[(CONNECT|AUTH|HOST_KEY_UNKNOWN|HOST_KEY_CHANGED|HOST_KEY_REVOKED|CONNECTION_LOST|NODE_LOCKED)\\].*",
  },
  {
    name: "Refused by an interlock",
    matchedStatuses: ["broken"],
    messageRegex: "(?s)^\\[INTERLOCK\\].*",
  },
  { name: "Harness error", matchedStatuses: ["broken"], messageRegex: "(?s).*" },
];

/** Who ran it: GitHub Actions, GitLab CI, or this machine. `report` fills a local buildOrder. */
export function executorInfo(
  run: { runId: string; label: string | null },
  env = process.env,
): Record<string, unknown> {
  if (env.GITHUB_ACTIONS) {
    const url = `${env.GITHUB_SERVER_URL ?? "https://github.com"}/${env.GITHUB_REPOSITORY}/actions/runs/${env.GITHUB_RUN_ID}`;
    return {
      name: "GitHub Actions",
      type: "github",
      buildName: `${env.GITHUB_WORKFLOW ?? "slicecheck"} #${env.GITHUB_RUN_NUMBER ?? "?"}`,
      buildOrder: Number(env.GITHUB_RUN_NUMBER) || undefined,
      buildUrl: url,
      reportName: `slicecheck ${run.runId}`,
    };
  }
  if (env.GITLAB_CI) {
    return {
      name: "GitLab CI",
      type: "gitlab",
      buildName: `${env.CI_JOB_NAME ?? "slicecheck"} #${env.CI_PIPELINE_IID ?? env.CI_PIPELINE_ID ?? "?"}`,
      buildOrder: Number(env.CI_PIPELINE_IID ?? env.CI_PIPELINE_ID) || undefined,
      buildUrl: env.CI_JOB_URL ?? env.CI_PIPELINE_URL,
      reportName: `slicecheck ${run.runId}`,
    };
  }
  return {
    name: "local",
    type: "local",
    buildName: run.label ? `${run.runId} (${run.label})` : run.runId,
    reportName: `slicecheck ${run.runId}`,
  };
}

export function environmentOf(run: {
  runId: string;
  label: string | null;
  suites: string[];
  layout: { file: string; config: string } | null;
  nodes: { node: string; driver: string | null; cuda: string | null; gpus: string[] }[];
}): Record<string, string> {
  const env: Record<string, string> = {
    "run.id": run.runId,
    "run.label": run.label ?? "-",
    "run.suites": run.suites.join(","),
    "run.nodes": String(run.nodes.length),
    layout: run.layout ? `${run.layout.file} -c ${run.layout.config}` : "as found",
  };
  for (const n of run.nodes) {
    env[`${n.node}.driver`] = n.driver ?? "unknown";
    env[`${n.node}.cuda`] = n.cuda ?? "unknown";
    env[`${n.node}.gpus`] = [...new Set(n.gpus)].join(", ") || "unknown";
  }
  return env;
}
