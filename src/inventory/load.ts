// Loads a native inventory, an Ansible YAML inventory or an Ansible INI inventory into
// NodeSpecs, fills what the inventory leaves out from ssh_config as `ssh -G` would, and keeps
// where every value came from. Every problem is reported with the file, the line, the path
// inside the document and what was expected, before any node is touched.
import { readFileSync } from "node:fs";
import { homedir, userInfo } from "node:os";
import { dirname, extname, isAbsolute, join, resolve } from "node:path";
import { isMap, parseDocument } from "yaml";
import type { z } from "zod";
import { SlicecheckError } from "../errors.js";
import {
  type AnsibleModel,
  ansibleFields,
  inventoryError,
  modelFromYaml,
  resolveAnsible,
} from "./ansible.js";
import { modelFromIni } from "./ansible-ini.js";
import {
  ansibleInventory,
  defaultsFields,
  NODE_NAME,
  nativeInventory,
  nodeFields,
} from "./schema.js";
import { hostKeyPolicyOf } from "./ssh-args.js";
import { expandTokens, loadSshConfig, type SshConfigResolver } from "./ssh-config.js";
import type { HostKeyPolicy, Inventory, JumpHost, NodeSpec } from "./types.js";
import { readYaml, type YamlSource, yamlError } from "./yaml-source.js";

type Fields = z.infer<typeof defaultsFields>;

export interface LoadOptions {
  /** Overrides `defaults.ssh_config`; null disables ~/.ssh/config lookup (tests). */
  sshConfig?: string | null;
  /** Where relative ssh_config Include paths start (default ~/.ssh; tests). */
  sshDir?: string;
}

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
  const doc = parseDocument(text);
  return doc.errors.length > 0 || !isMap(doc.contents);
}

interface RawNode {
  name: string;
  fields: Fields;
  /** field → `file:line (what)` */
  origins: Record<string, string>;
  err(field: string | number | null, message: string, index?: number): SlicecheckError;
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
  return finish(src.file, "native", raw, groups, cfgPath, opts, baseDir, [], [src.file]);
}

