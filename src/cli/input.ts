// Reading an input file where `-` means standard input (`slicecheck parse lgip -`, `cat inv.yaml
// | slicecheck exec -i - …`), as in most Unix tools.
import { readFileSync } from "node:fs";
import { type LayoutFile, loadLayout, parseLayout } from "../mig/layout/index.js";

export const STDIN = "-";

/** All of standard input, read asynchronously so that Ctrl-C is still handled while waiting. */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** The text of `file`, or of standard input for `-`. */
export async function readInput(file: string): Promise<string> {
  return file === STDIN ? readStdin() : readFileSync(file, "utf8");
}

/** A mig-parted layout file, or one read from standard input for `-` (errors name `<stdin>`). */
export async function loadLayoutInput(path: string): Promise<LayoutFile> {
  return path === STDIN ? parseLayout(await readStdin(), "<stdin>") : loadLayout(path);
}
