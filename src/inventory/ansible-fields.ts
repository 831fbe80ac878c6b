// Ansible's connection variables (ansible_host, ansible_port, ansible_user, …, and the ssh
// options in ansible_ssh_common_args / _extra_args) mapped to slicecheck's node fields, each
// with the file:line it came from. Apart from ansible.ts, which reads and merges the variables.
import { inventoryError, type ResolvedHost } from "./ansible.js";
import { hostKeyPolicyOf, parseSshArgs } from "./ssh-args.js";

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

// Ansible's own boolean() (lib/ansible/module_utils/parsing/convert_bool.py), which `| bool`
// and its boolean options use: strings compared lower-cased. A [group:vars] value in INI is
// always a string ("yes"), a YAML one may be a real boolean.
const ANSIBLE_TRUE = new Set<unknown>(["y", "yes", "on", "1", "true", "t", 1, true]);
const ANSIBLE_FALSE = new Set<unknown>(["n", "no", "off", "0", "false", "f", 0, false]);

/** A value as Ansible's boolean() reads it; anything else is kept, for the schema to refuse
 * with its file:line. */
export function ansibleBool(x: unknown): unknown {
  const k = typeof x === "string" ? x.toLowerCase() : x;
  return ANSIBLE_TRUE.has(k) ? true : ANSIBLE_FALSE.has(k) ? false : x;
}

/** A host's variable with `{{ inventory_hostname }}` (and `_short`) rendered; any other Jinja
 * template is refused, naming where it was set. */
function renderVar(host: ResolvedHost, name: string): unknown {
  const s = host.vars[name]!;
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
}

/** Ansible's connection variables as slicecheck node fields. Other vars are ignored (an
 * inventory carries many for other playbooks). */
export function ansibleFields(host: ResolvedHost): MappedFields {
  const out: MappedFields = { fields: {}, origins: {}, warnings: [] };
  const v = host.vars;
  const pick = (names: string[], to: string, conv: (x: unknown) => unknown = (x) => x) => {
    for (const n of names) {
      if (v[n] === undefined) continue;
      out.fields[to] = conv(renderVar(host, n));
      out.origins[to] = `${v[n]!.where} (${n})`;
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
  if (method && method.value !== "sudo" && out.fields.become === "sudo")
    out.warnings.push(
      `${method.where}: ansible_become_method ${String(method.value)}: slicecheck becomes root with sudo -n only`,
    );
  connectionField(host, out);
  const hkc = v.ansible_host_key_checking ?? v.ansible_ssh_host_key_checking;
  if (hkc && FALSE.has(hkc.value as string)) {
    out.fields.host_key_policy = "accept-new";
    out.origins.host_key_policy = `${hkc.where} (host_key_checking false)`;
    out.warnings.push(
      `${hkc.where}: host key checking off is read as accept-new: unknown keys are recorded, changed ones still refused`,
    );
  }
  // Ansible puts its own -o Port/User/IdentityFile before the common and extra args, and ssh
  // takes the first value of an option: the explicit variables win, then common, then extra.
  for (const name of ["ansible_ssh_common_args", "ansible_ssh_extra_args"])
    sshArgFields(host, name, out);
  pick(["slicecheck_known_hosts"], "known_hosts");
  pick(["slicecheck_host_key_policy"], "host_key_policy");
  pick(["slicecheck_tags"], "tags");
  pick(["slicecheck_slurm_node"], "slurm_node");
  pick(["slicecheck_mig_config"], "mig_config");
  pick(["slicecheck_mig_layout"], "mig_layout");
  pick(["slicecheck_containers"], "containers");
  pick(["slicecheck_container_runtime"], "container_runtime");
  pick(["slicecheck_regenerate_cdi"], "regenerate_cdi", ansibleBool);
  pick(["slicecheck_identity_passphrase_env"], "identity_passphrase_env");
  return out;
}

/** ansible_connection: local runs on this machine; ssh and its kin are the default; anything
 * else (winrm, docker…) is refused. */
function connectionField(host: ResolvedHost, out: MappedFields): void {
  const conn = host.vars.ansible_connection;
  if (!conn) return;
  const c = String(renderVar(host, "ansible_connection"));
  if (c === "local") {
    out.fields.connection = "local";
    out.origins.connection = `${conn.where} (ansible_connection)`;
  } else if (!SSH_CONNECTIONS.has(c)) {
    throw inventoryError(
      conn.where,
      `${host.label}: ansible_connection: ${c} is not supported (slicecheck reaches nodes over ssh, or runs locally with ansible_connection: local). Keep such hosts in another inventory.`,
    );
  }
}

/** The ssh options of ansible_ssh_common_args / _extra_args, where no earlier value set them. */
function sshArgFields(host: ResolvedHost, name: string, out: MappedFields): void {
  const s = host.vars[name];
  if (!s || typeof s.value !== "string") return;
  let parsed: ReturnType<typeof parseSshArgs>;
  try {
    parsed = parseSshArgs(String(renderVar(host, name)));
  } catch (e) {
    throw inventoryError(s.where, `${name}: ${(e as Error).message}`);
  }
  for (const w of parsed.warnings) out.warnings.push(`${s.where}: ${name}: ${w}`);
  for (const set of parsed.settings) {
    if (set.field in out.fields) continue;
    let value = set.value;
    if (set.field === "host_key_policy") {
      const p = hostKeyPolicyOf(String(value));
      if (p.warning) out.warnings.push(`${s.where}: ${p.warning}`);
      if (!p.policy)
        throw inventoryError(
          s.where,
          `${name}: ${set.text}: expected yes, ask, accept-new, no or off`,
        );
      value = p.policy;
    }
    out.fields[set.field] = value;
    out.origins[set.field] = `${s.where} (${name}: ${set.text})`;
  }
}
