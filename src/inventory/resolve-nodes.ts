// The second half of loading an inventory: each node's fields, as the inventory gave them, are
// completed from ssh_config the way `ssh -G` would (node-base.ts: HostName, Port, User,
// IdentityFile, ProxyJump, ProxyCommand…), its jump hosts resolved, checked, and turned into
// NodeSpecs that remember where every value came from (`slicecheck inventory --host`).
import { statSync } from "node:fs";
import { inventoryError } from "./ansible.js";
import { type Base, type BaseContext, nodeBase, type RawNode, resolvePath } from "./node-base.js";
import { loadSshConfig } from "./ssh-config.js";
import { expandTokens, localUserName } from "./ssh-tokens.js";
import type { IntendedLayout, Inventory, JumpHost, LoadOptions, NodeSpec } from "./types.js";

/** What resolving jump hosts needs beyond one node's base: the other nodes by name. */
interface Ctx extends BaseContext {
  byName: Map<string, RawNode>;
}

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
  const sshConfig = loadSshConfig(cfgPath, { sshDir: opts.sshDir });
  if (sshConfig && cfgPath) files.push(cfgPath);
  const byName = new Map(raw.map((r) => [r.name, r]));
  const warned = new Set<string>();
  const folders = new Map<string, boolean>();
  const c: Ctx = {
    file,
    baseDir,
    sshConfig,
    byName,
    localUser: localUserName(),
    warn: (w) => {
      if (!warned.has(w)) warnings.push(w);
      warned.add(w);
    },
    isFolder: (p) => {
      let yes = folders.get(p);
      if (yes === undefined) {
        yes = statSync(p, { throwIfNoEntry: false })?.isDirectory() ?? false;
        folders.set(p, yes);
      }
      return yes;
    },
  };
  const nodes = raw.map((r) => nodeSpecOf(c, r));
  refuseTwoNames(nodes, byName);
  return { file, format, nodes, groups, warnings, files };
}

function nodeSpecOf(c: Ctx, r: RawNode): NodeSpec {
  const { jumpRaw: _j, jumpWhere: _w, origins, ...rest } = nodeBase(c, r);
  const become = r.fields.become;
  origins.become = r.origins.become ?? "default: none";
  if (r.fields.tags) origins.tags = r.origins.tags ?? "inventory";
  if (r.fields.slurm_node) origins.slurmNode = r.origins.slurm_node ?? "inventory";
  if (r.fields.regenerate_cdi !== undefined)
    origins.regenerateCdi = r.origins.regenerate_cdi ?? "inventory";
  return {
    ...rest,
    become: become === "sudo" || become === true ? "sudo" : null,
    jump: resolveJumps(c, r, [r.name]),
    tags: r.fields.tags ?? [],
    slurmNode: r.fields.slurm_node ?? null,
    intended: intendedOf(c, r),
    ...(r.fields.regenerate_cdi ? { regenerateCdi: true } : {}),
    ...(r.fields.containers ? { containers: r.fields.containers } : {}),
    containerRuntime: r.fields.container_runtime ?? null,
    origins,
  };
}

/** `mig_config` names a config; `mig_layout` (often in defaults) the file that holds it. A
 * config without a file is refused here; a file without a config means no intended layout. */
function intendedOf(c: Ctx, r: RawNode): IntendedLayout | null {
  const config = r.fields.mig_config;
  if (config === undefined) return null;
  const file = r.fields.mig_layout;
  if (file === undefined)
    throw r.err(
      "mig_config",
      `mig_config '${config}' names a config but no mig_layout says which layout file holds it; add mig_layout: FILE (in defaults or on the node)`,
    );
  return {
    file: resolvePath(file, c.baseDir),
    config,
    origin: r.origins.mig_config ?? `${c.file} (mig_config)`,
  };
}

function resolveJumps(c: Ctx, r: RawNode, seen: string[]): JumpHost[] {
  const b = nodeBase(c, r);
  const out: JumpHost[] = [];
  b.jumpRaw.forEach((entry, i) => {
    const target = c.byName.get(entry);
    if (!target) {
      out.push(plainHop(c, r, b, entry, i));
      return;
    }
    if (seen.includes(entry))
      throw r.err("jump", `jump hosts loop through '${entry}' (${[...seen, entry].join(" -> ")})`);
    out.push(...resolveJumps(c, target, [...seen, entry]));
    out.push({ ...pickHop(nodeBase(c, target)), name: target.name });
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
    throw r.err("jump", "a node reached through jump hosts cannot also have its own ProxyCommand");
  }
  return out;
}

const HOP =
  /^(?:ssh:\/\/)?(?:([A-Za-z_][A-Za-z0-9_.-]*)@)?([A-Za-z0-9][A-Za-z0-9._-]*|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?$/;

/** A jump host given as `user@host:port` (not an inventory node), completed from ssh_config;
 * what it does not say it takes from the node it leads to. */
function plainHop(c: Ctx, r: RawNode, b: Base, entry: string, i: number): JumpHost {
  const m = HOP.exec(entry);
  if (!m) {
    const msg = `expected a jump host as an inventory node name or 'user@host:port', got ${JSON.stringify(entry)}`;
    throw b.jumpWhere ? inventoryError(b.jumpWhere, `ProxyJump: ${msg}`) : r.err("jump", msg, i);
  }
  const hit = c.sshConfig?.(m[2]!, { user: m[1] }) ?? { warnings: [] };
  const host = hit.hostName?.value ?? m[2]!.replace(/^\[|\]$/g, "");
  const port = m[3] ? Number(m[3]) : (hit.port?.value ?? 22);
  const user = m[1] ?? hit.user?.value ?? b.user;
  const tokens = { h: host, p: String(port), r: user, n: m[2]! };
  const id = hit.identityFiles?.[0];
  return {
    name: entry,
    host,
    port,
    user,
    identityFile: id ? expandTokens(id.value, tokens, `${id.where}: IdentityFile`) : b.identityFile,
    identityPassphraseEnv: b.identityPassphraseEnv,
    knownHosts: b.knownHosts,
    hostKeyPolicy: b.hostKeyPolicy,
    proxyCommand: hit.proxyCommand
      ? expandTokens(hit.proxyCommand.value, tokens, `${hit.proxyCommand.where}: ProxyCommand`)
      : null,
  };
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
