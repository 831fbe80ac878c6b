// What an ssh2 connection failure means, as one SlicecheckError with a stable code per phase:
// TCP (CONNECT), the server's identification and the key exchange (HANDSHAKE), the host key
// (HOST_KEY_*), authentication (AUTH). The message names the node and says what to do.
import { SlicecheckError } from "../errors.js";
import type { JumpHost } from "../inventory/types.js";
import { fingerprint, type HostKeyVerdict, hostKeyName, keyTypeOf } from "./known-hosts.js";

/** How far a connection attempt got, learnt from ssh2's events. */
export interface HandshakeProgress {
  /** The TCP connection was established (always true over a jump host's forwarded socket). */
  tcp: boolean;
  /** The server sent its `SSH-2.0-…` identification line. */
  ident: boolean;
  /** The key exchange reached the host key check. */
  hostKey: boolean;
  /** The key exchange completed (authentication had started). */
  kex: boolean;
}

export interface ConnectFailure {
  where: string;
  hop: Omit<JumpHost, "name"> & { name: string };
  verdict: HostKeyVerdict | null;
  key: Buffer | null;
  node: string;
  seen: HandshakeProgress;
  timeoutS: number;
}

/** Host-key advice, the way OpenSSH gives it: verify out of band, then replace the entry. */
export function replaceKeyAdvice(host: string, port: number, knownHosts: string): string {
  const name = hostKeyName(host, port);
  return `Verify the node's key out of band (on its console: ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub, and the others; compare with ssh-keyscan -p ${port} ${host} | ssh-keygen -lf -), then replace the entry: ssh-keygen -R '${name}' -f ${knownHosts} && ssh-keyscan -p ${port} ${host} >> ${knownHosts}`;
}

/** An error as ssh2 raises it: `level` says where (client-timeout, client-socket, protocol). */
export type ConnectError = Error & { level?: string; code?: string };

/** The error's context: the node and the phase it failed in, for scripts and retries. */
function ctx(f: ConnectFailure, phase: string, extra: Record<string, unknown> = {}) {
  return { node: f.node, phase, ...extra };
}

/** A connection failure as one SlicecheckError, decided in the order that names the cause and
 * not its symptom: a rejected host key first (whatever error ssh2 then raised, the key is the
 * cause), then the error's own words (credentials), then how far the handshake got. */
export function mapConnectError(e: ConnectError, f: ConnectFailure): SlicecheckError {
  return hostKeyError(f) ?? credentialError(e, f) ?? transportError(e, f);
}

/** The host key was not accepted: unknown, changed or revoked. Null where it was (or where the
 * handshake never got to it). */
function hostKeyError(f: ConnectFailure): SlicecheckError | null {
  const { where, hop } = f;
  const fp = f.key ? fingerprint(f.key) : "?";
  const v = f.verdict;
  if (v?.status === "unknown")
    return new SlicecheckError(
      "HOST_KEY_UNKNOWN",
      `${where}: host key ${fp} is not in ${hop.knownHosts}. Verify the fingerprint out of band, then add it (ssh-keyscan -p ${hop.port} ${hop.host} >> ${hop.knownHosts}) or set host_key_policy: accept-new.`,
      ctx(f, "host-key", { fingerprint: fp }),
    );
  if (v?.status === "changed") {
    const presented = f.key ? keyTypeOf(f.key) : "?";
    const kind =
      v.knownType === presented
        ? `a different ${presented} key (${fp}) than`
        : `an ${presented} key (${fp}), but only an ${v.knownType} key is recorded in`;
    return new SlicecheckError(
      "HOST_KEY_CHANGED",
      `${where}: HOST KEY CHANGED (OpenSSH: REMOTE HOST IDENTIFICATION HAS CHANGED): the node presented ${kind} ${hop.knownHosts} line ${v.line}; refused whatever host_key_policy says. This may be an attack; if the node was reinstalled or its keys were replaced: ${replaceKeyAdvice(hop.host, hop.port, hop.knownHosts)}.`,
      ctx(f, "host-key", {
        fingerprint: fp,
        line: v.line,
        knownType: v.knownType,
        presentedType: presented,
      }),
    );
  }
  if (v?.status === "revoked")
    return new SlicecheckError(
      "HOST_KEY_REVOKED",
      `${where}: host key ${fp} is marked @revoked in ${hop.knownHosts} line ${v.line}.`,
      ctx(f, "host-key", { fingerprint: fp }),
    );
  return null;
}

