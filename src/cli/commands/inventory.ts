// `slicecheck inventory`, like `ansible-inventory --list/--host`: every node as slicecheck
// resolved it (address, port, user, key, jump chain or ProxyCommand, become, transport) and
// where each value came from. It connects to nothing: this is how a user checks that an
// Ansible inventory and ~/.ssh/config were read as Ansible and ssh would read them.
import { SlicecheckError } from "../../errors.js";
import { selectNodes } from "../../inventory/selectors.js";
import type { NodeSpec } from "../../inventory/types.js";
import { displayPath, inventoryPath, type Out, readInventory, table } from "../context.js";

export interface InventoryCliOptions {
  inventory?: string;
  nodes?: string;
  list?: boolean;
  host?: string;
  json?: boolean;
}

export interface NodeInventoryJson {
  name: string;
  host: string;
  port: number;
  user: string;
  identityFile: string | null;
  knownHosts: string;
  hostKeyPolicy: string;
  connectTimeoutS: number;
  jump: { name: string; host: string; port: number; user: string }[];
  proxyCommand: string | null;
  become: "sudo" | null;
  transport: "ssh" | "local";
  tags: string[];
  slurmNode: string | null;
  groups: string[];
  origins: Record<string, string>;
}

/** Each node's groups, found in one pass over the memberships (not nodes × groups). */
function groupsByNode(groups: Record<string, string[]>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [g, members] of Object.entries(groups)) {
    for (const m of members) {
      const list = out.get(m);
      if (list) list.push(g);
      else out.set(m, [g]);
    }
  }
  return out;
}

function nodeJson(n: NodeSpec, groupsOf: Map<string, string[]>): NodeInventoryJson {
  return {
    name: n.name,
    host: n.host,
    port: n.port,
    user: n.user,
    identityFile: n.identityFile,
    knownHosts: n.knownHosts,
    hostKeyPolicy: n.hostKeyPolicy,
    connectTimeoutS: n.connectTimeoutS,
    jump: n.jump.map((j) => ({ name: j.name, host: j.host, port: j.port, user: j.user })),
    proxyCommand: n.proxyCommand ?? null,
    become: n.become,
    transport: n.transport ?? "ssh",
    tags: n.tags,
    slurmNode: n.slurmNode,
    groups: groupsOf.get(n.name) ?? [],
    origins: Object.fromEntries(
      Object.entries(n.origins ?? {}).map(([k, v]) => [k, shortenPaths(v)]),
    ),
  };
}

/** Origins name absolute paths; relative ones read better under the working folder. */
function shortenPaths(s: string): string {
  return s.replace(/(\/[^\s:()]+)(?=:\d|\s|$)/g, (p) => displayPath(p));
}

function via(n: NodeInventoryJson): string {
  if (n.transport === "local") return "local";
  if (n.proxyCommand) return `ProxyCommand ${n.proxyCommand}`;
  if (n.jump.length) return n.jump.map((j) => `${j.user}@${j.host}:${j.port}`).join(" -> ");
  return "direct";
}

export function inventoryCommand(o: InventoryCliOptions, io: Out): number {
  if (o.list && o.host !== undefined) {
    throw new SlicecheckError("USAGE", "give --list or --host NAME, not both");
  }
  const inv = readInventory(inventoryPath(o.inventory));
  for (const w of inv.warnings ?? []) io.err(`slicecheck: warning: ${shortenPaths(w)}`);
  if (o.host !== undefined) {
    const n = inv.nodes.find((x) => x.name === o.host);
    if (!n) {
      throw new SlicecheckError(
        "SELECTOR",
        `--host ${JSON.stringify(o.host)}: no such node in ${inv.file}; list them with \`slicecheck inventory --list\``,
        { term: o.host },
      );
    }
    const j = nodeJson(n, groupsByNode(inv.groups));
    if (o.json) {
      io.out(JSON.stringify(j, null, 2));
      return 0;
    }
    const rows: [string, string, string][] = [
      ["address", j.host, j.origins.host ?? ""],
      ["port", String(j.port), j.origins.port ?? ""],
      ["user", j.user, j.origins.user ?? ""],
      ["key", j.identityFile ?? "(default keys, ssh-agent)", j.origins.identityFile ?? ""],
      ["known_hosts", j.knownHosts, j.origins.knownHosts ?? ""],
      ["host keys", j.hostKeyPolicy, j.origins.hostKeyPolicy ?? ""],
      ["via", via(j), j.origins.proxyCommand ?? j.origins.jump ?? ""],
      ["become", j.become ?? "none", j.origins.become ?? ""],
      ["transport", j.transport, j.origins.transport ?? ""],
      ["connect timeout", `${j.connectTimeoutS} s`, j.origins.connectTimeoutS ?? ""],
      ["groups", j.groups.join(", ") || "-", ""],
    ];
    if (j.tags.length) rows.push(["tags", j.tags.join(", "), j.origins.tags ?? ""]);
    if (j.slurmNode) rows.push(["slurm node", j.slurmNode, j.origins.slurmNode ?? ""]);
    io.out(`${j.name}`);
    io.out(table(rows.map(([k, v, from]) => [`  ${k}`, v, from ? `from ${from}` : ""])));
    return 0;
  }
  const groupsOf = groupsByNode(inv.groups);
  const nodes = selectNodes(inv, o.nodes).map((n) => nodeJson(n, groupsOf));
  if (o.json) {
    io.out(
      JSON.stringify(
        {
          file: inv.file,
          format: inv.format,
          files: inv.files ?? [inv.file],
          nodes,
          groups: inv.groups,
          warnings: inv.warnings ?? [],
        },
        null,
        2,
      ),
    );
    return 0;
  }
  io.out(
    table([
      ["NODE", "ADDRESS", "USER", "BECOME", "VIA"],
      ...nodes.map((n) => [
        n.name,
        n.transport === "local" ? "-" : `${n.host}:${n.port}`,
        n.user,
        n.become ?? "-",
        via(n),
      ]),
    ]),
  );
  const groups = Object.entries(inv.groups).filter(([g]) => g !== "all");
  if (groups.length) {
    io.out("");
    io.out(table([["GROUP", "NODES"], ...groups.map(([g, m]) => [g, m.join(" ") || "-"])]));
  }
  return 0;
}
