// Loads a native or an Ansible YAML inventory into NodeSpecs. Every problem is reported with
// the file, the line, the path inside the document and what was expected, before any node is
// touched.
import { homedir, userInfo } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import type { z } from "zod";
import { SlicecheckError } from "../errors.js";
import { ansibleToNodeFields, flattenAnsible } from "./ansible.js";
import {
  ansibleInventory,
  defaultsFields,
  NODE_NAME,
  nativeInventory,
  nodeFields,
} from "./schema.js";
import { loadSshConfig, type SshConfigHit } from "./ssh-config.js";
import type { HostKeyPolicy, Inventory, JumpHost, NodeSpec } from "./types.js";
import { readYaml, type YamlSource, yamlError } from "./yaml-source.js";

type Fields = z.infer<typeof defaultsFields>;

export interface LoadOptions {
  /** Overrides `defaults.ssh_config`; null disables ~/.ssh/config lookup (tests). */
  sshConfig?: string | null;
}

export function loadInventory(path: string, opts: LoadOptions = {}): Inventory {
  const file = resolve(path);
  const src = readYaml(file, "inventory");
  const data = src.data;
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw yamlError(
      src,
      [],
      "expected a mapping: a native inventory (`nodes:`) or an Ansible YAML inventory (`all:`)",
    );
  }
  if ("nodes" in data || "defaults" in data) return loadNative(src, opts);
  return loadAnsible(src, opts);
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
    for (const name of Object.keys(nodesData)) {
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
  const sshConfig = loadSshConfig(sshConfigPath(opts, defaults.ssh_config, baseDir));
  const raw = Object.entries(inv.nodes).map(([name, fields]) => ({
    name,
    fields: { ...defaults, ...(fields ?? {}) } as Fields,
    path: ["nodes", name] as (string | number)[],
  }));
  const groups = inv.groups ?? {};
  return finish(src, "native", raw, groups, sshConfig, (g, i) => ["groups", g, i]);
}

