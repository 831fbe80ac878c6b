// The sign-off page: what a reviewer signs first (headline, per GPU route, layout, driver,
// tenants and how many were verified isolated, per requirement the result), then the pictures
// per GPU, then every check of the run with its figure and a link to its evidence further down
// (in-page links survive printing to PDF). Plain HTML, inline CSS and SVG: it renders from
// file:// and prints offline.
import { relative, resolve, sep } from "node:path";
import { countOf } from "../../verdicts/checks.js";
import { describePolicy } from "../../verdicts/coverage.js";
import type { RunContext } from "../context.js";
import { esc } from "../svg/common.js";
import { figuresInline, headlineFigure } from "./figures.js";
import { checkResult, resultWord, type SignoffModel, signoffModel } from "./model.js";
import { gpuPictures } from "./pictures.js";

/** A file's link from the page's folder, never an absolute path of the control machine. */
export function relativeLink(htmlDir: string, path: string): string {
  return relative(resolve(htmlDir), resolve(path)).split(sep).join("/");
}

const cls = (r: string) => r.toLowerCase().replace(/\s+/g, "-");
const anchor = (id: string) => `ev-${id}`.replace(/[^\w-]/g, "_");

const list = (xs: readonly string[]) => (xs.length ? xs.join(", ") : "none");

/** The nodes whose tenant confinement was not assessed, for the scope's "what did not". */
function confinementLeft(m: SignoffModel): string {
  const left = m.coverage.confinement.filter((n) => n.state === "not assessed");
  return left.length
    ? esc(
        `; tenant confinement NOT ASSESSED on ${left.map((n) => `${n.node} (${n.why})`).join(", ")}`,
      )
    : "";
}

/** What ran and what did not, before anything else: a reviewer signs a scope, not a colour. */
function scope(ctx: RunContext, m: SignoffModel): string {
  const drivers = [...new Set(ctx.nodes.map((n) => n.driver ?? "unknown"))];
  const cov = m.coverage;
  const ran = cov.suites.filter((s) => s.state !== "not run" && s.state !== "not assessed");
  const notRun = cov.suites.filter((s) => s.state === "not run" || s.state === "not assessed");
  const mig = m.gpus.filter((g) => g.partitioned);
  const agg = mig.map(
    (g) => `${esc(g.node)} GPU ${g.gpu}: ${g.aggressors} of ${g.tenants} instance(s) as aggressor`,
  );
  const faultsLeft = cov.allFaults.filter((f) => !cov.faults.includes(f));
  const rows: [string, string][] = [
    ["date", esc(ctx.startedAt.slice(0, 10))],
    ["run", `${esc(ctx.runId)}${ctx.label ? ` (${esc(ctx.label)})` : ""}`],
    ["nodes", `${ctx.nodes.length}: ${esc(list(ctx.nodes.map((n) => n.node)))}`],
    ["driver", esc(list(drivers))],
    [
      "duration",
      `run ${ctx.durationS.toFixed(1)} s (${esc(ctx.startedAt)} to ${esc(ctx.finishedAt)}); workload window ${cov.windowS === null ? "unknown" : `${cov.windowS} s`}`,
    ],
    [
      "what ran",
      esc(
        `suites ${list(ran.map((s) => `${s.suite}${s.state === "partly assessed" ? " (partly assessed)" : ""}`))}; fault kinds ${list(cov.faults)} (${cov.faults.length} of ${cov.allFaults.length}); routes ${list(cov.routes)}`,
      ) + (agg.length ? `; ${agg.join("; ")}` : ""),
    ],
    [
      "what did not",
      esc(
        `suites ${list(notRun.map((s) => `${s.suite} (${s.state})`))}; fault kinds ${list(faultsLeft)}`,
      ) +
        mig
          .filter((g) => g.aggressors < g.tenants)
          .map(
            (g) =>
              `; ${esc(g.node)} GPU ${g.gpu}: ${g.tenants - g.aggressors} instance(s) never an aggressor`,
          )
          .join("") +
        confinementLeft(m),
    ],
    [
      "policy",
      `${esc(m.policy.name ? `${m.policy.name} (${m.policy.source})` : m.policy.source)}: ${esc(describePolicy(m.policy))}`,
    ],
  ];
  return `<table id="scope">${rows.map(([k, v]) => `<tr data-key="${k}"><th>${k}</th><td>${v}</td></tr>`).join("")}</table>`;
}