function loadAnsibleYaml(src: YamlSource, opts: LoadOptions): Inventory {
  const parsed = ansibleInventory.safeParse(src.data);
  if (!parsed.success) throw zodFail(src, [], parsed.error, src.data);
  return loadAnsible(src.file, modelFromYaml(src, parsed.data), opts);
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
  return loadAnsible(file, modelFromIni(file, text), opts);
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
    for (const w of mapped.warnings) warnedHosts.set(w, [...(warnedHosts.get(w) ?? []), h.name]);
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
  return finish(file, "ansible", raw, resolved.groups, cfgPath, opts, baseDir, warnings, [
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

function resolvePath(p: string, baseDir: string): string {
  if (p === "~") return homedir();
  if (p.startsWith("~/")) return join(homedir(), p.slice(2));
  return isAbsolute(p) ? p : resolve(baseDir, p);
}

type Base = Omit<NodeSpec, "jump" | "tags" | "slurmNode" | "become" | "origins"> & {
  jumpRaw: string[];
  jumpWhere: string | null;
  origins: Record<string, string>;
};

function finish(
  file: string,
  format: Inventory["format"],
  raw: RawNode[],
  groups: Record<string, string[]>,
  cfgPath: string | null,
  opts: LoadOptions,
  baseDir: string,
  warnings: string[],
  files: string[],
): Inventory {
  const sshConfig: SshConfigResolver | null = loadSshConfig(cfgPath, { sshDir: opts.sshDir });
  if (sshConfig && cfgPath) files.push(cfgPath);
  const byName = new Map(raw.map((r) => [r.name, r]));
  const localUser = safeUser();
  const warned = new Set<string>();
  const warn = (w: string) => {
    if (!warned.has(w)) warnings.push(w);
    warned.add(w);
  };

  const base = (r: RawNode): Base => {
    const f = r.fields;
    const o = r.origins;
    // ssh is called with the inventory's host (Ansible: ansible_host), and its config matches
    // Host blocks against that name, exactly as `ssh -G <host>` does.
    const alias = f.host ?? r.name;
    const hit = sshConfig?.(alias, { user: f.user }) ?? { warnings: [] };
    for (const w of hit.warnings) warn(w);
    const origins: Record<string, string> = {};
    const from = <T>(
      key: string,
      inv: T | undefined,
      cfg: { value: T; where: string } | undefined,
      cfgName: string,
      dflt: T,
      dfltWhy: string,
    ): T => {
      if (inv !== undefined) {
        origins[key] = o[key] ?? "inventory";
        return inv;
      }
      if (cfg !== undefined) {
        origins[key] = `${cfg.where} (ssh_config ${cfgName})`;
        return cfg.value;
      }
      origins[key] = dfltWhy;
      return dflt;
    };
    const host = hit.hostName?.value ?? alias;
    origins.host = hit.hostName
      ? `${hit.hostName.where} (ssh_config HostName)`
      : (o.host ?? "the inventory name");
    const port = from("port", f.port, hit.port, "Port", 22, "default");
    const user = from("user", f.user, hit.user, "User", localUser, "default: the local user");
    const tokens = { h: host, p: String(port), r: user, n: alias };
    let identityFile: string | null;
    if (f.identity_file !== undefined) {
      identityFile = resolvePath(f.identity_file, baseDir);
      origins.identityFile = o.identity_file ?? "inventory";
    } else if (hit.identityFiles?.[0]) {
      const id = hit.identityFiles[0];
      identityFile = expandTokens(id.value, tokens, `${id.where}: IdentityFile`);
      origins.identityFile = `${id.where} (ssh_config IdentityFile)`;
    } else {
      identityFile = null;
      origins.identityFile = "default: ssh-agent, ~/.ssh/id_ed25519, id_ecdsa, id_rsa";
    }
    const khFromCfg = hit.userKnownHostsFile
      ? { value: hit.userKnownHostsFile.value[0]!, where: hit.userKnownHostsFile.where }
      : undefined;
    const knownHosts =
      f.known_hosts !== undefined
        ? resolvePath(f.known_hosts, baseDir)
        : from(
            "knownHosts",
            undefined,
            khFromCfg,
            "UserKnownHostsFile",
            resolvePath("~/.ssh/known_hosts", baseDir),
            "default",
          );
    if (f.known_hosts !== undefined) origins.knownHosts = o.known_hosts ?? "inventory";
    let cfgPolicy: { value: HostKeyPolicy; where: string } | undefined;
    if (hit.strictHostKeyChecking) {
      const p = hostKeyPolicyOf(hit.strictHostKeyChecking.value);
      if (p.warning) warn(`${hit.strictHostKeyChecking.where}: ${r.name}: ${p.warning}`);
      if (p.policy) cfgPolicy = { value: p.policy, where: hit.strictHostKeyChecking.where };
    }
    const hostKeyPolicy = from(
      "hostKeyPolicy",
      f.host_key_policy as HostKeyPolicy | undefined,
      cfgPolicy,
      "StrictHostKeyChecking",
      "strict" as HostKeyPolicy,
      "default",
    );
    const connectTimeoutS = from(
      "connectTimeoutS",
      f.connect_timeout,
      hit.connectTimeout,
      "ConnectTimeout",
      10,
      "default",
    );
    if (f.connect_timeout !== undefined) origins.connectTimeoutS = o.connect_timeout ?? "inventory";
    if (f.host_key_policy !== undefined) origins.hostKeyPolicy = o.host_key_policy ?? "inventory";
    if (f.jump !== undefined && f.proxy_command) {
      throw r.err(
        "jump",
        "give jump (ProxyJump) or proxy_command (ProxyCommand), not both: ssh uses only one",
      );
    }
    // ProxyJump and ProxyCommand exclude each other: one given by the inventory hides the
    // other from ssh_config, as the first one obtained does in ssh.
    let jumpRaw: string[] = [];
    let jumpWhere: string | null = null;
    let proxyCommand: string | null = null;
    if (f.jump !== undefined) {
      jumpRaw = Array.isArray(f.jump) ? f.jump : f.jump.split(",");
      origins.jump = o.jump ?? "inventory";
    } else if (f.proxy_command !== undefined) {
      if (f.proxy_command !== null) {
        proxyCommand = expandTokens(
          f.proxy_command,
          tokens,
          `${o.proxy_command ?? file}: ProxyCommand`,
        );
        origins.proxyCommand = o.proxy_command ?? "inventory";
      }
    } else if (hit.proxyJump) {
      jumpRaw = hit.proxyJump.value;
      jumpWhere = hit.proxyJump.where;
      origins.jump = `${hit.proxyJump.where} (ssh_config ProxyJump)`;
    } else if (hit.proxyCommand) {
      proxyCommand = expandTokens(
        hit.proxyCommand.value,
        tokens,
        `${hit.proxyCommand.where}: ProxyCommand`,
      );
      origins.proxyCommand = `${hit.proxyCommand.where} (ssh_config ProxyCommand)`;
    }
    const transport = f.connection ?? "ssh";
    origins.transport = o.connection ?? (transport === "ssh" ? "default" : "inventory");
    return {
      name: r.name,
      host,
      port,
      user,
      identityFile,
      identityPassphraseEnv: f.identity_passphrase_env ?? null,
      knownHosts,
      hostKeyPolicy,
      connectTimeoutS,
      proxyCommand,
      transport,
      jumpRaw,
      jumpWhere,
      origins,
    };
  };

  const resolveJumps = (r: RawNode, seen: string[]): JumpHost[] => {
    const b = base(r);
    const out: JumpHost[] = [];
    b.jumpRaw.forEach((entry, i) => {
      const target = byName.get(entry);
      if (target) {
        if (seen.includes(entry)) {
          throw r.err(
            "jump",
            `jump hosts loop through '${entry}' (${[...seen, entry].join(" -> ")})`,
          );
        }
        out.push(...resolveJumps(target, [...seen, entry]));
        const t = base(target);
        out.push({ ...pickHop(t), name: target.name });
        return;
      }
      const m =
        /^(?:ssh:\/\/)?(?:([A-Za-z_][A-Za-z0-9_.-]*)@)?([A-Za-z0-9][A-Za-z0-9._-]*|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?$/.exec(
          entry,
        );
      if (!m) {
        const msg = `expected a jump host as an inventory node name or 'user@host:port', got ${JSON.stringify(entry)}`;
        throw b.jumpWhere
          ? inventoryError(b.jumpWhere, `ProxyJump: ${msg}`)
          : r.err("jump", msg, i);
      }
      const hit = sshConfig?.(m[2]!, { user: m[1] }) ?? { warnings: [] };
      const host = hit.hostName?.value ?? m[2]!.replace(/^\[|\]$/g, "");
      const port = m[3] ? Number(m[3]) : (hit.port?.value ?? 22);
      const user = m[1] ?? hit.user?.value ?? b.user;
      const id = hit.identityFiles?.[0];
      out.push({
        name: entry,
        host,
        port,
        user,
        identityFile: id
          ? expandTokens(
              id.value,
              { h: host, p: String(port), r: user, n: m[2]! },
              `${id.where}: IdentityFile`,
            )
          : b.identityFile,
        identityPassphraseEnv: b.identityPassphraseEnv,
        knownHosts: b.knownHosts,
        hostKeyPolicy: b.hostKeyPolicy,
        proxyCommand: hit.proxyCommand
          ? expandTokens(
              hit.proxyCommand.value,
              { h: host, p: String(port), r: user, n: m[2]! },
              `${hit.proxyCommand.where}: ProxyCommand`,
            )
          : null,
      });
    });
    // Only the first hop can start from a local ProxyCommand: the others are reached through
    // the hop before them.
    out.forEach((hop, i) => {
      if (i > 0 && hop.proxyCommand) {
        throw r.err(
          "jump",
          `jump host ${hop.name} has a ProxyCommand but is not the first hop; slicecheck starts a ProxyCommand only for the first hop`,
        );
      }
    });
    if (out.length && b.proxyCommand) {
      throw r.err(
        "jump",
        "a node reached through jump hosts cannot also have its own ProxyCommand",
      );
    }
    return out;
  };

  const nodes: NodeSpec[] = raw.map((r) => {
    const b = base(r);
    const { jumpRaw: _j, jumpWhere: _w, origins, ...rest } = b;
    const become = r.fields.become;
    origins.become = r.origins.become ?? "default: none";
    if (r.fields.tags) origins.tags = r.origins.tags ?? "inventory";
    if (r.fields.slurm_node) origins.slurmNode = r.origins.slurm_node ?? "inventory";
    return {
      ...rest,
      become: become === "sudo" || become === true ? "sudo" : null,
      jump: resolveJumps(r, [r.name]),
      tags: r.fields.tags ?? [],
      slurmNode: r.fields.slurm_node ?? null,
      origins,
    };
  });
  return { file, format, nodes, groups, warnings, files };
}

function pickHop(b: Base): Omit<JumpHost, "name"> {
  return {
    host: b.host,
    port: b.port,
    user: b.user,
    identityFile: b.identityFile,
    identityPassphraseEnv: b.identityPassphraseEnv,
    knownHosts: b.knownHosts,
    hostKeyPolicy: b.hostKeyPolicy,
    proxyCommand: b.proxyCommand ?? null,
  };
}

function safeUser(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? "root";
  }
}

export { inventoryError };
