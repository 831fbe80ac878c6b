// ssh_config read the way `ssh -G` resolves it (ssh_config(5), OpenSSH readconf.c), with the
// file and line every value came from, so `slicecheck inventory` can say where a value came from:
//   - the first value obtained wins (IdentityFile accumulates), across Host and Match blocks;
//   - `Host` patterns are matched against the name as given, case-sensitively, `!` negates;
//   - `Match host|originalhost|user|localuser|all|canonical|final`; `Match exec` is never run (a
//     config file must not run commands on the controller behind our back): it does not match
//     and leaves a warning;
//   - `Include` (globs; relative paths from ~/.ssh) read where it stands; an Include inside a
//     block that does not apply contributes nothing, as in OpenSSH;
//   - `Match final` re-reads the files once with Host patterns matched against the HostName;
//   - ProxyJump and ProxyCommand exclude each other, the first one given wins;
//   - HostName expands %h; UserKnownHostsFile expands ~ and %h %p %r %n %u %d %% after the
//     whole file was read (ssh -G prints it expanded); ProxyCommand and IdentityFile stay as
//     written (ssh expands them when it uses them, and so does expandTokens below).
// We do not use the `ssh-config` package's compute(): it does not read Include files, matches
// `Host` after HostName changed it, and keeps no line numbers.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import { SlicecheckError } from "../errors.js";
import { expandTokens, localUserName, type Tokens } from "./ssh-tokens.js";

/** A value and where it was written: `file:line`. */
export interface Sourced<T> {
  value: T;
  where: string;
}

export interface SshConfigHit {
  hostName?: Sourced<string>;
  user?: Sourced<string>;
  port?: Sourced<number>;
  /** Every IdentityFile that applies, in order, unexpanded. */
  identityFiles?: Sourced<string>[];
  proxyJump?: Sourced<string[]>;
  /** As written (tokens unexpanded); null when none applies or it says `none`. */
  proxyCommand?: Sourced<string>;
  userKnownHostsFile?: Sourced<string[]>;
  strictHostKeyChecking?: Sourced<string>;
  connectTimeout?: Sourced<number>;
  warnings: string[];
}

export interface ResolveOptions {
  /** The remote user already decided elsewhere (inventory, `-l`), seen by `Match user`. */
  user?: string;
}

export type SshConfigResolver = (alias: string, opts?: ResolveOptions) => SshConfigHit;

interface ConfLine {
  file: string;
  line: number;
  keyword: string;
  args: string[];
  /** Everything after the keyword and its separator, for ProxyCommand. */
  rest: string;
  /** Included files, read when the Include line was parsed. */
  include?: ConfFile[];
}

interface ConfFile {
  file: string;
  lines: ConfLine[];
}

const MAX_DEPTH = 16; // READCONF_MAX_DEPTH

export interface LoadSshConfigOptions {
  /** The folder relative Include paths start from (default ~/.ssh). */
  sshDir?: string;
}

export function loadSshConfig(
  path: string | null,
  opts: LoadSshConfigOptions = {},
): SshConfigResolver | null {
  if (!path || !existsSync(path)) return null;
  const sshDir = opts.sshDir ?? join(homedir(), ".ssh");
  const root = readConf(path, sshDir, 0);
  return (alias, ro = {}) => resolve(root, alias, ro);
}

function confError(file: string, line: number, msg: string): SlicecheckError {
  return new SlicecheckError("INVENTORY_SCHEMA", `${file}:${line}: ${msg}`, { file, line });
}

function readConf(file: string, sshDir: string, depth: number): ConfFile {
  const text = readFileSync(file, "utf8");
  const lines: ConfLine[] = [];
  text.split("\n").forEach((raw, i) => {
    const no = i + 1;
    const s = raw.replace(/[\s\f]+$/, "").replace(/^\s+/, "");
    if (s === "" || s.startsWith("#")) return;
    const m = /^([^\s=]+)(?:\s*=\s*|\s+)(.*)$/.exec(s) ?? /^([^\s=]+)()$/.exec(s);
    if (!m) throw confError(file, no, `cannot read this line: ${JSON.stringify(s)}`);
    const keyword = m[1]!.toLowerCase();
    const rest = m[2]!;
    const args = splitArgs(rest, file, no);
    // OpenSSH refuses the whole file: `no argument after keyword "host"`.
    if ((keyword === "host" || keyword === "match") && args.length === 0)
      throw confError(
        file,
        no,
        `no argument after keyword "${keyword}" (ssh refuses this file too); give a pattern, e.g. Host gpu*`,
      );
    const entry: ConfLine = { file, line: no, keyword, args, rest };
    if (keyword === "include") {
      if (depth >= MAX_DEPTH) throw confError(file, no, `Include nested deeper than ${MAX_DEPTH}`);
      entry.include = args.flatMap((pattern) =>
        globFiles(expandHome(pattern, sshDir)).map((f) => readConf(f, sshDir, depth + 1)),
      );
    }
    lines.push(entry);
  });
  return { file, lines };
}

/** argv_split() of OpenSSH: whitespace separated, '…' and "…" quoting, `\` escapes, and a
 * token starting with `#` ends the line. */