function head(ctx: RunContext, m: SignoffModel, allureLink: string | null): string {
  const c = countOf(m.checks);
  return `<h1>MIG isolation compliance: run ${esc(ctx.runId)}${ctx.label ? ` (${esc(ctx.label)})` : ""}</h1>
${scope(ctx, m)}
<p class="verdict ${cls(m.headline)}" id="verdict">${m.headline}</p>
<p id="tagline">${esc(m.tagline)}</p>
${m.reasons.length ? `<ul id="reasons">${m.reasons.map((r) => `<li>${esc(r)}</li>`).join("")}</ul>` : ""}
<p id="counts">${c.passed} passed, ${c.failed} failed, ${c.broken} broken${c.skipped ? `, ${c.skipped} skipped` : ""} · ${ctx.nodes.length} node(s) · suites ${esc(ctx.suites.join(", "))}</p>
${allureLink ? `<p>Allure report: <a href="${esc(allureLink)}">${esc(allureLink)}</a></p>` : ""}`;
}

function ledger(m: SignoffModel): string {
  const items = m.judgement.items
    .map(
      (i) =>
        `<tr class="${i.met ? "pass" : "not-assessed"}" data-key="${esc(i.key)}"><td>${esc(i.what)}</td><td class="res">${i.met ? "MET" : "NOT MET"}</td><td>${i.tested} of ${i.required}</td><td>${esc(i.missing)}</td></tr>`,
    )
    .join("\n");
  return `<h2>Coverage against the sign-off policy</h2>
<table id="ledger"><thead><tr><th>the policy asks</th><th>result</th><th>tested</th><th>missing</th></tr></thead>
<tbody>${items}</tbody></table>`;
}

function gpuTable(m: SignoffModel): string {
  const rows = m.gpus
    .map(
      (g) =>
        `<tr data-node="${esc(g.node)}" data-gpu="${g.gpu}"><td>${esc(g.node)}</td><td>${g.gpu}: ${esc(g.name)}</td><td class="route">${esc(g.route)}</td><td>${esc(g.layout)}</td><td>${esc(g.driver)}</td><td>${esc(g.cuda)}</td><td class="tenants">${g.tenants}</td><td class="aggressors">${g.partitioned ? `${g.aggressors} of ${g.tenants}` : "–"}</td><td class="faults">${esc(list(g.faults))}</td><td class="verified">${g.partitioned ? `${g.verified} of ${g.tenants}` : "–"}</td></tr>`,
    )
    .join("\n");
  return `<h2>What is signed</h2>
<table id="gpus"><thead><tr><th>node</th><th>GPU</th><th>partitioning</th><th>layout</th><th>driver</th><th>CUDA</th><th>tenants</th><th>aggressors</th><th>fault kinds</th><th>verified isolated</th></tr></thead>
<tbody>${rows || `<tr><td colspan="10">no GPU could be read</td></tr>`}</tbody></table>
<p class="hint">Tenants: the instances the layout gives. Verified isolated: instances whose own faults were contained (aggressor) and that survived a neighbour's fault (victim), with every verdict of those scenarios passed; an instance that was only ever a victim, or only the aggressor, is not verified.</p>`;
}

function requirementTable(m: SignoffModel): string {
  const rows = m.requirements
    .map(
      (r) =>
        `<tr class="${cls(r.result)}" data-key="${esc(r.key)}"><td>${esc(r.title)}</td><td class="res">${r.result}</td><td>${r.passed} passed, ${r.failed} failed, ${r.broken} broken${r.skipped ? `, ${r.skipped} skipped` : ""}</td><td class="coverage">${esc(r.coverage)}</td><td>${esc(r.where.join(", "))}</td></tr>`,
    )
    .join("\n");
  return `<table id="requirements"><thead><tr><th>requirement</th><th>result</th><th>checks</th><th>coverage</th><th>where it did not pass</th></tr></thead>
<tbody>${rows}</tbody></table>`;
}

