// The size rule of `npm run lint` (scripts/check-shape.mjs): the real src/ and sim/src/ keep it
// (old offenders held to their size), and a planted long function, a planted long file, a grown
// old offender and a stale allowance each fail it, naming the file, line, function and size.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { appendFileSync, cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import {
  checkShape,
  GRANDFATHERED,
  lineCount,
  longFunctions,
  MAX_FILE_LINES,
  MAX_FUNCTION_LINES,
} from "../../scripts/check-shape.mjs";
import { tempDir } from "../helpers/tmp.js";

const root = join(import.meta.dirname, "..", "..");
const script = join(root, "scripts/check-shape.mjs");

/** A tree laid out as the repository's (src/ and sim/src/) with a copy of `files` alone, to plant
 * offenders in: each scan parses every file with TypeScript's parser (about 1.5 s of CPU for
 * the whole tree), and the first test already holds the whole real tree to the rule. */
function treeCopy(name: string, files: string[] = []): string {
  const dir = tempDir(`shape-${name}`);
  mkdirSync(join(dir, "src"));
  mkdirSync(join(dir, "sim/src"), { recursive: true });
  for (const f of files) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    cpSync(join(root, f), join(dir, f));
  }
  return dir;
}

const dirsOf = (base: string) => [join(base, "src"), join(base, "sim/src")];

/** A function of `body` statement lines: `body + 2` lines with its braces. */
function fn(name: string, body: number): string {
  const lines = Array.from({ length: body }, (_, i) => `  const v${i} = ${i};`);
  return [`export function ${name}(): void {`, ...lines, "}"].join("\n");
}

/** Appends `text` to the file; returns the line number its first line gets. */
function plant(file: string, text: string): number {
  const before = readFileSync(file, "utf8");
  const sep = before.endsWith("\n") ? "" : "\n";
  appendFileSync(file, `${sep}${text}\n`);
  return lineCount(before) + 1;
}

describe("shape: the size rule of npm run lint", function () {
  this.timeout(120_000);

  it("holds on the real src/ and sim/src/, old offenders within their allowance", () => {
    assert.deepEqual(checkShape(dirsOf(root), root, GRANDFATHERED), []);
  });

  it("fails a planted function one line too long, naming file:line, name and size", () => {
    const dir = treeCopy("fn", ["src/chaos/faults.ts"]);
    const file = join(dir, "src/chaos/faults.ts");
    // 79 statements and its two braces: 81 lines, one over.
    const n = plant(file, fn("plantedLong", MAX_FUNCTION_LINES - 1));
    assert.deepEqual(checkShape(dirsOf(dir), dir, GRANDFATHERED), [
      `src/chaos/faults.ts:${n}: function plantedLong: 81 lines (at most ${MAX_FUNCTION_LINES})`,
    ]);
    // At the limit it passes: 78 statements, 80 lines.
    writeFileSync(file, readFileSync(join(root, "src/chaos/faults.ts"), "utf8"));
    plant(file, fn("plantedAtLimit", MAX_FUNCTION_LINES - 2));
    assert.deepEqual(checkShape(dirsOf(dir), dir, GRANDFATHERED), []);
  });

  it("finds methods, arrow functions and callbacks, not braces in strings or comments", () => {
    const body = (k: number) => Array.from({ length: k }, (_, i) => `    x(${i});`).join("\n");
    const text = [
      "class Box {",
      "  run() {",
      body(85),
      "  }",
      "}",
      "const short = () => 1;",
      "export const arrow = async () => {",
      body(90),
      "};",
      "program.action(function () {",
      body(81),
      "});",
      `const s = "${"{".repeat(200)}"; // ${"}".repeat(5)}`,
      "function ok() {",
      body(70),
      "}",
    ].join("\n");
    assert.deepEqual(longFunctions(text), [
      { line: 2, name: "Box.run", lines: 87 },
      { line: 91, name: "arrow", lines: 92 },
      { line: 183, name: "<callback of .action>", lines: 83 },
    ]);
  });

  it("fails a planted file over 450 lines, in src/ and in sim/src/", () => {
    const dir = treeCopy("file");
    mkdirSync(join(dir, "src/util"));
    const pad = Array.from({ length: MAX_FILE_LINES + 1 }, (_, i) => `// line ${i + 1}`);
    writeFileSync(join(dir, "src/util/planted.ts"), `${pad.join("\n")}\n`);
    writeFileSync(join(dir, "sim/src/planted.ts"), `${pad.join("\n")}\n// one more\n`);
    // At the limit a file passes.
    writeFileSync(join(dir, "src/util/at-limit.ts"), `${pad.slice(0, -1).join("\n")}\n`);
    assert.deepEqual(checkShape(dirsOf(dir), dir, GRANDFATHERED), [
      `src/util/planted.ts:1: file (split it): 451 lines (at most ${MAX_FILE_LINES})`,
      `sim/src/planted.ts:1: file (split it): 452 lines (at most ${MAX_FILE_LINES})`,
    ]);
  });

  it("holds an old offender to its size, and reports an allowance no longer needed", () => {
    const dir = treeCopy("ratchet", ["src/chaos/faults.ts"]);
    // An offender older than the rule, planted with its allowance: the real tree has none left.
    const [file, name, cap] = ["src/chaos/faults.ts", "oldOffender", 100];
    plant(join(dir, file), fn(name, cap - 2));
    const key = `${file} ${name}`;
    const allowed = new Map([...GRANDFATHERED, [key, cap]]);
    assert.deepEqual(checkShape(dirsOf(dir), dir, allowed), [], "within its allowance");
    allowed.set(key, cap - 1);
    const lines = checkShape(dirsOf(dir), dir, allowed);
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(
      lines[0]!,
      new RegExp(
        `^${file}:\\d+: function ${name}: ${cap} lines \\(at most 80; it may not grow past the ${cap - 1} it had\\)$`,
      ),
    );
    allowed.set(key, cap);
    allowed.set("src/chaos/faults.ts gone", 100);
    assert.deepEqual(checkShape(dirsOf(dir), dir, allowed), [
      "src/chaos/faults.ts gone: keeps the rule now (or is gone): delete it from GRANDFATHERED",
    ]);
  });

  it("the command exits 1 on a planted offender and 0 on the real tree", () => {
    const dir = treeCopy("cli", ["src/verdicts/types.ts"]);
    const n = plant(join(dir, "src/verdicts/types.ts"), fn("tooLong", 100));
    const bad = spawnSync(process.execPath, [script, "src", "sim/src"], {
      cwd: dir,
      encoding: "utf8",
    });
    assert.equal(bad.status, 1, bad.stderr);
    assert.match(
      bad.stderr,
      new RegExp(`^src/verdicts/types\\.ts:${n}: function tooLong: 102 lines`, "m"),
    );
    assert.match(bad.stderr, /check-shape: 1 offender\(s\)/);
    const good = spawnSync(process.execPath, [script], { cwd: root, encoding: "utf8" });
    assert.equal(good.status, 0, good.stderr);
    assert.equal(good.stderr, "");
  });
});
