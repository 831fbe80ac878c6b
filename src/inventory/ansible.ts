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
import { hostKeyPolicyOf, parseSshArgs } from "./ssh-args.js";
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
  const all = groupOf(m, "all");
  const isChild = new Set([...m.groups.values()].flatMap((g) => g.children));
  const allChildren = new Set(all.children);
  for (const g of m.groups.values()) {
    if (g.name !== "all" && !isChild.has(g.name) && !allChildren.has(g.name)) {
      all.children.push(g.name);
      allChildren.add(g.name);
    }
  }
  // Hosts listed in no group but `all` are Ansible's `ungrouped`.
  const inSomeGroup = new Set<string>();
  for (const g of m.groups.values())
    if (g.name !== "all") for (const h of g.hosts) inSomeGroup.add(h);
  const ungrouped = [...all.hosts].filter((h) => !inSomeGroup.has(h));
  if (ungrouped.length) {
    const u = groupOf(m, "ungrouped");
    for (const h of ungrouped) u.hosts.add(h);
    if (!all.children.includes("ungrouped")) all.children.push("ungrouped");
  }

  // A loop of children (a in b, b in a) is refused: Ansible refuses it too.
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
  const depth = new Map<string, number>();
  const visit = (name: string, d: number) => {
    if ((depth.get(name) ?? -1) >= d) return;
    depth.set(name, d);
    for (const c of m.groups.get(name)?.children ?? []) visit(c, d + 1);
  };
  visit("all", 0);

  const membersMemo = new Map<string, Set<string>>();
  const members = (name: string): Set<string> => {
    const memo = membersMemo.get(name);
    if (memo) return memo;
    const g = m.groups.get(name)!;
    const s = new Set(g.hosts);
    for (const c of g.children) for (const h of members(c)) s.add(h);
    membersMemo.set(name, s);
    return s;
  };
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
  const groups: Record<string, string[]> = {};
  const index = new Map([...m.hosts.keys()].map((h, i) => [h, i]));
  for (const g of m.groups.values()) {
    groups[g.name] =
      g.name === "all"
        ? [...m.hosts.keys()]
        : [...members(g.name)].sort((a, b) => index.get(a)! - index.get(b)!);
  }
  return { hosts, groups, varFiles };
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

export interface MappedFields {
  fields: Record<string, unknown>;
  /** field → where its value came from: `file:line (ansible_port)`. */
  origins: Record<string, string>;
  /** Each names file:line; the caller adds which hosts it concerns. */
  warnings: string[];
}

const SSH_CONNECTIONS = new Set(["ssh", "smart", "paramiko", "paramiko_ssh"]);
const TRUE = new Set([true, "true", "True", "yes", "on", "1", 1]);
const FALSE = new Set([false, "false", "False", "no", "off", "0", 0]);

/** Ansible's connection variables as slicecheck node fields. Other vars are ignored (an
 * inventory carries many for other playbooks). */
export function ansibleFields(host: ResolvedHost): MappedFields {
  const fields: Record<string, unknown> = {};
  const origins: Record<string, string> = {};
  const warnings: string[] = [];
  const v = host.vars;
  const render = (name: string): unknown => {
    const s = v[name]!;
    if (typeof s.value !== "string" || !s.value.includes("{{")) return s.value;
    const out = s.value.replace(/\{\{\s*(inventory_hostname(?:_short)?)\s*\}\}/g, (_, t: string) =>
      t === "inventory_hostname" ? host.name : host.name.split(".")[0]!,
    );
    if (out.includes("{{"))
      throw inventoryError(
        s.where,
        `${name}: ${JSON.stringify(s.value)} is a Jinja template; slicecheck renders only {{ inventory_hostname }} and {{ inventory_hostname_short }}. Give the value itself.`,
      );
    return out;
  };
  const pick = (names: string[], to: string, conv: (x: unknown) => unknown = (x) => x) => {
    for (const n of names) {
      if (v[n] === undefined) continue;
      fields[to] = conv(render(n));
      origins[to] = `${v[n]!.where} (${n})`;
      return;
    }
  };
  const num = (x: unknown) => (typeof x === "string" && /^\d+$/.test(x) ? Number(x) : x);
  pick(["ansible_host", "ansible_ssh_host"], "host");
  pick(["ansible_port", "ansible_ssh_port"], "port", num);
  pick(["ansible_user", "ansible_ssh_user"], "user");
  pick(["ansible_ssh_private_key_file", "ansible_private_key_file"], "identity_file");
  pick(["ansible_ssh_timeout", "ansible_timeout"], "connect_timeout", num);
  pick(["ansible_become"], "become", (x) =>
    TRUE.has(x as string) ? "sudo" : FALSE.has(x as string) ? "none" : x,
  );
  const method = v.ansible_become_method;
  if (method && method.value !== "sudo" && fields.become === "sudo")
    warnings.push(
      `${method.where}: ansible_become_method ${String(method.value)}: slicecheck becomes root with sudo -n only`,
    );
  const conn = v.ansible_connection;
  if (conn) {
    const c = String(render("ansible_connection"));
    if (c === "local") {
      fields.connection = "local";
      origins.connection = `${conn.where} (ansible_connection)`;
    } else if (!SSH_CONNECTIONS.has(c)) {
      throw inventoryError(
        conn.where,
        `${host.label}: ansible_connection: ${c} is not supported (slicecheck reaches nodes over ssh, or runs locally with ansible_connection: local). Keep such hosts in another inventory.`,
      );
    }
  }
  const hkc = v.ansible_host_key_checking ?? v.ansible_ssh_host_key_checking;
  if (hkc && FALSE.has(hkc.value as string)) {
    fields.host_key_policy = "accept-new";
    origins.host_key_policy = `${hkc.where} (host_key_checking false)`;
    warnings.push(
      `${hkc.where}: host key checking off is read as accept-new: unknown keys are recorded, changed ones still refused`,
    );
  }
  // Ansible puts its own -o Port/User/IdentityFile before the common and extra args, and ssh
  // takes the first value of an option: the explicit variables win, then common, then extra.
  for (const name of ["ansible_ssh_common_args", "ansible_ssh_extra_args"]) {
    const s = v[name];
    if (!s || typeof s.value !== "string") continue;
    let parsed: ReturnType<typeof parseSshArgs>;
    try {
      parsed = parseSshArgs(String(render(name)));
    } catch (e) {
      throw inventoryError(s.where, `${name}: ${(e as Error).message}`);
    }
    for (const w of parsed.warnings) warnings.push(`${s.where}: ${name}: ${w}`);
    for (const set of parsed.settings) {
      if (set.field in fields) continue;
      let value = set.value;
      if (set.field === "host_key_policy") {
        const p = hostKeyPolicyOf(String(value));
        if (p.warning) warnings.push(`${s.where}: ${p.warning}`);
        if (!p.policy) {
          throw inventoryError(
            s.where,
            `${name}: ${set.text}: expected yes, ask, accept-new, no or off`,
          );
        }
        value = p.policy;
      }
      fields[set.field] = value;
      origins[set.field] = `${s.where} (${name}: ${set.text})`;
    }
  }
  pick(["slicecheck_known_hosts"], "known_hosts");
  pick(["slicecheck_host_key_policy"], "host_key_policy");
  pick(["slicecheck_tags"], "tags");
  pick(["slicecheck_slurm_node"], "slurm_node");
  pick(["slicecheck_identity_passphrase_env"], "identity_passphrase_env");
  return { fields, origins, warnings };
}