function pictures(m: SignoffModel): string {
  const out = m.gpus.map((g) => {
    const p = gpuPictures(g, m.checks);
    const id = `gpu-${g.node}-${g.gpu}`.replace(/[^\w-]/g, "_");
    return `<div class="gpu-pictures" id="${id}">
<figure class="slice-map">${p.sliceMap}</figure>
${p.throughput ? `<figure class="throughput">${p.throughput}</figure>` : ""}
${p.matrix ? `<figure class="matrix">${p.matrix}</figure>` : ""}
</div>`;
  });
  return out.length ? `<h2>Pictures</h2>\n${out.join("\n")}` : "";
}

function evidenceBlock(c: SignoffModel["checks"][number], htmlDir: string): string {
  // Log lines only where a reviewer has to read why; a passed check's figures say enough.
  const inline = c.evidence
    .filter((e) => e.content && e.contentType !== "application/json" && c.status !== "passed")
    .map((e) => {
      const lines = (e.content ?? "").split("\n");
      const more = lines.length > 12 ? `\n… ${lines.length - 12} more line(s)` : "";
      return `<p class="evn">${esc(e.name)}</p><pre>${esc(lines.slice(0, 12).join("\n") + more)}</pre>`;
    })
    .join("");
  const files = c.evidence
    .filter((e) => e.path)
    .map((e) => {
      const rel = relativeLink(htmlDir, e.path!);
      return `<a class="file" href="${esc(rel)}">${esc(e.name)}: ${esc(rel)}</a>`;
    })
    .join(" · ");
  return `<div class="ev ${c.status}" id="${anchor(c.id)}"><h4>${esc(c.node ?? "run")} ${c.gpu === null ? "" : `GPU ${c.gpu} `}${esc(c.instance ? `${c.instance.label} ${c.instance.profile} ` : "")}· ${esc(c.suite)}: ${esc(c.title)}: ${checkResult(c)} ${c.status === "passed" ? "" : `[${esc(c.code)}]`}</h4>
${c.message ? `<p>${esc(c.message)}</p>` : ""}${figuresInline(c)}${inline}${files ? `<p>log: ${files}</p>` : ""}</div>`;
}

function checksOf(ctx: RunContext, m: SignoffModel, htmlDir: string): string {
  const nodes = [
    ...new Set([...ctx.nodes.map((n) => n.node), ...m.checks.map((c) => c.node ?? "run")]),
  ];
  return nodes
    .map((node) => {
      const list = m.checks.filter((c) => (c.node ?? "run") === node);
      const n = ctx.nodes.find((x) => x.node === node);
      const gpus = m.gpus.filter((g) => g.node === node);
      const rows = list
        .map(
          (c) =>
            `<tr class="${cls(resultWord(c.status))}"><td>${esc(c.suite)}</td><td>${c.gpu ?? "–"}</td><td>${esc(c.instance ? `${c.instance.label} ${c.instance.profile}` : "–")}</td><td>${esc(c.title)}</td><td class="res">${checkResult(c)}</td><td>${esc(headlineFigure(c))}</td><td><a href="#${anchor(c.id)}">evidence</a></td></tr>`,
        )
        .join("\n");
      return `<section class="node" id="node-${esc(node)}">
<h2>${node === "run" && !n ? "run-wide checks (no single node)" : `${esc(node)}: checks`}</h2>
<p>${
        n
          ? `${gpus.map((g) => `GPU ${g.gpu}: ${esc(g.name)} (${esc(g.route)})`).join(", ") || "GPU unknown"} · driver ${esc(n.driver ?? "unknown")} · CUDA ${esc(n.cuda ?? "unknown")}${n.error ? ` · could not be checked: ${esc(n.error)}` : ""}`
          : "checks of the whole run: the regression compares each product and profile across nodes; the harness's own checks"
      }</p>
<table class="checks"><thead><tr><th>suite</th><th>GPU</th><th>instance</th><th>check</th><th>result</th><th>figure</th><th></th></tr></thead>
<tbody>
${rows || `<tr><td colspan="7">no check ran on this node</td></tr>`}
</tbody></table>
</section>`;
    })
    .join("\n")
    .concat(
      `\n<section id="evidence"><h2>Evidence</h2><div class="evs">\n${m.checks.map((c) => evidenceBlock(c, htmlDir)).join("\n")}\n</div></section>`,
    );
}

