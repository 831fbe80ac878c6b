// Debian's Chromium through playwright-core: never a downloaded browser (no network on the
// machines this runs on). The flags keep Chromium from reaching out at start.
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";
import { SlicecheckError } from "../errors.js";

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

export async function printPdf(htmlFile: string, pdfFile: string): Promise<void> {
  const { pathToFileURL } = await import("node:url");
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.goto(pathToFileURL(htmlFile).href, { waitUntil: "load" });
    await page.emulateMedia({ media: "print" });
    await page.pdf({
      path: pdfFile,
      format: "A4",
      printBackground: true,
      margin: { top: "12mm", bottom: "12mm", left: "10mm", right: "10mm" },
    });
  } finally {
    await browser.close();
  }
}
