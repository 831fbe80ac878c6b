// One node's own connection fields (no jump hosts yet): what the inventory gave, completed from
// ssh_config the way `ssh -G <host>` would, checked, each value with where it came from. Split
// from resolve-nodes.ts, which resolves the jump hosts through these.
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import type { z } from "zod";
import type { SlicecheckError } from "../errors.js";
import { inventoryError } from "./ansible.js";
import { type defaultsFields, hostProblem } from "./schema.js";
import { hostKeyPolicyOf } from "./ssh-args.js";
import type { Sourced, SshConfigHit, SshConfigResolver } from "./ssh-config.js";
import { expandTokens, type Tokens } from "./ssh-tokens.js";
import type { HostKeyPolicy, NodeSpec } from "./types.js";

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

export type Base = Omit<NodeSpec, "jump" | "tags" | "slurmNode" | "become" | "origins"> & {
  jumpRaw: string[];
  jumpWhere: string | null;
  origins: Record<string, string>;
};

/** What every node's resolution shares: the inventory file, ssh_config and a few caches. */
export interface BaseContext {
  file: string;
  baseDir: string;
  sshConfig: SshConfigResolver | null;
  localUser: string;
  warn(w: string): void;
  isFolder(p: string): boolean;
}

/** One node's resolution in progress: its raw fields, its ssh_config hit, the origins so far. */
interface Step {
  c: BaseContext;
  r: RawNode;
  hit: SshConfigHit;
  origins: Record<string, string>;
}

/** The inventory's value, else ssh_config's, else the default, noting which in `origins`. */
function from<T>(
  s: Step,
  key: string,
  inv: T | undefined,
  cfg: { value: T; where: string } | undefined,
  cfgName: string,
  dflt: T,
  dfltWhy: string,
): T {
  if (inv !== undefined) {
    s.origins[key] = s.r.origins[key] ?? "inventory";
    return inv;
  }
  if (cfg !== undefined) {
    s.origins[key] = `${cfg.where} (ssh_config ${cfgName})`;
    return cfg.value;
  }
  s.origins[key] = dfltWhy;
  return dflt;
}

export function nodeBase(c: BaseContext, r: RawNode): Base {
  const f = r.fields;
  // ssh is called with the inventory's host (Ansible: ansible_host), and its config matches
  // Host blocks against that name, exactly as `ssh -G <host>` does.
  const alias = f.host ?? r.name;
  const hit = c.sshConfig?.(alias, { user: f.user }) ?? { warnings: [] };
  for (const w of hit.warnings) c.warn(w);
  const s: Step = { c, r, hit, origins: {} };
  const host = hostOf(s, alias);
  const port = from(s, "port", f.port, hit.port, "Port", 22, "default");
  const user = from(s, "user", f.user, hit.user, "User", c.localUser, "default: the local user");
  const tokens = { h: host, p: String(port), r: user, n: alias };
  const identityFile = identityOf(s, tokens);
  const knownHosts = knownHostsOf(s);
  const hostKeyPolicy = hostKeyPolicyFor(s);
  const connectTimeoutS = from(
    s,
    "connectTimeoutS",
    f.connect_timeout,
    hit.connectTimeout,
    "ConnectTimeout",
    10,
    "default",
  );
  if (f.connect_timeout !== undefined)
    s.origins.connectTimeoutS = r.origins.connect_timeout ?? "inventory";
  const proxy = proxyOf(s, tokens);
  const transport = f.connection ?? "ssh";
  s.origins.transport = r.origins.connection ?? (transport === "ssh" ? "default" : "inventory");
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
    transport,
    ...proxy,
    origins: s.origins,
  };
}

/** The address ssh connects to, checked (an inventory's own host: was checked by the schema). */
function hostOf(s: Step, alias: string): string {
  const { r, hit } = s;
  const host = hit.hostName?.value ?? alias;
  const problem = r.fields.connection === "local" ? null : hostProblem(host);
  if (problem) {
    throw hit.hostName
      ? inventoryError(hit.hostName.where, `HostName ${host} for node ${r.name}: ${problem}`)
      : r.err(
          r.fields.host !== undefined ? "host" : null,
          `host ${JSON.stringify(host)}: ${problem}`,
        );
  }
  s.origins.host = hit.hostName
    ? `${hit.hostName.where} (ssh_config HostName)`
    : (r.origins.host ?? "the inventory name");
  return host;
}

