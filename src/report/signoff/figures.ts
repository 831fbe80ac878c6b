// A check's figures for people: the one figure its row shows, and all of them as an HTML table
// (on the compliance page and as an Allure attachment beside the JSON evidence).

import type { PassKind } from "../../util/status.js";
import { hasRole } from "../../util/suite-registry.js";
import { type CheckRecord, passKindOf } from "../../verdicts/checks.js";
import { esc } from "../svg/common.js";

const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** The figure a reviewer reads first for this check. */
export function headlineFigure(c: CheckRecord): string {
  const f = c.figures;
  const tflops = n(f.tflops);
  const ratio = n(f.ratio);
  if (tflops !== null)
    return `${tflops.toFixed(2)} TFLOP/s${ratio !== null && hasRole(c.suite, "throughput") ? ` · ${(ratio * 100).toFixed(1)} % of share` : ""}`;
  if (n(f.algbw) !== null) return `${n(f.algbw)!.toFixed(2)} GB/s`;
  // Latency beside throughput (issue 22 item 3): a serving check's percentiles and rate, and a
  // latency verdict's worst victim.
  if (n(f.p99_ms) !== null)
    return `p50 ${n(f.p50_ms)?.toFixed(3) ?? "–"} ms · p99 ${n(f.p99_ms)!.toFixed(3)} ms · ${n(f.rps)?.toFixed(0) ?? "–"} req/s`;
  const rises = Object.entries(f)
    .map(([k, v]) => [/^(.+) p99 rise$/.exec(k)?.[1], n(v)] as const)
    .filter((e): e is [string, number] => e[0] !== undefined && e[1] !== null);
  if (rises.length) {
    const [label, high] = rises.reduce((a, b) => (b[1] > a[1] ? b : a));
    return `worst victim p99 ×${high.toFixed(2)} of baseline (${label}: ${n(f[`${label} under fault p99 ms`])?.toFixed(3) ?? "–"} ms vs ${n(f[`${label} baseline p99 ms`])?.toFixed(3) ?? "–"} ms)`;
  }
  const ratios = Object.entries(f)
    .map(([k, v]) => [/^(.+) ratio$/.exec(k)?.[1], n(v)] as const)
    .filter((e): e is [string, number] => e[0] !== undefined && e[1] !== null);
  if (ratios.length) {
    const [label, low] = ratios.reduce((a, b) => (b[1] < a[1] ? b : a));
    return `lowest victim at ${(low * 100).toFixed(1)} % of baseline (${label})`;
  }
  if (n(f.xids) !== null) return `${f.xids} new Xid(s), ${f.attributedElsewhere ?? 0} elsewhere`;
  const text =
    c.message ||
    Object.entries(f)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ");
  return text.length > 140 ? `${text.slice(0, 137)}…` : text;
}

/** The figures as a two-column table (a small HTML fragment). */
export function figuresTable(c: CheckRecord): string {
  const rows = Object.entries(c.figures)
    .map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v === null ? "–" : v)}</td></tr>`)
    .join("");
  return rows ? `<table class="figures">${rows}</table>` : "";
}

/** The figures as one flowing line (the printed page: a table per check would double it). */
export function figuresInline(c: CheckRecord): string {
  const parts = Object.entries(c.figures).map(
    ([k, v]) => `<b>${esc(k)}</b> ${esc(v === null ? "–" : v)}`,
  );
  return parts.length ? `<p class="fig">${parts.join(" · ")}</p>` : "";
}

/** What a pass of each kind that verifies no promise means, in a reader's words. */
const KIND_NOTE: Readonly<Record<Exclude<PassKind, "measured">, string>> = {
  characterised:
    "a characterisation: the route's expected weakness, measured; it verifies no isolation",
  "documented-constraint":
    "a documented constraint: a limit the platform documents, observed; it verifies no promise of the node",
};

/** The line saying what kind of pass the check is, or "" for a kept promise and any other status. */
export function kindNote(c: Pick<CheckRecord, "status" | "kind">): string {
  const k = passKindOf(c);
  return k === null || k === "measured" ? "" : `<p class="kind">${esc(KIND_NOTE[k])}</p>`;
}

/** A standalone page for Allure: the check's outcome, figures, parameters and message. */
export function figuresPage(c: CheckRecord): string {
  const params = Object.entries(c.parameters)
    .map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`)
    .join("");
  return `<!doctype html><html><head><meta charset="utf-8"><style>
body{font:13px/1.4 system-ui,sans-serif;margin:8px}table{border-collapse:collapse;margin:.4em 0}
th,td{border:1px solid #ccc;padding:2px 8px;text-align:left}th{background:#f3f3f3;font-weight:600}
.passed{color:#1b5e20}.failed{color:#b71c1c}.broken{color:#e65100}</style></head><body>
<p><b class="${c.status}">${esc(c.status.toUpperCase())}</b> ${esc(c.code)} · ${esc([c.node, c.gpu === null ? null : `GPU ${c.gpu}`, c.instance ? `${c.instance.label} ${c.instance.profile}${c.instance.placement ? ` at ${c.instance.placement}` : ""}` : null].filter(Boolean).join(" · "))}</p>
${kindNote(c)}${c.message ? `<p>${esc(c.message)}</p>` : ""}
<h4>figures</h4>${figuresTable(c) || "<p>none</p>"}
${params ? `<h4>parameters</h4><table>${params}</table>` : ""}
</body></html>
`;
}
