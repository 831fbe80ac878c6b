// ssh's percent_expand() for ssh_config values (ProxyCommand, IdentityFile, UserKnownHostsFile),
// and the local user name the `%u` token and ssh's default User stand for.
import { homedir, userInfo } from "node:os";
import { join } from "node:path";
import { SlicecheckError } from "../errors.js";

/** The controller's own user name (ssh's default User). */
export function localUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? "root";
  }
}

export interface Tokens {
  /** the host name to connect to */
  h: string;
  /** the port */
  p: string;
  /** the remote user */
  r: string;
  /** the name as given (before HostName) */
  n: string;
}

/** ssh's percent_expand() for the tokens slicecheck knows, plus `~/` at the start. An unknown
 * token is an error, as in ssh. */
export function expandTokens(s: string, t: Tokens, what: string): string {
  const home = homedir();
  const all: Record<string, string> = {
    ...t,
    u: localUserName(),
    d: home,
    l: "",
    "%": "%",
  };
  const out = s.replace(/%(.)/g, (m, c: string) => {
    const r = c === "l" ? undefined : all[c];
    if (r === undefined)
      throw new SlicecheckError(
        "INVENTORY_SCHEMA",
        `${what}: unknown token '${m}' (slicecheck expands %h %p %r %n %u %d %%)`,
        { token: m },
      );
    return r;
  });
  if (out === "~") return home;
  return out.startsWith("~/") ? join(home, out.slice(2)) : out;
}