/** The block a reviewer signs: what they sign (the headline and the policy), their name, the
 * date and a line for the signature. */
function signoffBlock(ctx: RunContext, m: SignoffModel): string {
  return `<section id="signoff"><h2>Sign-off</h2>
<p>I reviewed run ${esc(ctx.runId)} and its evidence above. Headline: <b>${m.headline}</b> (${esc(m.tagline)}), judged by the sign-off policy ${esc(m.policy.name ? `${m.policy.name} (${m.policy.source})` : m.policy.source)}.</p>
<table class="sign"><tr><th>reviewer</th><td></td></tr><tr><th>role</th><td></td></tr><tr><th>date</th><td></td></tr><tr><th>signature</th><td class="line"></td></tr></table>
</section>`;
}

const CSS = `body{font:11px/1.35 system-ui,sans-serif;margin:1.2em;color:#111}
h1{font-size:18px;margin:0 0 .3em} h2{font-size:14px;border-bottom:2px solid #333;margin:1.2em 0 .4em}
table{border-collapse:collapse;width:100%;margin:.4em 0} th,td{border:1px solid #bbb;padding:2px 5px;text-align:left;vertical-align:top}
th{background:#eee} .res{font-weight:bold;white-space:nowrap} .pass .res{color:#1b5e20} .fail .res{color:#b71c1c} .broken .res{color:#e65100} .not-assessed .res{color:#555}
.verdict{font-size:18px;font-weight:bold;margin:.2em 0} .verdict.compliant{color:#1b5e20} .verdict.not-compliant{color:#b71c1c} .verdict.not-assessed{color:#8a5a00}
.hint{color:#555;font-size:10px} figure{margin:.3em 0;page-break-inside:avoid} .gpu-pictures{page-break-inside:avoid}
table.figures{width:auto;font-size:9px;margin:.2em 0} table.figures th{font-weight:normal;background:#f6f6f6}
.ev{page-break-inside:avoid;border-left:3px solid #ccc;padding-left:6px;margin:.4em 0;font-size:10px} .ev.failed{border-color:#b71c1c} .ev.broken{border-color:#e65100}
.ev h4{margin:.1em 0;font-size:10px} .ev p{margin:.1em 0} .evn{color:#555}
#evidence .evs{columns:2;column-gap:14px} .ev{break-inside:avoid} .fig{font-size:9px;color:#222} .fig b{font-weight:600}
pre{font-size:8.5px;white-space:pre-wrap;word-break:break-all;margin:0} table.checks td{font-size:10px}
#scope{width:auto} #scope th{width:7em} .verdict.partial{color:#8a5a00} #tagline{margin:0 0 .3em;font-weight:600}
#signoff{page-break-inside:avoid} table.sign{width:60%} table.sign td{height:2.2em} table.sign td.line{border-bottom:2px solid #111}
@page{size:A4;margin:16mm 10mm 14mm 10mm}`;

/** `htmlDir`: the page's folder, so that log links work from the page (and from the PDF). */
export function signoffHtml(ctx: RunContext, allureLink: string | null, htmlDir = "."): string {
  const m = signoffModel(ctx);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>slicecheck compliance ${esc(ctx.runId)}</title>
<style>${CSS}</style></head><body>
${head(ctx, m, allureLink)}
${ledger(m)}
${gpuTable(m)}
${requirementTable(m)}
${pictures(m)}
${checksOf(ctx, m, htmlDir)}
${signoffBlock(ctx, m)}
</body></html>
`;
}
