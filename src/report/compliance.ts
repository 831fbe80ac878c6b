// The printable compliance summary of one run: the sign-off page (src/report/signoff/html.ts),
// from the run's check records. A run written before check records has none to count from;
// `slicecheck report` refuses it (readRunContext) rather than render a page from stale rows.
import type { RunContext } from "./context.js";
import { signoffHtml } from "./signoff/html.js";

/** `htmlDir`: the page's folder, so that log links work from the page (and from the PDF). */
export function complianceHtml(ctx: RunContext, allureLink: string | null, htmlDir = "."): string {
  return signoffHtml(ctx, allureLink, htmlDir);
}
