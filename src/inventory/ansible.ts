// Ansible inventories read as Ansible reads them (docs: "How to build your inventory" and
// "Understanding variable precedence"). Both formats (YAML here, INI in ansible-ini.ts) build
// one model: groups with their own vars, hosts and children, hosts with the vars of every
// place they were listed, every value with the file and line it came from. resolveAnsible()
// then merges per host in Ansible's order, lowest first:
//   inventory group vars, by group depth (all, then parents, then children; ties by
//   ansible_group_priority, then name) < group_vars/all < group_vars/<group> by depth
//   < the host's own inventory vars < host_vars/<host>.
import { existsSync, readdirSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { SlicecheckError } from "../errors.js";
import { expandHostRange, MAX_HOSTS } from "./host-range.js";
import type { AnsibleGroup } from "./schema.js";
import type { Sourced } from "./ssh-config.js";
import { readYaml, type YamlSource } from "./yaml-source.js";

export type Vars = Record<string, Sourced<unknown>>;

export interface GroupDef {
  name: string;
  vars: Vars;
  /** In the order listed; a Set, so listing a host again costs nothing (100 000 hosts). */
  hosts: Set<string>;
  children: string[];
}

export interface HostDef {
  name: string;
  /** The host's own vars, merged in the order it was listed (a later listing wins). */
  vars: Vars;
  /** Where it was first listed (`file:line`) and its path there, for messages. */
  where: string;
  label: string;
}

export interface AnsibleModel {
  groups: Map<string, GroupDef>;
  hosts: Map<string, HostDef>;
  /** Host names listed so far, a host listed in two groups counted twice: bounded too, or a
   * file of many lines each naming the same 100 000 hosts would still take hours. */
  listed: number;
  /** The most hosts it may name (MAX_HOSTS; smaller in tests). */
  max: number;
}

/** Listings (after ranges are expanded) one inventory may hold, as a multiple of the hosts it
 * may name: a host in several groups is listed once per group. */
export const LISTINGS_PER_HOST = 10;

export function newModel(max = MAX_HOSTS): AnsibleModel {
  const m: AnsibleModel = { groups: new Map(), hosts: new Map(), listed: 0, max };
  groupOf(m, "all");
  return m;
}

export function groupOf(m: AnsibleModel, name: string): GroupDef {
  let g = m.groups.get(name);
  if (!g) {
    g = { name, vars: {}, hosts: new Set(), children: [] };
    m.groups.set(name, g);
  }
  return g;
}

/** The names `pattern` expands to, refused (file:line) past the inventory's bounds. */
export function expandListed(
  m: AnsibleModel,
  pattern: string,
  where: string,
  label: string,
): string[] {
  let names: string[];
  try {
    names = expandHostRange(pattern, m.max);
  } catch (e) {
    throw inventoryError(where, `${label}: ${(e as Error).message}`);
  }
  m.listed += names.length;
  const most = LISTINGS_PER_HOST * m.max;
  if (m.listed > most) {
    throw inventoryError(
      where,
      `${label}: the inventory lists more than ${most.toLocaleString("en-US")} hosts (ranges expanded, a host counted once per group it is listed in); split it into several inventories`,
    );
  }
  return names;
}

export function addHost(
  m: AnsibleModel,
  group: string,
  name: string,
  vars: Vars,
  where: string,
  label: string,
): void {
  const h = m.hosts.get(name);
  if (h) Object.assign(h.vars, vars);
  else {
    if (m.hosts.size >= m.max) throw tooManyHosts(where, label, m.max);
    m.hosts.set(name, { name, vars: { ...vars }, where, label });
  }
  groupOf(m, group).hosts.add(name);
}

export function tooManyHosts(where: string, label: string, max: number): SlicecheckError {
  return inventoryError(
    where,
    `${label}: the inventory names more than ${max.toLocaleString("en-US")} hosts, the most slicecheck reads from one inventory; split it into several inventories`,
  );
}

export function inventoryError(where: string, msg: string): SlicecheckError {
  const m = /^(.*?)(?::(\d+))?$/.exec(where)!;
  return new SlicecheckError("INVENTORY_SCHEMA", `${where}: ${msg}`, {
    file: m[1],
    line: m[2] ? Number(m[2]) : null,
  });
}

/** An Ansible YAML inventory (already checked against ansibleInventory) into the model. */
export function modelFromYaml(
  src: YamlSource,
  root: Record<string, AnsibleGroup | null>,
  max = MAX_HOSTS,
): AnsibleModel {
  const m = newModel(max);
  const at = (path: (string | number)[]) => {
    const line = src.lineOf(path);
    return `${src.file}${line ? `:${line}` : ""}`;
  };
  const varsAt = (v: Record<string, unknown> | null | undefined, path: (string | number)[]): Vars =>
    Object.fromEntries(
      Object.entries(v ?? {}).map(([k, value]) => [k, { value, where: at([...path, k]) }]),
    );
  const walk = (name: string, group: AnsibleGroup | null, path: (string | number)[]) => {
    const g = groupOf(m, name);
    Object.assign(g.vars, varsAt(group?.vars, [...path, "vars"]));
    for (const [pattern, hostVars] of Object.entries(group?.hosts ?? {})) {
      const hostPath = [...path, "hosts", pattern];
      const where = at(hostPath);
      const names = expandListed(m, pattern, where, hostPath.join("."));
      const vars = varsAt(hostVars, hostPath);
      for (const h of names)
        addHost(m, name, h, vars, where, hostPath.join(".").replace(pattern, h));
    }
    for (const [child, childGroup] of Object.entries(group?.children ?? {})) {
      if (!g.children.includes(child)) g.children.push(child);
      walk(child, childGroup, [...path, "children", child]);
    }
  };
  for (const [name, group] of Object.entries(root)) walk(name, group, [name]);
  return m;
}

export interface ResolvedHost {
  name: string;
  vars: Vars;
  where: string;
  label: string;
}

export interface ResolvedAnsible {
  hosts: ResolvedHost[];
  groups: Record<string, string[]>;
  /** Files of group_vars/ and host_vars/ that were read. */
  varFiles: string[];
}

/** `file` is the inventory (for messages); group_vars/ and host_vars/ are looked up beside it. */
export function resolveAnsible(m: AnsibleModel, file: string): ResolvedAnsible {
  const dir = dirname(file);
  const all = addImplicitGroups(m);
  refuseChildLoops(m, file);
  const depth = groupDepths(m);
  const members = memberSets(m);
  const order = (a: GroupDef, b: GroupDef) =>
    (depth.get(a.name) ?? 0) - (depth.get(b.name) ?? 0) ||
    priority(a) - priority(b) ||
    (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const sortedGroups = [...m.groups.values()].sort(order);
  const varFiles: string[] = [];
  const groupFiles = new Map<string, Vars>();
  for (const g of sortedGroups) {
    const v = varsFromDir(join(dir, "group_vars"), g.name, varFiles);
    if (v) groupFiles.set(g.name, v);
  }
  // Each host's groups, in merge order: one pass over the memberships (not hosts × groups).
  const groupsOf = new Map<string, GroupDef[]>();
  for (const g of sortedGroups) {
    if (g.name === "all") continue;
    for (const h of members(g.name)) {
      const list = groupsOf.get(h);
      if (list) list.push(g);
      else groupsOf.set(h, [g]);
    }
  }
  const hosts: ResolvedHost[] = [];
  for (const h of m.hosts.values()) {
    const mine = groupsOf.get(h.name) ?? [];
    const vars: Vars = { ...all.vars };
    for (const g of mine) Object.assign(vars, g.vars);
    Object.assign(vars, groupFiles.get("all") ?? {});
    for (const g of mine) Object.assign(vars, groupFiles.get(g.name) ?? {});
    Object.assign(vars, h.vars);
    Object.assign(vars, varsFromDir(join(dir, "host_vars"), h.name, varFiles) ?? {});
    hosts.push({ name: h.name, vars, where: h.where, label: h.label });
  }
  return { hosts, groups: groupLists(m, members), varFiles };
}

/** Groups that are nobody's child become children of `all`; hosts listed in no group but
 * `all` are Ansible's `ungrouped`. Returns `all`. */
function addImplicitGroups(m: AnsibleModel): GroupDef {
  const all = groupOf(m, "all");
  const isChild = new Set([...m.groups.values()].flatMap((g) => g.children));
  const allChildren = new Set(all.children);
  for (const g of m.groups.values()) {
    if (g.name !== "all" && !isChild.has(g.name) && !allChildren.has(g.name)) {
      all.children.push(g.name);
      allChildren.add(g.name);
    }
  }
  const inSomeGroup = new Set<string>();
  for (const g of m.groups.values())
    if (g.name !== "all") for (const h of g.hosts) inSomeGroup.add(h);
  const ungrouped = [...all.hosts].filter((h) => !inSomeGroup.has(h));
  if (ungrouped.length) {
    const u = groupOf(m, "ungrouped");
    for (const h of ungrouped) u.hosts.add(h);
    if (!all.children.includes("ungrouped")) all.children.push("ungrouped");
  }
  return all;
}

/** A loop of children (a in b, b in a) is refused: Ansible refuses it too. */
function refuseChildLoops(m: AnsibleModel, file: string): void {
  const state = new Map<string, "open" | "done">();
  const check = (name: string, trail: string[]) => {
    if (state.get(name) === "done") return;
    if (state.get(name) === "open")
      throw inventoryError(
        file,
        `children of groups form a loop: ${[...trail, name].join(" -> ")}`,
      );
    state.set(name, "open");
    for (const c of m.groups.get(name)?.children ?? []) check(c, [...trail, name]);
    state.set(name, "done");
  };
  for (const g of m.groups.keys()) check(g, []);
}

/** Each group's depth below `all` (its deepest), Ansible's first key when merging vars. */
function groupDepths(m: AnsibleModel): Map<string, number> {
  const depth = new Map<string, number>();
  const visit = (name: string, d: number) => {
    if ((depth.get(name) ?? -1) >= d) return;
    depth.set(name, d);
    for (const c of m.groups.get(name)?.children ?? []) visit(c, d + 1);
  };
  visit("all", 0);
  return depth;
}

/** A group's hosts with its children's, memoised. */
function memberSets(m: AnsibleModel): (name: string) => Set<string> {
  const memo = new Map<string, Set<string>>();
  const members = (name: string): Set<string> => {
    const known = memo.get(name);
    if (known) return known;
    const g = m.groups.get(name)!;
    const s = new Set(g.hosts);
    for (const c of g.children) for (const h of members(c)) s.add(h);
    memo.set(name, s);
    return s;
  };
  return members;
}

/** Every group's hosts in the inventory's order (`all`: every host). */
function groupLists(
  m: AnsibleModel,
  members: (name: string) => Set<string>,
): Record<string, string[]> {
  const groups: Record<string, string[]> = {};
  const index = new Map([...m.hosts.keys()].map((h, i) => [h, i]));
  for (const g of m.groups.values()) {
    groups[g.name] =
      g.name === "all"
        ? [...m.hosts.keys()]
        : [...members(g.name)].sort((a, b) => index.get(a)! - index.get(b)!);
  }
  return groups;
}

function priority(g: GroupDef): number {
  const p = g.vars.ansible_group_priority?.value;
  return typeof p === "number" ? p : typeof p === "string" && /^\d+$/.test(p) ? Number(p) : 1;
}

const VAR_EXT = /(?:\.ya?ml|\.json)$/;

/** group_vars/<name>[.yml|.yaml|.json] or the folder group_vars/<name>/ (its files in sorted
 * order, a later one winning), as Ansible's host_group_vars plugin reads them. */
function varsFromDir(base: string, name: string, read: string[]): Vars | null {
  if (!existsSync(base)) return null;
  const files: string[] = [];
  for (const cand of [name, `${name}.yml`, `${name}.yaml`, `${name}.json`]) {
    const p = join(base, cand);
    if (!existsSync(p)) continue;
    if (statSync(p).isDirectory()) files.push(...filesUnder(p));
    else files.push(p);
  }
  if (files.length === 0) return null;
  const out: Vars = {};
  for (const f of files) {
    read.push(f);
    const src = readYaml(f, "variables file");
    if (src.data === null || src.data === undefined) continue;
    if (typeof src.data !== "object" || Array.isArray(src.data))
      throw inventoryError(`${f}:1`, "expected a mapping of variable names to values");
    for (const [k, value] of Object.entries(src.data as Record<string, unknown>)) {
      const line = src.lineOf([k]);
      out[k] = { value, where: `${f}${line ? `:${line}` : ""}` };
    }
  }
  return out;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => !n.startsWith("."))
    .sort()
    .flatMap((n) => {
      const p = join(dir, n);
      if (statSync(p).isDirectory()) return filesUnder(p);
      return VAR_EXT.test(n) || !basename(n).includes(".") ? [p] : [];
    });
}
