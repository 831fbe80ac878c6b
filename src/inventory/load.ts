// Loads a native inventory, an Ansible YAML inventory or an Ansible INI inventory into
// NodeSpecs, fills what the inventory leaves out from ssh_config as `ssh -G` would, and keeps
// where every value came from. Every problem is reported with the file, the line, the path
// inside the document and what was expected, before any node is touched.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, extname, join, resolve } from "node:path";
import { isMap, parseDocument } from "yaml";
import type { z } from "zod";
import { SlicecheckError } from "../errors.js";
import {
  type AnsibleModel,
  inventoryError,
  modelFromYaml,
  resolveAnsible,
  tooManyHosts,
} from "./ansible.js";
import { ansibleFields } from "./ansible-fields.js";
import { modelFromIni } from "./ansible-ini.js";
import { MAX_HOSTS } from "./host-range.js";
import { type RawNode, resolvePath } from "./node-base.js";
import { resolveNodes } from "./resolve-nodes.js";
import {
  ansibleInventory,
  defaultsFields,
  NODE_NAME,
  nativeInventory,
  nodeFields,
} from "./schema.js";
import type { Inventory, LoadOptions } from "./types.js";
import { readYaml, type YamlSource, yamlError } from "./yaml-source.js";

type Fields = z.infer<typeof defaultsFields>;

export function loadInventory(path: string, opts: LoadOptions = {}): Inventory {
  const file = resolve(path);
  if (isIni(file)) return loadAnsibleIni(file, opts);
  const src = readYaml(file, "inventory");
  const data = src.data;
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw yamlError(
      src,
      [],
      "expected a mapping: a native inventory (`nodes:`), an Ansible YAML inventory (`all:`) or an Ansible INI inventory (`[group]` lines)",
    );
  }
  if ("nodes" in data || "defaults" in data) return loadNative(src, opts);
  return loadAnsibleYaml(src, opts);
}

/** Ansible tries its YAML plugin on .yml/.yaml/.json and no extension, its INI plugin on
 * anything: a file that is not a YAML mapping (a host list, `[group]` headers) is INI. */
function isIni(file: string): boolean {
  const ext = extname(file).toLowerCase();
  if (ext === ".yml" || ext === ".yaml" || ext === ".json") return false;
  if (ext === ".ini" || ext === ".cfg") return true;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return false; // readYaml reports the missing file
  }
  const doc = parseDocument(text, { uniqueKeys: false }); // the YAML loader checks keys
  return doc.errors.length > 0 || !isMap(doc.contents);
}

function zodFail(
  src: YamlSource,
  base: (string | number)[],
  error: z.ZodError,
  value: unknown,
): SlicecheckError {
  const lines = error.issues.slice(0, 5).map((issue) => {
    const path = [...base, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))];
    const got = valueAt(value, issue.path as (string | number)[]);
    let msg = issue.message;
    if (issue.code === "unrecognized_keys") {
      msg = `unknown field ${issue.keys.map((k) => `'${k}'`).join(", ")}; expected one of: ${knownKeys(path)}`;
    } else if (got !== undefined) {
      msg += `, got ${JSON.stringify(got)}`;
    }
    return yamlError(src, path, msg).message;
  });
  const err = yamlError(src, base, "");
  return new SlicecheckError("INVENTORY_SCHEMA", lines.join("\n"), {
    ...err.context,
    issues: error.issues.length,
  });
}

function knownKeys(path: (string | number)[]): string {
  if (path.length === 0) return "defaults, nodes, groups";
  return Object.keys(path[0] === "defaults" ? defaultsFields.shape : nodeFields.shape).join(", ");
}

function valueAt(value: unknown, path: readonly (string | number)[]): unknown {
  let v = value;
  for (const p of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string | number, unknown>)[p];
  }
  return v;
}

function loadNative(src: YamlSource, opts: LoadOptions): Inventory {
  const nodesData = (src.data as { nodes?: unknown }).nodes;
  if (nodesData && typeof nodesData === "object" && !Array.isArray(nodesData)) {
    const max = opts.maxHosts ?? MAX_HOSTS;
    const names = Object.keys(nodesData);
    if (names.length > max) {
      const line = src.lineOf(["nodes", names[max]!]);
      throw tooManyHosts(`${src.file}${line ? `:${line}` : ""}`, `nodes.${names[max]}`, max);
    }
    for (const name of names) {
      if (!NODE_NAME.test(name)) {
        throw yamlError(
          src,
          ["nodes", name],
          `node names use letters, digits, '.', '_', '-' (they reach shells and file names), got ${JSON.stringify(name)}`,
        );
      }
    }
  }
  const parsed = nativeInventory.safeParse(src.data);
  if (!parsed.success) throw zodFail(src, [], parsed.error, src.data);
  const inv = parsed.data;
  const defaults = inv.defaults ?? {};
  const baseDir = dirname(src.file);
  const at = (path: (string | number)[]) => `${src.file}:${src.lineOf(path) ?? "?"}`;
  const raw: RawNode[] = Object.entries(inv.nodes).map(([name, own]) => {
    const origins: Record<string, string> = {};
    for (const k of Object.keys(defaults)) origins[k] = `${at(["defaults", k])} (defaults.${k})`;
    for (const k of Object.keys(own ?? {}))
      origins[k] = `${at(["nodes", name, k])} (nodes.${name}.${k})`;
    return {
      name,
      fields: { ...defaults, ...(own ?? {}) } as Fields,
      origins,
      err: (field, message, index) => {
        const path: (string | number)[] = ["nodes", name];
        if (field !== null) path.push(field);
        if (index !== undefined) path.push(index);
        return yamlError(src, path, message);
      },
    };
  });
  const groups = inv.groups ?? {};
  const names = new Set(raw.map((r) => r.name));
  for (const [g, members] of Object.entries(groups)) {
    members.forEach((m, i) => {
      if (!names.has(m)) {
        throw yamlError(
          src,
          ["groups", g, i],
          `group '${g}' names node '${m}', which is not in nodes:`,
        );
      }
    });
  }
  const cfgPath = sshConfigPath(opts, defaults.ssh_config, baseDir);
  return resolveNodes(src.file, "native", raw, groups, cfgPath, opts, baseDir, [], [src.file]);
}