function identityOf(s: Step, tokens: Tokens): string | null {
  const { r, hit, c } = s;
  if (r.fields.identity_file !== undefined) {
    s.origins.identityFile = r.origins.identity_file ?? "inventory";
    return resolvePath(r.fields.identity_file, c.baseDir);
  }
  const id = hit.identityFiles?.[0];
  if (id) {
    s.origins.identityFile = `${id.where} (ssh_config IdentityFile)`;
    return expandTokens(id.value, tokens, `${id.where}: IdentityFile`);
  }
  s.origins.identityFile = "default: ssh-agent, ~/.ssh/id_ed25519, id_ecdsa, id_rsa";
  return null;
}

function knownHostsOf(s: Step): string {
  const { r, hit, c } = s;
  const f = r.fields;
  const khFromCfg = hit.userKnownHostsFile
    ? { value: hit.userKnownHostsFile.value[0]!, where: hit.userKnownHostsFile.where }
    : undefined;
  const knownHosts =
    f.known_hosts !== undefined
      ? resolvePath(f.known_hosts, c.baseDir)
      : from(
          s,
          "knownHosts",
          undefined,
          khFromCfg,
          "UserKnownHostsFile",
          resolvePath("~/.ssh/known_hosts", c.baseDir),
          "default",
        );
  if (f.known_hosts !== undefined) s.origins.knownHosts = r.origins.known_hosts ?? "inventory";
  if (c.isFolder(knownHosts)) {
    const msg = `known_hosts ${knownHosts} is a folder; give the path of a known_hosts file (it is created if missing)`;
    throw f.known_hosts !== undefined || !khFromCfg
      ? r.err(f.known_hosts !== undefined ? "known_hosts" : null, msg)
      : inventoryError(khFromCfg.where, `UserKnownHostsFile for node ${r.name}: ${msg}`);
  }
  return knownHosts;
}

function hostKeyPolicyFor(s: Step): HostKeyPolicy {
  const { r, hit, c } = s;
  let cfgPolicy: Sourced<HostKeyPolicy> | undefined;
  if (hit.strictHostKeyChecking) {
    const p = hostKeyPolicyOf(hit.strictHostKeyChecking.value);
    if (p.warning) c.warn(`${hit.strictHostKeyChecking.where}: ${r.name}: ${p.warning}`);
    if (p.policy) cfgPolicy = { value: p.policy, where: hit.strictHostKeyChecking.where };
  }
  const policy = from(
    s,
    "hostKeyPolicy",
    r.fields.host_key_policy as HostKeyPolicy | undefined,
    cfgPolicy,
    "StrictHostKeyChecking",
    "strict" as HostKeyPolicy,
    "default",
  );
  if (r.fields.host_key_policy !== undefined)
    s.origins.hostKeyPolicy = r.origins.host_key_policy ?? "inventory";
  return policy;
}

/** ProxyJump and ProxyCommand exclude each other: one given by the inventory hides the other
 * from ssh_config, as the first one obtained does in ssh. */
function proxyOf(
  s: Step,
  tokens: Tokens,
): { jumpRaw: string[]; jumpWhere: string | null; proxyCommand: string | null } {
  const { r, hit, c } = s;
  const f = r.fields;
  const o = r.origins;
  if (f.jump !== undefined && f.proxy_command)
    throw r.err(
      "jump",
      "give jump (ProxyJump) or proxy_command (ProxyCommand), not both: ssh uses only one",
    );
  const none = { jumpRaw: [], jumpWhere: null, proxyCommand: null };
  if (f.jump !== undefined) {
    s.origins.jump = o.jump ?? "inventory";
    return { ...none, jumpRaw: Array.isArray(f.jump) ? f.jump : f.jump.split(",") };
  }
  if (f.proxy_command !== undefined) {
    if (f.proxy_command === null) return none;
    s.origins.proxyCommand = o.proxy_command ?? "inventory";
    const where = `${o.proxy_command ?? c.file}: ProxyCommand`;
    return { ...none, proxyCommand: expandTokens(f.proxy_command, tokens, where) };
  }
  if (hit.proxyJump) {
    s.origins.jump = `${hit.proxyJump.where} (ssh_config ProxyJump)`;
    return { ...none, jumpRaw: hit.proxyJump.value, jumpWhere: hit.proxyJump.where };
  }
  if (hit.proxyCommand) {
    s.origins.proxyCommand = `${hit.proxyCommand.where} (ssh_config ProxyCommand)`;
    const where = `${hit.proxyCommand.where}: ProxyCommand`;
    return { ...none, proxyCommand: expandTokens(hit.proxyCommand.value, tokens, where) };
  }
  return none;
}
