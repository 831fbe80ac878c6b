// The printable compliance summary of one run. Runs with check records (run.json `allChecks`)
// get the sign-off page (src/report/signoff/html.ts); older run.json files the page they had.
import { legacyComplianceHtml } from "./compliance-legacy.js";
import type { RunContext } from "./context.js";
import { signoffHtml } from "./signoff/html.js";

/** `htmlDir`: the page's folder, so that log links work from the page (and from the PDF). */
export function complianceHtml(ctx: RunContext, allureLink: string | null, htmlDir = "."): string {
  return ctx.allChecks
    ? signoffHtml(ctx, allureLink, htmlDir)
    : legacyComplianceHtml(ctx, allureLink, htmlDir);
}
