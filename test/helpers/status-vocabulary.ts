// The status-vocabulary scanner behind test/structure/status-vocabulary.test.ts: every string
// literal union (`"ok" | "failed"`) and every literal array (`["passed", "failed"] as const`,
// the other way a union is made) in the product's sources, whose members include two or more
// status words. Only src/util/status.ts may spell the vocabulary; a second spelling is a
// second vocabulary that can drift ("ok" beside "passed" was one).
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

/** Words that say how a check, a workload or a verdict ended. */
export const STATUS_WORDS = new Set([
  "passed",
  "failed",
  "broken",
  "skipped",
  "ok",
  "pass",
  "fail",
  "error",
]);

export interface VocabularyHit {
  /** `src/x/y.ts:12`. */
  where: string;
  members: string[];
}

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? files(join(dir, e.name))
      : e.name.endsWith(".ts") && !e.name.endsWith(".d.ts")
        ? [join(dir, e.name)]
        : [],
  );
}

/** The vocabulary's types, from which a subset may be taken. */
const VOCABULARY_TYPES = new Set(["Status", "VerdictStatus", "CheckStatus", "TestStatus"]);

/** A subset taken from the vocabulary (`Extract<Status, "passed" | "broken">`): the compiler
 * ties its members to the one union, so it is no second spelling. */
function derived(n: ts.Node): boolean {
  const p = n.parent;
  if (!p || !ts.isTypeReferenceNode(p)) return false;
  const [from, members] = p.typeArguments ?? [];
  return (
    ["Extract", "Exclude"].includes(p.typeName.getText()) &&
    members === n &&
    from !== undefined &&
    VOCABULARY_TYPES.has(from.getText())
  );
}

/** The string members of a union or array node, or null when any member is not a literal. */
function literals(node: ts.Node): string[] | null {
  if (derived(node)) return null;
  const items = ts.isUnionTypeNode(node)
    ? node.types.map((t) => (ts.isLiteralTypeNode(t) ? t.literal : t))
    : ts.isArrayLiteralExpression(node)
      ? [...node.elements]
      : null;
  if (!items || items.length < 2) return null;
  const out = items.map((t) => (ts.isStringLiteral(t) ? t.text : null));
  return out.every((x) => x !== null) ? (out as string[]) : null;
}

/** Each status-like union or array under `srcDir`, except in the files of `allowed` (paths
 * relative to `root`, mapped to why they may). */
export function statusUnions(
  root: string,
  srcDir: string,
  allowed: Readonly<Record<string, string>>,
): VocabularyHit[] {
  const hits: VocabularyHit[] = [];
  for (const file of files(srcDir)) {
    const rel = relative(root, file).split("\\").join("/");
    if (rel in allowed) continue;
    const sf = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
    const visit = (n: ts.Node) => {
      const members = literals(n);
      if (members && members.filter((m) => STATUS_WORDS.has(m)).length >= 2) {
        const line = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
        hits.push({ where: `${rel}:${line}`, members });
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return hits;
}