function loadAnsibleYaml(src: YamlSource, opts: LoadOptions): Inventory {
  const parsed = ansibleInventory.safeParse(src.data);
  if (!parsed.success) throw zodFail(src, [], parsed.error, src.data);
  return loadAnsible(src.file, modelFromYaml(src, parsed.data, opts.maxHosts), opts);
}

function loadAnsibleIni(file: string, opts: LoadOptions): Inventory {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new SlicecheckError(
      "INVENTORY_NOT_FOUND",
      `${file}: cannot read the inventory: ${(err as NodeJS.ErrnoException).code ?? String(err)}. Check the path given with -i/--inventory.`,
      { file },
      { cause: err },
    );
  }
  return loadAnsible(file, modelFromIni(file, text, opts.maxHosts), opts);
}

function loadAnsible(file: string, model: AnsibleModel, opts: LoadOptions): Inventory {
  const baseDir = dirname(file);
  const resolved = resolveAnsible(model, file);
  if (resolved.hosts.length === 0) {
    throw inventoryError(
      file,
      "no hosts found: expected an Ansible inventory with hosts (`all: hosts:`, `children:`, or INI `[group]` lines), or a native inventory with `nodes:`",
    );
  }
  // One warning per place in the files, naming the hosts it concerns (a group var reaches many).
  const warnedHosts = new Map<string, string[]>();
  const raw: RawNode[] = resolved.hosts.map((h) => {
    if (!NODE_NAME.test(h.name)) {
      throw inventoryError(
        h.where,
        `${h.label}: host names use letters, digits, '.', '_', '-' (ranges: gpu[01:16], [a:f], [0:10:2]); got ${JSON.stringify(h.name)}`,
      );
    }
    const mapped = ansibleFields(h);
    for (const w of mapped.warnings) {
      const list = warnedHosts.get(w);
      if (list) list.push(h.name);
      else warnedHosts.set(w, [h.name]);
    }
    const whereOf = (field: string | number | null) =>
      (field !== null && mapped.origins[String(field)]?.replace(/ \(.*$/s, "")) || h.where;
    const checked = nodeFields.safeParse(mapped.fields);
    if (!checked.success) {
      const issue = checked.error.issues[0]!;
      const key = String(issue.path[0] ?? "");
      const got = mapped.fields[key];
      const from = mapped.origins[key]?.match(/ \((.*)\)$/s)?.[1];
      throw inventoryError(
        whereOf(key),
        `${h.label}.${key}: ${issue.message}${got !== undefined ? `, got ${JSON.stringify(got)}` : ""}${from ? ` (from ${from})` : ""}`,
      );
    }
    return {
      name: h.name,
      fields: checked.data as Fields,
      origins: mapped.origins,
      err: (field, message) =>
        inventoryError(
          whereOf(field),
          `${h.label}${field === null ? "" : `.${field}`}: ${message}`,
        ),
    };
  });
  const warnings = [...warnedHosts].map(([w, hosts]) => {
    const list =
      hosts.length > 3
        ? `${hosts.slice(0, 3).join(", ")} and ${hosts.length - 3} more`
        : hosts.join(", ");
    return `${w} (${hosts.length === 1 ? "host" : "hosts"} ${list})`;
  });
  const cfgPath = sshConfigPath(opts, undefined, baseDir);
  return resolveNodes(file, "ansible", raw, resolved.groups, cfgPath, opts, baseDir, warnings, [
    file,
    ...resolved.varFiles,
  ]);
}

function sshConfigPath(
  opts: LoadOptions,
  fromFile: string | undefined,
  baseDir: string,
): string | null {
  if (opts.sshConfig !== undefined) return opts.sshConfig;
  if (fromFile === "none") return null;
  if (fromFile) return resolvePath(fromFile, baseDir);
  return join(homedir(), ".ssh", "config");
}

export { inventoryError };
