// Ansible YAML inventories, read unchanged: hosts inherit group vars (a child group's vars win
// over its parent's, host vars win over both), and every group becomes a slicecheck group.
import type { z } from "zod";
import type { AnsibleGroup, NodeFields } from "./schema.js";

export interface AnsibleHost {
  name: string;
  /** Where in the document the host was declared, for error messages. */
  path: (string | number)[];
  vars: Record<string, unknown>;
}

export interface FlatAnsible {
  hosts: AnsibleHost[];
  groups: Record<string, string[]>;
}

export function flattenAnsible(
  root: z.infer<z.ZodType<Record<string, AnsibleGroup | null>>>,
): FlatAnsible {
  const hosts = new Map<string, AnsibleHost>();
  const groups: Record<string, string[]> = {};

  const walk = (
    name: string,
    group: AnsibleGroup | null,
    inherited: Record<string, unknown>,
    path: (string | number)[],
  ): void => {
    const vars = { ...inherited, ...(group?.vars ?? {}) };
    const members = new Set(groups[name] ?? []);
    for (const [host, hostVars] of Object.entries(group?.hosts ?? {})) {
      const prev = hosts.get(host);
      hosts.set(host, {
        name: host,
        path: prev?.path ?? [...path, "hosts", host],
        vars: { ...(prev?.vars ?? {}), ...vars, ...(hostVars ?? {}) },
      });
      members.add(host);
    }
    for (const [child, childGroup] of Object.entries(group?.children ?? {})) {
      walk(child, childGroup, vars, [...path, "children", child]);
      for (const h of groups[child] ?? []) members.add(h);
    }
    groups[name] = [...members];
  };
  for (const [name, group] of Object.entries(root)) walk(name, group, {}, [name]);
  return { hosts: [...hosts.values()], groups };
}

/** Ansible connection variables mapped to slicecheck's node fields. Unknown vars are ignored
 * (an Ansible inventory carries many of them for other playbooks). */
export function ansibleToNodeFields(vars: Record<string, unknown>): Record<string, unknown> {
  const out: Partial<Record<keyof NodeFields, unknown>> = {};
  const pick = (from: string, to: keyof NodeFields) => {
    if (vars[from] !== undefined) out[to] = vars[from];
  };
  pick("ansible_host", "host");
  pick("ansible_ssh_host", "host");
  pick("ansible_port", "port");
  pick("ansible_ssh_port", "port");
  pick("ansible_user", "user");
  pick("ansible_ssh_user", "user");
  pick("ansible_ssh_private_key_file", "identity_file");
  pick("ansible_private_key_file", "identity_file");
  if (typeof out.port === "string" && /^\d+$/.test(out.port)) out.port = Number(out.port);
  const become = vars.ansible_become;
  if (become === true || become === "true" || become === "yes") out.become = "sudo";
  // ProxyJump is usually given to Ansible through ssh args: -J host or -o ProxyJump=host.
  const args = vars.ansible_ssh_common_args ?? vars.ansible_ssh_extra_args;
  if (typeof args === "string") {
    const m = /(?:-J\s*|ProxyJump[= ]\s*)(\S+)/.exec(args);
    if (m?.[1]) out.jump = m[1].replace(/^['"]|['"]$/g, "").split(",");
  }
  pick("slicecheck_known_hosts", "known_hosts");
  pick("slicecheck_host_key_policy", "host_key_policy");
  pick("slicecheck_tags", "tags");
  pick("slicecheck_slurm_node", "slurm_node");
  pick("slicecheck_identity_passphrase_env", "identity_passphrase_env");
  return out;
}
