// The second half of loading an inventory: each node's fields, as the inventory gave them, are
// completed from ssh_config the way `ssh -G` would (HostName, Port, User, IdentityFile,
// ProxyJump, ProxyCommand…), checked, and turned into NodeSpecs that remember where every
// value came from (`slicecheck inventory --host`).
import { statSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import type { z } from "zod";
import type { SlicecheckError } from "../errors.js";
import { inventoryError } from "./ansible.js";
import { type defaultsFields, hostProblem } from "./schema.js";
import { hostKeyPolicyOf } from "./ssh-args.js";
import { loadSshConfig, type SshConfigResolver } from "./ssh-config.js";
import { expandTokens, localUserName } from "./ssh-tokens.js";
import type { HostKeyPolicy, Inventory, JumpHost, LoadOptions, NodeSpec } from "./types.js";

type Fields = z.infer<typeof defaultsFields>;

export interface RawNode {
  name: string;
  fields: Fields;
  /** field → `file:line (what)` */
  origins: Record<string, string>;
  err(field: string | number | null, message: string, index?: number): SlicecheckError;
}

export function resolvePath(p: string, baseDir: string): string {
  if (p === "~") return homedir();
  if (p.startsWith("~/")) return join(homedir(), p.slice(2));
  return isAbsolute(p) ? p : resolve(baseDir, p);
}

type Base = Omit<NodeSpec, "jump" | "tags" | "slurmNode" | "become" | "origins"> & {
  jumpRaw: string[];
  jumpWhere: string | null;
  origins: Record<string, string>;
};

/** The inventory's nodes completed from ssh_config, checked, with their origins. */
export function resolveNodes(
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
  const localUser = localUserName();
  const warned = new Set<string>();
  const warn = (w: string) => {
    if (!warned.has(w)) warnings.push(w);
    warned.add(w);
  };

  const folders = new Map<string, boolean>();
  const isFolder = (p: string): boolean => {
    let yes = folders.get(p);
    if (yes === undefined) {
      yes = statSync(p, { throwIfNoEntry: false })?.isDirectory() ?? false;
      folders.set(p, yes);
    }
    return yes;
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
    // The name reached through the node's name or ssh_config's HostName is checked here
    // (an inventory's own host: was checked with the schema).
    const problem = f.connection === "local" ? null : hostProblem(host);
    if (problem) {
      throw hit.hostName
        ? inventoryError(hit.hostName.where, `HostName ${host} for node ${r.name}: ${problem}`)
        : r.err(f.host !== undefined ? "host" : null, `host ${JSON.stringify(host)}: ${problem}`);
    }
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
    if (isFolder(knownHosts)) {
      const msg = `known_hosts ${knownHosts} is a folder; give the path of a known_hosts file (it is created if missing)`;
      throw f.known_hosts !== undefined || !khFromCfg
        ? r.err(f.known_hosts !== undefined ? "known_hosts" : null, msg)
        : inventoryError(khFromCfg.where, `UserKnownHostsFile for node ${r.name}: ${msg}`);
    }
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
  refuseTwoNames(nodes, byName);
  return { file, format, nodes, groups, warnings, files };
}

/** One machine under two names would be tested twice, and its lock taken by itself: two nodes
 * that reach the same address and port by the same way (jump hosts, ProxyCommand) are refused.
 * Host names compare without case, as DNS does. */
function refuseTwoNames(nodes: NodeSpec[], byName: Map<string, RawNode>): void {
  const seen = new Map<string, string>();
  for (const n of nodes) {
    if (n.transport === "local") continue;
    const hop = (h: { host: string; port: number }) => `${h.host.toLowerCase()}:${h.port}`;
    const key = [n.proxyCommand ?? "", ...n.jump.map(hop), hop(n)].join(" > ");
    const first = seen.get(key);
    if (first !== undefined) {
      throw byName
        .get(n.name)!
        .err(
          null,
          `nodes ${first} and ${n.name} both reach ${n.host}:${n.port}${n.jump.length || n.proxyCommand ? " the same way" : ""}: one machine under two names would be tested, and locked, twice; keep one of them`,
        );
    }
    seen.set(key, n.name);
  }
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