function loadAnsible(src: YamlSource, opts: LoadOptions): Inventory {
  const parsed = ansibleInventory.safeParse(src.data);
  if (!parsed.success) {
    throw zodFail(src, [], parsed.error, src.data);
  }
  const flat = flattenAnsible(parsed.data);
  if (flat.hosts.length === 0) {
    throw yamlError(
      src,
      [],
      "no hosts found: expected an Ansible inventory with `all: hosts:` or `children:`, or a native inventory with `nodes:`",
    );
  }
  const baseDir = dirname(src.file);
  const sshConfig = loadSshConfig(sshConfigPath(opts, undefined, baseDir));
  const raw = flat.hosts.map((h) => {
    if (!NODE_NAME.test(h.name)) {
      throw yamlError(src, h.path, "host names use letters, digits, '.', '_', '-'");
    }
    const fields = ansibleToNodeFields(h.vars);
    const checked = nodeFields.safeParse(fields);
    if (!checked.success) throw zodFail(src, h.path, checked.error, fields);
    return { name: h.name, fields: checked.data as Fields, path: h.path };
  });
  return finish(src, "ansible", raw, flat.groups, sshConfig, () => []);
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

function resolvePath(p: string, baseDir: string): string {
  if (p === "~") return homedir();
  if (p.startsWith("~/")) return join(homedir(), p.slice(2));
  return isAbsolute(p) ? p : resolve(baseDir, p);
}

function finish(
  src: YamlSource,
  format: Inventory["format"],
  raw: { name: string; fields: Fields; path: (string | number)[] }[],
  groups: Record<string, string[]>,
  sshConfig: ((alias: string) => SshConfigHit) | null,
  groupPath: (group: string, index: number) => (string | number)[],
): Inventory {
  const baseDir = dirname(src.file);
  const names = new Set(raw.map((r) => r.name));
  for (const [g, members] of Object.entries(groups)) {
    members.forEach((m, i) => {
      if (!names.has(m)) {
        throw yamlError(
          src,
          groupPath(g, i),
          `group '${g}' names node '${m}', which is not in nodes:`,
        );
      }
    });
  }
  const byName = new Map(raw.map((r) => [r.name, r]));
  const localUser = safeUser();

  const base = (
    name: string,
    f: Fields,
  ): Omit<NodeSpec, "jump" | "tags" | "slurmNode" | "become"> & { jumpRaw: string[] } => {
    const hit = sshConfig?.(f.host ?? name) ?? {};
    const identity = f.identity_file ?? hit.identityFile;
    return {
      name,
      host: f.host ?? hit.hostName ?? name,
      port: f.port ?? hit.port ?? 22,
      user: f.user ?? hit.user ?? localUser,
      identityFile: identity ? resolvePath(identity, baseDir) : null,
      identityPassphraseEnv: f.identity_passphrase_env ?? null,
      knownHosts: resolvePath(f.known_hosts ?? "~/.ssh/known_hosts", baseDir),
      hostKeyPolicy: (f.host_key_policy ?? "strict") as HostKeyPolicy,
      connectTimeoutS: f.connect_timeout ?? 10,
      jumpRaw:
        f.jump === undefined
          ? (hit.proxyJump ?? [])
          : Array.isArray(f.jump)
            ? f.jump
            : f.jump.split(","),
    };
  };

  const resolveJumps = (r: (typeof raw)[number], seen: string[]): JumpHost[] => {
    const b = base(r.name, r.fields);
    const out: JumpHost[] = [];
    b.jumpRaw.forEach((entry, i) => {
      const target = byName.get(entry);
      if (target) {
        if (seen.includes(entry)) {
          throw yamlError(
            src,
            [...r.path, "jump"],
            `jump hosts loop through '${entry}' (${[...seen, entry].join(" -> ")})`,
          );
        }
        out.push(...resolveJumps(target, [...seen, entry]));
        const t = base(target.name, target.fields);
        out.push({ ...pickHop(t), name: target.name });
        return;
      }
      const m =
        /^(?:([A-Za-z_][A-Za-z0-9_.-]*)@)?([A-Za-z0-9][A-Za-z0-9._-]*|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?$/.exec(
          entry,
        );
      if (!m) {
        throw yamlError(
          src,
          [...r.path, "jump", i],
          `expected a jump host as an inventory node name or 'user@host:port', got ${JSON.stringify(entry)}`,
        );
      }
      const hit = sshConfig?.(m[2]!) ?? {};
      out.push({
        name: entry,
        host: hit.hostName ?? m[2]!.replace(/^\[|\]$/g, ""),
        port: m[3] ? Number(m[3]) : (hit.port ?? 22),
        user: m[1] ?? hit.user ?? b.user,
        identityFile: hit.identityFile ? resolvePath(hit.identityFile, baseDir) : b.identityFile,
        identityPassphraseEnv: b.identityPassphraseEnv,
        knownHosts: b.knownHosts,
        hostKeyPolicy: b.hostKeyPolicy,
      });
    });
    return out;
  };

  const nodes: NodeSpec[] = raw.map((r) => {
    const b = base(r.name, r.fields);
    const { jumpRaw: _j, ...rest } = b;
    const become = r.fields.become;
    return {
      ...rest,
      become: become === "sudo" || become === true ? "sudo" : null,
      jump: resolveJumps(r, [r.name]),
      tags: r.fields.tags ?? [],
      slurmNode: r.fields.slurm_node ?? null,
    };
  });
  return { file: src.file, format, nodes, groups };
}

function pickHop(
  b: Omit<NodeSpec, "jump" | "tags" | "slurmNode" | "become">,
): Omit<JumpHost, "name"> {
  return {
    host: b.host,
    port: b.port,
    user: b.user,
    identityFile: b.identityFile,
    identityPassphraseEnv: b.identityPassphraseEnv,
    knownHosts: b.knownHosts,
    hostKeyPolicy: b.hostKeyPolicy,
  };
}

function safeUser(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? "root";
  }
}

export function inventoryError(file: string, message: string): SlicecheckError {
  return new SlicecheckError("INVENTORY_SCHEMA", `${file}: ${message}`, { file });
}
