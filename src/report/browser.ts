// Debian's Chromium through playwright-core: never a downloaded browser (no network on the
// machines this runs on). The flags keep Chromium from reaching out at start.
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";
import { SlicecheckError } from "../errors.js";
import { settledWithin } from "../util/time.js";

export const CHROMIUM = process.env.SLICECHECK_CHROMIUM ?? "/usr/bin/chromium";

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new SlicecheckError(
      "TOOL_MISSING",
      `no Chromium at ${CHROMIUM}; install Debian's (apt-get install -y --no-install-recommends chromium; \`npm test\` and \`npm run demo\` do it) or set SLICECHECK_CHROMIUM`,
    );
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Playwright's own bound on the start (its default, said here so that it stays one).
    timeout: 30_000,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      "--disable-quic",
    ],
  });
}

/** The PDF's running header and footer (Chromium fills the pageNumber and totalPages spans). */
export function pdfTemplates(title: string): { header: string; footer: string } {
  const esc = (t: string) =>
    t.replace(/[<>&"]/g, (c) => `&${{ "<": "lt", ">": "gt", "&": "amp", '"': "quot" }[c]};`);
  const style = "font:8px system-ui,sans-serif;color:#444;width:100%;padding:0 10mm;";
  return {
    header: `<div style="${style}">${esc(title)}</div>`,
    footer: `<div style="${style}text-align:right">page <span class="pageNumber"></span> of <span class="totalPages"></span></div>`,
  };
}

// Run in the page (a string: this code is compiled without the DOM's types).
const UNLINK_FILES = `for (const a of Array.from(document.querySelectorAll("a[href]"))) {
  if ((a.getAttribute("href") || "").startsWith("#")) continue;
  const span = document.createElement("span");
  span.className = "link";
  span.textContent = a.textContent;
  a.replaceWith(span);
}`;

/** Prints the page to A4 with a header and numbered pages. Links to files become their text: a
 * PDF resolves a relative link against where it was printed (a file:// path of this machine);
 * in-page links (#…) stay links. */
/** How long printing one PDF may take, start of Chromium excluded (it has its own bound). */
export const PDF_TIMEOUT_MS = 120_000;

export async function printPdf(
  htmlFile: string,
  pdfFile: string,
  title = "",
  timeoutMs = PDF_TIMEOUT_MS,
): Promise<void> {
  const { pathToFileURL } = await import("node:url");
  const browser = await launchChromium();
  const print = async () => {
    const page = await browser.newPage();
    // goto and emulateMedia honour the page's timeout; page.pdf has none of its own, hence
    // the bound on the whole below.
    page.setDefaultTimeout(timeoutMs);
    await page.goto(pathToFileURL(htmlFile).href, { waitUntil: "load" });
    await page.emulateMedia({ media: "print" });
    await page.evaluate(UNLINK_FILES);
    const t = pdfTemplates(title || (await page.title()));
    await page.pdf({
      path: pdfFile,
      format: "A4",
      printBackground: true,
      displayHeaderFooter: true,
      headerTemplate: t.header,
      footerTemplate: t.footer,
      margin: { top: "16mm", bottom: "14mm", left: "10mm", right: "10mm" },
    });
  };
  const work = print();
  try {
    if (!(await settledWithin(work, timeoutMs)))
      throw new SlicecheckError(
        "REPORT",
        `Chromium did not print ${pdfFile} within ${timeoutMs / 1000} s; the HTML report is written, print it from a browser`,
        { timeoutMs },
      );
    await work;
  } finally {
    // Closing kills the browser it launched; a wedged one is left to that, not waited on.
    await settledWithin(browser.close(), 10_000);
  }
}
