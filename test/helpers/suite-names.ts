// What keeps the built-in suite names in one registry (src/util/suite-registry.ts): no other
// source file of src/ names a built-in suite as a string literal where it means the suite. A
// name is "meant as a suite" by where the literal sits, read from TypeScript's syntax tree (so
// comments and prose in messages never count):
//   compared    `c.suite === "isolation"`, `"stress" !== suiteName`
//   keyed       `"isolation": …` (a quoted object key), `suite: "health"`, `const DEFAULT_SUITE = "x"`
//   typed       `suite: "layout" | "health"` (a property, parameter or type alias named *suite*)
//   asked       `suites.includes("slurm")`, `suiteChecks("stress")` (a callee naming *suite*)
//   switched    `case "nccl":` in a `switch (…suite…)`
//   listed      an array with two or more built-in names: `["layout", "stress"]`
// The same words elsewhere are not suites: the stress workload (`spec.name === "stress"`), the
// harness's "layout" step, an output folder called "isolation". Pure: it reads files only, so
// the test runs it on planted sources too.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

export interface SuiteNameRules {
  /** The sources scanned (src/). */
  srcDir: string;
  /** The registry, the one file allowed to name them (absolute). */
  registry: string;
  /** The built-in suite names. */
  names: readonly string[];
  /** Where file:line is given from (the repository root). */
  root: string;
}

const SUITE_WORD = /suite/i;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => {
      const p = join(dir, e.name);
      if (e.isDirectory()) return sourceFiles(p);
      return /\.(ts|mts|cts)$/.test(e.name) && !e.name.endsWith(".d.ts") ? [p] : [];
    })
    .sort();
}

const within = (outerNode: ts.Node, n: ts.Node) => n.pos >= outerNode.pos && n.end <= outerNode.end;

const isName = (n: ts.Node, names: ReadonlySet<string>) =>
  (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) && names.has(n.text);

/** The literal's parent, past `as const`, parentheses, `!` and the literal-type wrapper. */
function outer(n: ts.Node): ts.Node {
  let p = n.parent;
  while (
    ts.isAsExpression(p) ||
    ts.isParenthesizedExpression(p) ||
    ts.isNonNullExpression(p) ||
    ts.isSatisfiesExpression(p) ||
    ts.isLiteralTypeNode(p) ||
    ts.isUnionTypeNode(p)
  )
    p = p.parent;
  return p;
}

const EQUALITY = new Set([
  ts.SyntaxKind.EqualsEqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsEqualsToken,
  ts.SyntaxKind.EqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsToken,
]);

/** A declaration's name as written, when it has one. */
function declName(p: ts.Node, sf: ts.SourceFile): string | null {
  if (
    ts.isPropertyAssignment(p) ||
    ts.isPropertySignature(p) ||
    ts.isPropertyDeclaration(p) ||
    ts.isParameter(p) ||
    ts.isVariableDeclaration(p) ||
    ts.isTypeAliasDeclaration(p)
  )
    return p.name.getText(sf);
  return null;
}

/** Why the literal `n` (a built-in name) is meant as a suite; null when it is not. */
function suiteContext(n: ts.Node, sf: ts.SourceFile, names: ReadonlySet<string>): string | null {
  const p = outer(n);
  if (ts.isBinaryExpression(p) && EQUALITY.has(p.operatorToken.kind)) {
    const other = within(p.left, n) ? p.right : p.left;
    return SUITE_WORD.test(other.getText(sf)) ? "compared" : null;
  }
  if (ts.isPropertyAssignment(p) && p.name === n) return "keyed";
  const name = declName(p, sf);
  if (name !== null && SUITE_WORD.test(name))
    return ts.isPropertySignature(p) || ts.isTypeAliasDeclaration(p) ? "typed" : "keyed";
  if (ts.isCallExpression(p) && p.arguments.some((a) => within(a, n)))
    return SUITE_WORD.test(p.expression.getText(sf)) ? "asked" : null;
  if (ts.isCaseClause(p) && SUITE_WORD.test(p.parent.parent.expression.getText(sf)))
    return "switched";
  if (ts.isArrayLiteralExpression(p))
    return p.elements.filter((e) => isName(e, names)).length >= 2 ? "listed" : null;
  return null;
}

/** Every literal of one source text that names a built-in suite as a suite: `line: why: text`. */
export function suiteNamesIn(
  fileName: string,
  text: string,
  names: readonly string[],
): { line: number; why: string; text: string }[] {
  const set = new Set(names);
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const out: { line: number; why: string; text: string }[] = [];
  const visit = (n: ts.Node) => {
    if (isName(n, set)) {
      const why = suiteContext(n, sf, set);
      if (why) {
        const { line } = sf.getLineAndCharacterOfPosition(n.getStart(sf));
        out.push({ line: line + 1, why, text: text.split("\n")[line]?.trim() ?? "" });
      }
    }
    n.forEachChild(visit);
  };
  visit(sf);
  return out;
}

/** Every built-in suite name outside the registry as `file:line: why "name": line`. */
export function strayedSuiteNames(rules: SuiteNameRules): string[] {
  const out: string[] = [];
  for (const file of sourceFiles(rules.srcDir)) {
    if (file === rules.registry) continue;
    const where = relative(rules.root, file);
    for (const hit of suiteNamesIn(file, readFileSync(file, "utf8"), rules.names))
      out.push(`${where}:${hit.line}: a built-in suite name, ${hit.why}: ${hit.text}`);
  }
  return out;
}
