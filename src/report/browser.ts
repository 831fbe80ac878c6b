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

/** How long printing one PDF may take, start of Chromium excluded (it has its own bound). */
export const PDF_TIMEOUT_MS = 120_000;

export async function printPdf(
  htmlFile: string,
  pdfFile: string,
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
    await page.pdf({
      path: pdfFile,
      format: "A4",
      printBackground: true,
      margin: { top: "12mm", bottom: "12mm", left: "10mm", right: "10mm" },
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
