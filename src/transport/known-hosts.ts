// known_hosts checking (sshd(8) SSH_KNOWN_HOSTS FILE FORMAT). No maintained npm package parses
// it, and ssh2 accepts every host key unless we check: plain and hashed (`|1|salt|hmac`)
// names, comma lists, `[host]:port`, negation and `@revoked` markers.
import { createHash, createHmac, randomBytes } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";

export type HostKeyVerdict =
  | { status: "known" }
  | { status: "unknown" }
  /** The name is known with other keys only: `knownType` is the type recorded on `line`. */
  | { status: "changed"; line: number; knownType: string }
  | { status: "revoked"; line: number };

interface Entry {
  line: number;
  marker: "@revoked" | "@cert-authority" | null;
  patterns: string[];
  keyType: string;
  key: Buffer;
}

/** The name OpenSSH looks up (put_host_port): `host` on port 22, `[host]:port` elsewhere, the
 * host in lower case as ssh forces it. An entry without a port is for port 22 only: ssh does not
 * fall back to it for another port (ssh-keygen -F agrees; test/transport/known-hosts.test.ts). */
export function hostKeyName(host: string, port: number): string {
  const h = host.toLowerCase();
  return port === 22 ? h : `[${h}]:${port}`;
}

export function fingerprint(key: Buffer): string {
  return `SHA256:${createHash("sha256").update(key).digest("base64").replace(/=+$/, "")}`;
}

/** The key type is the first length-prefixed string of the SSH wire-format key blob. */
export function keyTypeOf(key: Buffer): string {
  if (key.length < 4) return "unknown";
  const len = key.readUInt32BE(0);
  return key.subarray(4, 4 + len).toString("latin1");
}

function parse(text: string): Entry[] {
  const out: Entry[] = [];
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith("#")) return;
    const f = line.split(/\s+/);
    let marker: Entry["marker"] = null;
    if (f[0] === "@revoked" || f[0] === "@cert-authority") marker = f.shift() as Entry["marker"];
    const [names, keyType, b64] = f;
    if (!names || !keyType || !b64) return;
    out.push({
      line: i + 1,
      marker,
      patterns: names.split(","),
      keyType,
      key: Buffer.from(b64, "base64"),
    });
  });
  return out;
}

/**
 * A file's entries, parsed again only when its text changed: `exec` on 256 nodes checks 256
 * host keys against one known_hosts of 256 lines, and parsing it (and compiling its patterns)
 * per connection was 65,536 regular expressions built (issue 25's profile). Keyed by the text
 * itself, not the file's mtime, so a rewrite within the clock's tick is never missed.
 */
const parsedFiles = new Map<string, { text: string; entries: Entry[] }>();

function entriesOf(file: string): Entry[] {
  const text = readFileSync(file, "utf8");
  const hit = parsedFiles.get(file);
  if (hit?.text === text) return hit.entries;
  const entries = parse(text);
  parsedFiles.set(file, { text, entries });
  return entries;
}

/** Plain patterns compiled once each (see entriesOf). */
const compiled = new Map<string, RegExp>();

function patternMatches(pattern: string, name: string): boolean {
  if (pattern.startsWith("|1|")) {
    const [, , salt, hash] = pattern.split("|");
    if (!salt || !hash) return false;
    const mac = createHmac("sha1", Buffer.from(salt, "base64")).update(name).digest("base64");
    return mac === hash;
  }
  let re = compiled.get(pattern);
  if (!re) {
    re = new RegExp(
      `^${pattern
        .replace(/[.+^${}()|\\[\]]/g, "\\$&")
        .replaceAll("*", ".*")
        .replaceAll("?", ".")}$`,
      "i", // match_hostname() compares plain patterns without case; hashed ones hash the name
    );
    compiled.set(pattern, re);
  }
  return re.test(name);
}

function entryMatches(e: Entry, name: string): boolean {
  let hit = false;
  for (const p of e.patterns) {
    if (p.startsWith("!")) {
      if (patternMatches(p.slice(1), name)) return false;
    } else if (patternMatches(p, name)) hit = true;
  }
  return hit;
}

export function checkHostKey(
  file: string,
  host: string,
  port: number,
  key: Buffer,
): HostKeyVerdict {
  if (!existsSync(file)) return { status: "unknown" };
  const entries = entriesOf(file);
  const name = hostKeyName(host, port);
  const type = keyTypeOf(key);
  for (const e of entries) {
    if (e.marker === "@revoked" && e.key.equals(key)) return { status: "revoked", line: e.line };
  }
  // As OpenSSH judges it: a host that is known with any key, of any type, and presents a key
  // none of its entries hold has changed its identity. A key of another type is no exception:
  // a server made to offer only a type we never recorded is exactly what an attacker would do.
  let sameType: Entry | null = null;
  let otherType: Entry | null = null;
  for (const e of entries) {
    if (e.marker !== null || !entryMatches(e, name)) continue;
    if (e.key.equals(key)) return { status: "known" };
    if (e.keyType === type) sameType ??= e;
    else otherType ??= e;
  }
  const changed = sameType ?? otherType;
  return changed === null
    ? { status: "unknown" }
    : { status: "changed", line: changed.line, knownType: changed.keyType };
}

/** Appends a key the way `StrictHostKeyChecking accept-new` does. */
export function recordHostKey(
  file: string,
  host: string,
  port: number,
  key: Buffer,
  hashed = false,
): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const name = hostKeyName(host, port);
  const label = hashed ? hashName(name) : name;
  appendFileSync(file, `${label} ${keyTypeOf(key)} ${key.toString("base64")}\n`, { mode: 0o600 });
}

export function hashName(name: string, salt = randomBytes(20)): string {
  return `|1|${salt.toString("base64")}|${createHmac("sha1", salt).update(name).digest("base64")}`;
}
