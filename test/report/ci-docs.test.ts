// The CI examples and the maintenance-window guide: valid YAML, and every `slicecheck` command
// line in them parses with the real command line (every action replaced by a no-op, so nothing
// runs and nothing is touched).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { parse } from "yaml";
import { buildProgram } from "../../src/cli/main.js";

/** `npx slicecheck …` commands in a text, with CI expressions and variables made plain words. */
function slicecheckLines(text: string): string[][] {
  const out: string[][] = [];
  for (const raw of text.replace(/\\\n\s*/g, " ").split("\n")) {
    const m = /npx slicecheck ([^;&|`]*)/.exec(raw);
    if (!m) continue;
    const line = m[1]!
      .replace(/\$\{\{[^}]*\}\}/g, "X")
      .replace(/\$\{?\w+\}?/g, "X")
      .trim();
    out.push(line.split(/\s+/));
  }
  return out;
}

async function dryParse(argv: string[]): Promise<void> {
  const errors: string[] = [];
  const program = buildProgram({ out: () => {}, err: (l) => errors.push(l) }, () => {});
  const silence = (c: Command) => {
    c.action(() => {});
    for (const sub of c.commands) silence(sub);
  };
  for (const c of program.commands) silence(c);
  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (e) {
    assert.fail(`slicecheck ${argv.join(" ")}: ${(e as Error).message} ${errors.join(" ")}`);
  }
}

describe("report docs: CI examples and the maintenance-window guide", () => {
  for (const file of [
    "docs/ci/github-actions.yml",
    "docs/ci/gitlab-ci.yml",
    "docs/maintenance-window.md",
  ]) {
    it(`${file}: ${file.endsWith(".md") ? "" : "valid YAML, "}every slicecheck command line parses`, async () => {
      const text = readFileSync(file, "utf8");
      if (!file.endsWith(".md")) assert.equal(typeof parse(text), "object");
      const lines = slicecheckLines(text);
      assert.ok(
        lines.some((l) => l[0] === "run"),
        "runs the suites",
      );
      if (!file.endsWith(".md"))
        assert.ok(
          lines.some((l) => l[0] === "report"),
          "writes the reports",
        );
      for (const argv of lines) await dryParse(argv);
    });
  }

  it("a bad option is caught by the dry parse (the check can fail)", async () => {
    await assert.rejects(dryParse(["run", "--no-such-option"]));
  });
});
