// The compliance summary of a run.json written before check records (no `allChecks`): per node
// its GPUs, driver and layout, then each requirement with pass/fail and a link to its evidence
// further down the same page (a PDF keeps in-page links). Plain HTML with inline CSS: it must render from file:// and print offline.
import { relative, resolve } from "node:path";
import { countChecks, gpuTitle, type RunContext } from "./context.js";

const esc = (s: unknown) =>
  String(s).replace(
    /[<>&"]/g,
    (c) => `&${{ "<": "lt", ">": "gt", "&": "amp", '"': "quot" }[c as "<"]};`,
  );

interface Requirement {
  id: string;
  gpu: string;
  instance: string;
  requirement: string;
  result: "PASS" | "FAIL" | "BROKEN";
  figure: string;
  evidence: unknown;
  log: string | null;
}

const RESULT = { ok: "PASS", passed: "PASS", failed: "FAIL", broken: "BROKEN" } as const;

const REQUIREMENT: Record<string, string> = {
  stress: "the instance computes without errors at its share of the GPU",
  nccl: "nccl-tests completes without wrong results",
  victimsUnaffected: "neighbours keep their throughput and memory while this instance faults",
  faultContained: "the fault stays in the faulting instance",
  xidAttributed: "kernel Xid events name only the faulting instance",
  recovered: "the faulting instance runs again without a GPU reset",
};

function requirements(ctx: RunContext, node: string): Requirement[] {
  const out: Requirement[] = [];
  let n = 0;
  const id = () => `ev-${node}-${++n}`.replace(/[^\w-]/g, "_");
  for (const r of ctx.rows.filter((x) => x.node === node)) {
    const tflops = r.metrics.tflops;
    out.push({
      id: id(),
      gpu: gpuTitle(ctx, node, r.gpu),
      instance: `${r.instance} ${r.profile}`,
      requirement: `${r.suite}: ${REQUIREMENT[r.suite] ?? r.suite}`,
      result: RESULT[r.status],
      figure:
        tflops !== undefined
          ? `${tflops.toFixed(2)} TFLOP/s`
          : r.metrics.algbw !== undefined
            ? `${r.metrics.algbw.toFixed(2)} GB/s`
            : (r.note ?? ""),
      evidence: {
        metrics: r.metrics,
        note: r.note,
        placement: r.placement,
        sm: r.sm,
        uuid: r.instanceUuid,
      },
      log: r.log,
    });
  }
  for (const v of ctx.isolation.filter((x) => x.node === node))
    out.push({
      id: id(),
      gpu: gpuTitle(ctx, node, v.gpu),
      instance: `${v.aggressor} ${v.profile}`,
      requirement: `isolation, ${v.fault}: ${REQUIREMENT[v.verdict] ?? v.verdict}`,
      result: RESULT[v.status],
      figure: v.summary,
      evidence: v.evidence,
      log: null,
    });
  for (const p of ctx.problems.filter((x) => x.node === node))
    out.push({
      id: id(),
      gpu: "-",
      instance: "-",
      requirement: `the node can be checked${p.suite ? ` (${p.suite})` : ""}`,
      result: "BROKEN",
      figure: p.message,
      evidence: p,
      log: null,
    });
  return out;
}

/** `htmlDir`: the page's folder, so that log links work from the page (and from the PDF). */
export function legacyComplianceHtml(
  ctx: RunContext,
  allureLink: string | null,
  htmlDir = ".",
): string {
  const c = countChecks(ctx);
  const verdict = c.failed ? "NOT COMPLIANT" : c.broken ? "INCOMPLETE" : "COMPLIANT";
  const sections = ctx.nodes.map((n) => {
    const reqs = requirements(ctx, n.node);
    const rows = reqs
      .map(
        (r) =>
          `<tr class="${r.result.toLowerCase()}"><td>${esc(r.gpu)}</td><td>${esc(r.instance)}</td><td>${esc(r.requirement)}</td><td class="res">${r.result}</td><td>${esc(r.figure)}</td><td><a href="#${r.id}">evidence</a></td></tr>`,
      )
      .join("\n");
    const evidence = reqs
      .map(
        (r) =>
          `<div class="ev" id="${r.id}"><h4>${esc(r.instance)}: ${esc(r.requirement)}: ${r.result}</h4><pre>${esc(JSON.stringify(r.evidence, null, 2))}</pre>${r.log ? `<p>log: <a href="${esc(relative(htmlDir, resolve(r.log)))}">${esc(r.log)}</a></p>` : ""}</div>`,
      )
      .join("\n");
    return `<section class="node" id="node-${esc(n.node)}">
<h2>${esc(n.node)}</h2>
<p>GPU: ${esc(n.gpus.map((g) => `${g.index}: ${g.name}`).join(", ") || "unknown")} · driver ${esc(n.driver ?? "unknown")} · CUDA ${esc(n.cuda ?? "unknown")} · layout ${esc(ctx.layout ? `${ctx.layout.file} -c ${ctx.layout.config}` : "as found")}</p>
<table><thead><tr><th>GPU</th><th>instance</th><th>requirement</th><th>result</th><th>figure</th><th></th></tr></thead>
<tbody>
${rows}
</tbody></table>
<h3>Evidence</h3>
${evidence}
</section>`;
  });
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>slicecheck compliance ${esc(ctx.runId)}</title>
<style>
body{font:12px/1.4 system-ui,sans-serif;margin:1.5em;color:#111}
h1{font-size:20px;margin:0 0 .3em} h2{font-size:16px;border-bottom:2px solid #333;margin-top:1.5em}
table{border-collapse:collapse;width:100%;margin:.5em 0} th,td{border:1px solid #bbb;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#eee} .res{font-weight:bold} tr.pass .res{color:#176b1f} tr.fail .res{color:#b00020} tr.broken .res{color:#a05a00}
.ev{page-break-inside:avoid;border-left:3px solid #ccc;padding-left:8px;margin:.6em 0} .ev h4{margin:.2em 0;font-size:12px}
pre{font-size:10px;white-space:pre-wrap;word-break:break-all;margin:0} .verdict{font-size:16px;font-weight:bold}
section.node{page-break-before:auto}
</style></head><body>
<h1>MIG isolation compliance: run ${esc(ctx.runId)}${ctx.label ? ` (${esc(ctx.label)})` : ""}</h1>
<p class="verdict" id="verdict">${verdict}</p>
<p id="counts">${c.passed} passed, ${c.failed} failed, ${c.broken} broken · ${ctx.nodes.length} node(s) · started ${esc(ctx.startedAt)}, ${ctx.durationS.toFixed(1)} s · suites ${esc(ctx.suites.join(", "))}</p>
${allureLink ? `<p>Allure report: <a href="${esc(allureLink)}">${esc(allureLink)}</a></p>` : ""}
${sections.join("\n")}
</body></html>
`;
}
