// The ssh options Ansible users put in `ansible_ssh_common_args` / `ansible_ssh_extra_args`
// (Ansible passes them to ssh(1) as they are): `-o Key=Value`, `-o 'Key Value'`, `-oKey=Value`,
// `-J hop`, `-p`, `-l`, `-i`. Only the options slicecheck honours become node fields; every other
// one is named in a warning, so nothing is dropped silently.

/** ssh option name (lower case) → the node field it sets. */
export const HONOURED_SSH_OPTIONS = {
  userknownhostsfile: "known_hosts",
  stricthostkeychecking: "host_key_policy",
  proxyjump: "jump",
  proxycommand: "proxy_command",
  port: "port",
  user: "user",
  identityfile: "identity_file",
  connecttimeout: "connect_timeout",
} as const;

type Field = (typeof HONOURED_SSH_OPTIONS)[keyof typeof HONOURED_SSH_OPTIONS];

export interface SshArgSetting {
  field: Field;
  value: unknown;
  /** How it was written, for provenance: `-o Port=2222`. */
  text: string;
}

export interface ParsedSshArgs {
  settings: SshArgSetting[];
  warnings: string[];
}

/** POSIX shell word splitting (quotes and backslashes), as Ansible's shlex.split does. */
export function shellSplit(s: string): string[] {
  const out: string[] = [];
  // null: between words; "" is an empty word ('' or "").
  let cur: string | null = null;
  let q: "'" | '"' | null = null;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (q === "'") {
      if (c === "'") q = null;
      else cur += c;
    } else if (q === '"') {
      if (c === '"') q = null;
      else if (c === "\\" && /["\\$`]/.test(s[i + 1] ?? "")) cur = `${cur ?? ""}${s[++i] ?? ""}`;
      else cur += c;
    } else if (/\s/.test(c)) {
      if (cur !== null) out.push(cur);
      cur = null;
    } else {
      cur ??= "";
      if (c === "'" || c === '"') q = c;
      else if (c === "\\" && i + 1 < s.length) cur += s[++i];
      else cur += c;
    }
  }
  if (q) throw new Error(`unterminated ${q} quote`);
  if (cur !== null) out.push(cur);
  return out;
}

export function parseSshArgs(args: string): ParsedSshArgs {
  const settings: SshArgSetting[] = [];
  const warnings: string[] = [];
  const words = shellSplit(args);
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const flag = /^-([oJpli])(.*)$/.exec(w);
    if (!flag) {
      warnings.push(`'${w}' is not used by slicecheck`);
      continue;
    }
    const letter = flag[1]!;
    const value = flag[2] !== "" ? flag[2]! : words[++i];
    if (value === undefined) {
      warnings.push(`-${letter} has no value`);
      continue;
    }
    if (letter === "o") {
      const m = /^([A-Za-z]+)(?:\s*=\s*|\s+)(.*)$/s.exec(value);
      if (!m) {
        warnings.push(`-o ${value}: expected Key=Value`);
        continue;
      }
      const key = m[1]!.toLowerCase();
      const field = (HONOURED_SSH_OPTIONS as Record<string, Field>)[key];
      if (!field) {
        warnings.push(
          `-o ${m[1]} is not used by slicecheck (it honours UserKnownHostsFile, StrictHostKeyChecking, ProxyJump, ProxyCommand, Port, User, IdentityFile, ConnectTimeout)`,
        );
        continue;
      }
      settings.push({
        field,
        value: optionValue(key, m[2]!.trim()),
        text: `-o ${m[1]}=${m[2]!.trim()}`,
      });
    } else {
      const field = ({ J: "jump", p: "port", l: "user", i: "identity_file" } as const)[
        letter as "J" | "p" | "l" | "i"
      ];
      settings.push({
        field,
        value: optionValue(field === "jump" ? "proxyjump" : field, value),
        text: `-${letter} ${value}`,
      });
    }
  }
  return { settings, warnings };
}

function optionValue(key: string, v: string): unknown {
  switch (key) {
    case "port":
    case "connecttimeout":
      return /^\d+$/.test(v) ? Number(v) : v;
    case "proxyjump":
      return v.toLowerCase() === "none" ? [] : v.split(",");
    case "proxycommand":
      return v.toLowerCase() === "none" ? null : v;
    case "userknownhostsfile":
      // ssh takes the first file for recording keys; slicecheck reads one file.
      return shellSplit(v)[0] ?? v;
    default:
      return v;
  }
}

/** StrictHostKeyChecking (ssh_config or -o) as a slicecheck host key policy. `no` would accept
 * a changed key, which slicecheck never does: it becomes accept-new, with a warning. */
export function hostKeyPolicyOf(v: string): {
  policy: "strict" | "accept-new" | null;
  warning?: string;
} {
  switch (v.toLowerCase()) {
    case "yes":
    case "true":
    case "ask":
      return { policy: "strict" };
    case "accept-new":
      return { policy: "accept-new" };
    case "no":
    case "off":
    case "false":
      return {
        policy: "accept-new",
        warning: `StrictHostKeyChecking ${v} is read as accept-new: slicecheck records unknown host keys and still refuses changed ones`,
      };
    default:
      return { policy: null };
  }
}
