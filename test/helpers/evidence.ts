// What a failed test leaves to explain itself. Printed where it failed, and appended to the file
// SLICECHECK_TEST_EVIDENCE names (scripts/test.mjs sets it and prints the file after the
// failures): a CI log cut to its tail keeps the summary, and so keeps this too.
import { appendFileSync } from "node:fs";

export function leaveEvidence(title: string, text: string): void {
  const block = `  evidence: ${title}\n${text}\n`;
  console.log(block);
  const file = process.env.SLICECHECK_TEST_EVIDENCE;
  if (file) appendFileSync(file, block);
}