function splitArgs(s: string, file: string, line: number): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < s.length) {
    while (i < s.length && /\s/.test(s[i]!)) i++;
    if (i >= s.length || s[i] === "#") break;
    let cur = "";
    let quote: string | null = null;
    for (; i < s.length; i++) {
      const c = s[i]!;
      if (quote) {
        if (c === "\\" && (s[i + 1] === quote || s[i + 1] === "\\")) cur += s[++i];
        else if (c === quote) quote = null;
        else cur += c;
      } else if (/\s/.test(c)) break;
      else if (c === "\\" && i + 1 < s.length) cur += s[++i];
      else if (c === '"' || c === "'") quote = c;
      else cur += c;
    }
    if (quote) throw confError(file, line, "unterminated quote");
    out.push(cur);
  }
  return out;
}

function expandHome(p: string, sshDir: string): string {
  if (p === "~") return homedir();
  if (p.startsWith("~/")) return join(homedir(), p.slice(2));
  return isAbsolute(p) ? p : join(sshDir, p);
}

/** glob(3) over `*`, `?` and `[…]` path segments, sorted; a pattern that matches nothing gives
 * nothing (OpenSSH only logs it). */
function globFiles(pattern: string): string[] {
  const parts = pattern.split("/").filter((p, i) => p !== "" || i === 0);
  let bases = [parts[0] === "" ? "/" : "."];
  for (const part of parts.slice(parts[0] === "" ? 1 : 0)) {
    const next: string[] = [];
    for (const base of bases) {
      if (!/[*?[]/.test(part)) {
        next.push(join(base, part));
        continue;
      }
      const re = globRegExp(part);
      let names: string[] = [];
      try {
        names = readdirSync(base).sort();
      } catch {
        continue;
      }
      for (const n of names)
        if (re.test(n) && !(n.startsWith(".") && !part.startsWith("."))) next.push(join(base, n));
    }
    bases = next;
  }
  return bases.filter((f) => {
    try {
      return statSync(f).isFile();
    } catch {
      return false;
    }
  });
}

function globRegExp(p: string): RegExp {
  let re = "";
  for (const c of p) {
    if (c === "*") re += ".*";
    else if (c === "?") re += ".";
    else if (c === "[" || c === "]") re += c;
    else re += c.replace(/[.+^${}()|\\-]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

/** match_pattern(): `*` and `?`, nothing else. */
export function matchPattern(s: string, pattern: string): boolean {
  const re = pattern
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replaceAll("*", ".*")
    .replaceAll("?", ".");
  return new RegExp(`^${re}$`, "s").test(s);
}

/** match_pattern_list(): comma-separated patterns, `!` negates; true only for a positive match
 * and no negated one. */
function matchList(s: string, list: string, lower: boolean): boolean {
  let got = false;
  const v = lower ? s.toLowerCase() : s;
  for (const raw of list.split(",")) {
    const neg = raw.startsWith("!");
    const pat = lower ? (neg ? raw.slice(1) : raw).toLowerCase() : neg ? raw.slice(1) : raw;
    if (matchPattern(v, pat)) {
      if (neg) return false;
      got = true;
    }
  }
  return got;
}

interface State {
  alias: string;
  finalPass: boolean;
  wantFinal: boolean;
  values: Map<string, ConfLine>;
  identityFiles: ConfLine[];
  jumpDecided: boolean;
  warnings: string[];
  presetUser: string | undefined;
  localUser: string;
}

function resolve(root: ConfFile, alias: string, ro: ResolveOptions): SshConfigHit {
  const st: State = {
    alias,
    finalPass: false,
    wantFinal: false,
    values: new Map(),
    identityFiles: [],
    jumpDecided: false,
    warnings: [],
    presetUser: ro.user,
    localUser: localUserName(),
  };
  walk(root, st, true, false);
  if (st.wantFinal) {
    st.finalPass = true;
    walk(root, st, true, false);
  }
  return hitOf(st);
}

function currentHost(st: State): string {
  const hn = st.values.get("hostname");
  return hn ? expandHostName(hn.args[0] ?? "", st.alias) : st.alias;
}

function expandHostName(v: string, alias: string): string {
  return v.replace(/%([%h])/g, (_, t: string) => (t === "h" ? alias : "%"));
}

function walk(f: ConfFile, st: State, startActive: boolean, neverMatch: boolean): void {
  let active = startActive && !neverMatch;
  for (const l of f.lines) {
    if (l.keyword === "host") {
      // In the final pass OpenSSH matches Host patterns against the (expanded) HostName.
      const name = st.finalPass ? currentHost(st) : st.alias;
      let hit = false;
      let negated = false;
      for (const p of l.args) {
        if (p.startsWith("!")) {
          if (matchPattern(name, p.slice(1))) negated = true;
        } else if (matchPattern(name, p)) hit = true;
      }
      active = !neverMatch && hit && !negated;
    } else if (l.keyword === "match") {
      active = !neverMatch && evalMatch(l, st);
    } else if (l.keyword === "include") {
      for (const inc of l.include ?? []) walk(inc, st, active, neverMatch || !active);
    } else if (active) set(l, st);
  }
}

function evalMatch(l: ConfLine, st: State): boolean {
  const a = l.args;
  if (a.length === 0)
    throw confError(l.file, l.line, "Match needs criteria (e.g. `Match host gpu*`)");
  let result = true;
  for (let i = 0; i < a.length; i++) {
    let attr = a[i]!.toLowerCase();
    const negate = attr.startsWith("!");
    if (negate) attr = attr.slice(1);
    if (attr === "all") {
      if (!negate) continue;
      result = false;
      continue;
    }
    if (attr === "canonical" || attr === "final") {
      if (attr === "final" && !negate) st.wantFinal = true;
      if (st.finalPass === negate) result = false;
      continue;
    }
    const arg = a[++i];
    if (arg === undefined) throw confError(l.file, l.line, `Match ${attr} needs an argument`);
    let ok: boolean;
    switch (attr) {
      case "host":
        ok = matchList(currentHost(st), arg, true);
        break;
      case "originalhost":
        ok = matchList(st.alias, arg, true);
        break;
      case "user":
        ok = matchList(userSoFar(st), arg, false);
        break;
      case "localuser":
        ok = matchList(st.localUser, arg, false);
        break;
      case "exec":
        st.warnings.push(
          `${l.file}:${l.line}: Match exec is never run by slicecheck; this block does not apply`,
        );
        ok = false;
        break;
      default:
        throw confError(
          l.file,
          l.line,
          `unsupported Match criterion '${attr}' (host, originalhost, user, localuser, all, canonical, final, exec)`,
        );
    }
    if (ok === negate) result = false;
  }
  return result;
}

function userSoFar(st: State): string {
  return st.presetUser ?? st.values.get("user")?.args[0] ?? st.localUser;
}

function set(l: ConfLine, st: State): void {
  const k = l.keyword;
  if (k === "identityfile") {
    // ssh's add_identity_file() drops a file it already has (the final pass reads it again).
    if (!st.identityFiles.some((x) => x.args[0] === l.args[0])) st.identityFiles.push(l);
    return;
  }
  if (k === "proxyjump") {
    if (st.jumpDecided || st.values.has("proxycommand")) return;
    st.jumpDecided = true;
    if ((l.args[0] ?? "").toLowerCase() !== "none") st.values.set(k, l);
    return;
  }
  if (k === "proxycommand") {
    if (st.values.has("proxyjump") || st.values.has(k)) return;
    st.values.set(k, l);
    return;
  }
  if (!st.values.has(k)) st.values.set(k, l);
}

function where(l: ConfLine): string {
  return `${l.file}:${l.line}`;
}

function hitOf(st: State): SshConfigHit {
  const hit: SshConfigHit = { warnings: st.warnings };
  const v = (k: string) => st.values.get(k);
  const hn = v("hostname");
  const host = currentHost(st).toLowerCase();
  if (hn) hit.hostName = { value: host, where: where(hn) };
  const user = v("user");
  if (user?.args[0] !== undefined) hit.user = { value: user.args[0], where: where(user) };
  const port = v("port");
  if (port) {
    const n = Number(port.args[0]);
    if (!Number.isInteger(n) || n < 1 || n > 65535)
      throw confError(
        port.file,
        port.line,
        `Port expects 1-65535, got ${JSON.stringify(port.args[0])}`,
      );
    hit.port = { value: n, where: where(port) };
  }
  if (st.identityFiles.length)
    hit.identityFiles = st.identityFiles.map((l) => ({ value: l.args[0] ?? "", where: where(l) }));
  const pj = v("proxyjump");
  if (pj) hit.proxyJump = { value: (pj.args[0] ?? "").split(","), where: where(pj) };
  const pc = v("proxycommand");
  if (pc && pc.rest.trim().toLowerCase() !== "none")
    hit.proxyCommand = { value: pc.rest.replace(/^[\s=]+/, ""), where: where(pc) };
  const shk = v("stricthostkeychecking");
  if (shk?.args[0])
    hit.strictHostKeyChecking = { value: shk.args[0].toLowerCase(), where: where(shk) };
  const ct = v("connecttimeout");
  if (ct?.args[0] && ct.args[0] !== "none") {
    const n = Number(ct.args[0]);
    if (!Number.isFinite(n) || n <= 0)
      throw confError(
        ct.file,
        ct.line,
        `ConnectTimeout expects seconds, got ${JSON.stringify(ct.args[0])}`,
      );
    hit.connectTimeout = { value: n, where: where(ct) };
  }
  const kh = v("userknownhostsfile");
  if (kh) {
    const tokens: Tokens = {
      h: host,
      p: String(hit.port?.value ?? 22),
      r: st.presetUser ?? hit.user?.value ?? st.localUser,
      n: st.alias,
    };
    hit.userKnownHostsFile = {
      value: kh.args.map((a) => expandTokens(a, tokens, `${where(kh)}: UserKnownHostsFile`)),
      where: where(kh),
    };
  }
  return hit;
}