/** The server refused every credential, or the private key could not be decrypted: known from
 * ssh2's words only. Null otherwise. */
function credentialError(e: ConnectError, f: ConnectFailure): SlicecheckError | null {
  const { where, hop } = f;
  if (/authentication methods failed/i.test(e.message))
    return new SlicecheckError(
      "AUTH",
      `${where}: authentication failed (tried ${hop.identityFile ?? "default keys"}${process.env.SSH_AUTH_SOCK ? " and ssh-agent" : ""}). Check user and identity_file.`,
      ctx(f, "auth"),
    );
  if (/passphrase|encrypted/i.test(e.message))
    return new SlicecheckError(
      "KEY_FILE",
      `${where}: cannot decrypt the private key: ${e.message}`,
      ctx(f, "key-file"),
    );
  return null;
}

/** The connection failed below the credentials: by how far it got (TCP, authentication begun,
 * the server's identification, the key exchange), and whether it timed out or was closed. */
function transportError(e: ConnectError, f: ConnectFailure): SlicecheckError {
  const timedOut = e.level === "client-timeout";
  if (!f.seen.tcp) return tcpError(e, f, timedOut);
  if (f.seen.kex && !timedOut)
    return new SlicecheckError(
      "CONNECTION_LOST",
      `${f.where}: the connection failed during authentication: ${e.message}. Check the node's sshd log.`,
      ctx(f, "auth", { retryable: false }),
    );
  return handshakeError(e, f, timedOut);
}

/** No TCP connection: CONNECT, with a hint for a refusal or a timeout. */
function tcpError(e: ConnectError, f: ConnectFailure, timedOut: boolean): SlicecheckError {
  // Name resolution failures will not heal on a retry; a refused or reset connection might.
  const retryable = e.code !== "ENOTFOUND" && e.code !== "EAI_AGAIN" && !timedOut;
  const hint =
    e.code === "ECONNREFUSED"
      ? ": nothing listens there. Is sshd running on the node, and is the port right?"
      : timedOut
        ? `: no TCP connection within ${f.timeoutS} s. Is the node up and the address right?`
        : "";
  return new SlicecheckError(
    "CONNECT",
    `${f.where}: cannot connect: ${e.code ?? e.message}${e.code ? ` (${e.message})` : ""}${hint}`,
    ctx(f, "tcp", { retryable, cause: e.code }),
  );
}

/** TCP up but no SSH session: HANDSHAKE, in the identification or the key exchange phase. */
function handshakeError(e: ConnectError, f: ConnectFailure, timedOut: boolean): SlicecheckError {
  const { seen } = f;
  const phase = seen.ident ? "key-exchange" : "identification";
  const what = timedOut
    ? seen.ident
      ? `the SSH key exchange did not complete within ${f.timeoutS} s`
      : `the server accepted the TCP connection but sent no SSH identification within ${f.timeoutS} s (a hung sshd, or not an SSH server on that port)`
    : seen.ident
      ? `the server closed the connection during the key exchange (${e.message})`
      : `the server closed the connection before its SSH identification (${e.message}): sshd refusing connections (MaxStartups), a TCP wrapper, or not an SSH server`;
  return new SlicecheckError(
    "HANDSHAKE",
    `${f.where}: ${what}. Check the node's sshd (systemctl status ssh, its log)${timedOut ? ", or raise connect_timeout in the inventory for a slow link" : ""}.`,
    // A closed connection may be a busy sshd and worth another try; a stall already cost the
    // whole connect timeout and a second wait would only double it.
    ctx(f, phase, { retryable: !timedOut }),
  );
}
