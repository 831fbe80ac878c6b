// Ansible INI inventories, Ansible's default format (docs: "How to build your inventory",
// INI examples; the ini inventory plugin):
//   gpu01.example.org                      hosts before any section are ungrouped
//   [a100]
//   gpu[01:16].example.org ansible_port=2222   host vars inline: Python literals
//   gpu20:2200                             host:port
//   [a100:vars]
//   ansible_user=ops                       group vars: strings
//   [gpus:children]
//   a100
// `#` and `;` start comments. Every host and var keeps its file and line.
import { readFileSync } from "node:fs";
import {
  type AnsibleModel,
  addHost,
  expandListed,
  groupOf,
  inventoryError,
  newModel,
  type Vars,
} from "./ansible.js";
import { MAX_HOSTS } from "./host-range.js";
import { shellSplit } from "./ssh-args.js";

/** Where the reading is: the section a line belongs to and what that section holds. */
interface IniState {
  m: AnsibleModel;
  section: string;
  kind: "hosts" | "vars" | "children";
}

export function modelFromIni(
  file: string,
  text = readFileSync(file, "utf8"),
  max = MAX_HOSTS,
): AnsibleModel {
  const st: IniState = { m: newModel(max), section: "ungrouped", kind: "hosts" };
  text.split("\n").forEach((raw, i) => {
    const where = `${file}:${i + 1}`;
    const line = raw.replace(/\r$/, "").trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) return;
    if (sectionHead(st, line, where)) return;
    let words: string[];
    try {
      words = shellSplit(stripComment(line));
    } catch (e) {
      throw inventoryError(where, `${(e as Error).message}`);
    }
    if (words.length === 0) return;
    if (st.kind === "vars") varsLine(st, line, words, where);
    else if (st.kind === "children") childrenLine(st, words, where);
    else hostLine(st, words, where);
  });
  return st.m;
}

/** `[name]`, `[name:vars]` or `[name:children]`: the section the next lines belong to. */
function sectionHead(st: IniState, line: string, where: string): boolean {
  const head = /^\[([^\]]+)\]$/.exec(line);
  if (!head) return false;
  const [name, suffix] = head[1]!.split(":", 2) as [string, string | undefined];
  if (!/^[A-Za-z0-9_.-]+$/.test(name))
    throw inventoryError(
      where,
      `section [${head[1]}]: group names use letters, digits, '_', '.', '-'`,
    );
  if (suffix !== undefined && suffix !== "vars" && suffix !== "children")
    throw inventoryError(
      where,
      `section [${head[1]}]: expected [${name}], [${name}:vars] or [${name}:children]`,
    );
  st.section = name;
  st.kind = suffix === "vars" ? "vars" : suffix === "children" ? "children" : "hosts";
  groupOf(st.m, name);
  return true;
}

function varsLine(st: IniState, line: string, words: string[], where: string): void {
  const eq = line.indexOf("=");
  if (eq < 1)
    throw inventoryError(
      where,
      `[${st.section}:vars] expects name=value, got ${JSON.stringify(line)}`,
    );
  const k = line.slice(0, eq).trim();
  // :vars values are strings (quotes removed), as the docs say.
  const val =
    words.length === 1
      ? words[0]!.slice(words[0]!.indexOf("=") + 1)
      : unquote(line.slice(eq + 1).trim());
  groupOf(st.m, st.section).vars[k] = { value: val, where };
}

function childrenLine(st: IniState, words: string[], where: string): void {
  if (words.length !== 1)
    throw inventoryError(where, `[${st.section}:children] expects one group name per line`);
  const g = groupOf(st.m, st.section);
  groupOf(st.m, words[0]!);
  if (!g.children.includes(words[0]!)) g.children.push(words[0]!);
}

/** A host pattern (with an optional `:port`) and its inline `name=value` vars. */
function hostLine(st: IniState, words: string[], where: string): void {
  const [pattern, ...assignments] = words as [string, ...string[]];
  const vars: Vars = {};
  let hostPattern = pattern;
  const port = /^(.*[^:]):(\d+)$/.exec(pattern);
  if (port && balanced(port[1]!)) {
    hostPattern = port[1]!;
    vars.ansible_port = { value: Number(port[2]), where };
  }
  for (const a of assignments) {
    const eq = a.indexOf("=");
    if (eq < 1)
      throw inventoryError(
        where,
        `host ${hostPattern}: expected name=value, got ${JSON.stringify(a)}`,
      );
    vars[a.slice(0, eq)] = { value: literal(a.slice(eq + 1)), where };
  }
  const group = st.section === "ungrouped" ? "all" : st.section;
  for (const h of expandListed(st.m, hostPattern, where, hostPattern))
    addHost(st.m, group, h, vars, where, h);
}

function stripComment(line: string): string {
  // A `#` that starts a word starts a comment; inside a value (`a#b`) it does not.
  return line.replace(/(^|\s)[#;].*$/, "");
}

function balanced(s: string): boolean {
  return (s.match(/\[/g)?.length ?? 0) === (s.match(/\]/g)?.length ?? 0);
}

function unquote(s: string): string {
  const m = /^(["'])(.*)\1$/.exec(s);
  return m ? m[2]! : s;
}

/** Inline host values are Python literals for Ansible (ast.literal_eval): numbers, booleans,
 * None; anything else stays a string. */
function literal(s: string): unknown {
  if (/^-?\d+$/.test(s)) return Number(s);
  if (/^-?\d+\.\d+$/.test(s)) return Number(s);
  if (s === "True") return true;
  if (s === "False") return false;
  if (s === "None") return null;
  return s;
}
