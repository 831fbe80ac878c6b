// JUnit XML and a JSON summary of a run, for CI systems that read neither Allure nor our tables.
// Same checks, same titles and the same failed/broken split as the Allure results.
import { countChecks, type RunContext } from "./context.js";

const esc = (s: string) =>
  s.replace(
    /[<>&"']/g,
    (c) => `&${{ "<": "lt", ">": "gt", "&": "amp", '"': "quot", "'": "apos" }[c]};`,
  );

interface Case {
  classname: string;
  name: string;
  status: "passed" | "failed" | "broken";
  message: string;
}

function cases(ctx: RunContext): Case[] {
  const out: Case[] = [];
  for (const r of ctx.rows)
    out.push({
      classname: `${r.node}.gpu${r.gpu ?? "?"}.${r.instance}`,
      name: `${r.suite} on ${r.node} ${r.instance} (${r.profile})`,
      status: r.status === "ok" ? "passed" : r.status,
      message: r.note ?? "",
    });
  for (const v of ctx.isolation)
    out.push({
      classname: `${v.node}.gpu${v.gpu}.${v.aggressor}`,
      name: `isolation ${v.fault} ${v.verdict} on ${v.node} (aggressor ${v.aggressor})`,
      status: v.status,
      message: v.summary,
    });
  for (const x of ctx.checks ?? [])
    out.push({
      classname: `${x.node}.gpu${x.gpu ?? "?"}.${x.suite}`,
      name: x.title,
      status: x.status,
      message: x.message,
    });
  for (const p of ctx.problems)
    out.push({
      classname: p.node,
      name: `${p.node} can be checked${p.suite ? ` (${p.suite})` : ""}`,
      status: "broken",
      message: p.message,
    });
  return out;
}

export function junitXml(ctx: RunContext): string {
  const cs = cases(ctx);
  const c = countChecks(ctx);
  const body = cs
    .map((k) => {
      const open = `    <testcase classname="${esc(k.classname)}" name="${esc(k.name)}"`;
      if (k.status === "passed") return `${open}/>`;
      const tag = k.status === "failed" ? "failure" : "error";
      return `${open}>\n      <${tag} message="${esc(k.message)}"/>\n    </testcase>`;
    })
    .join("\n");
  return `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="slicecheck ${esc(ctx.runId)}" tests="${cs.length}" failures="${c.failed}" errors="${c.broken}" time="${ctx.durationS.toFixed(1)}">
  <testsuite name="slicecheck run ${esc(ctx.runId)}" tests="${cs.length}" failures="${c.failed}" errors="${c.broken}" timestamp="${esc(ctx.startedAt)}" time="${ctx.durationS.toFixed(1)}">
${body}
  </testsuite>
</testsuites>
`;
}

export function jsonSummary(ctx: RunContext) {
  return {
    runId: ctx.runId,
    label: ctx.label,
    exitCode: ctx.exitCode,
    counts: countChecks(ctx),
    nodes: ctx.nodes.map((n) => ({ node: n.node, driver: n.driver, cuda: n.cuda })),
    checks: cases(ctx).map((k) => ({ title: k.name, status: k.status, message: k.message })),
  };
}
