// mapConnectError on hand-made failures: each phase of a connection (host key, authentication,
// key file, TCP, identification, key exchange) gives its own stable code, phase and retry
// advice. The end-to-end tests (ssh.test.ts, bad-nodes.test.ts) reach only some of these.
import assert from "node:assert/strict";
import { type ConnectFailure, mapConnectError } from "../../src/transport/ssh-errors.js";

/** An SSH wire-format key blob of `type` (what keyTypeOf reads), with a dummy body. */
function key(type: string): Buffer {
  const t = Buffer.from(type, "latin1");
  const b = Buffer.alloc(4 + t.length + 8, 7);
  b.writeUInt32BE(t.length, 0);
  t.copy(b, 4);
  return b;
}

const hop = {
  name: "n1",
  host: "10.0.0.5",
  port: 2222,
  user: "ops",
  knownHosts: "/kh",
} as ConnectFailure["hop"];

function failure(more: Partial<ConnectFailure> = {}): ConnectFailure {
  return {
    where: "n1 ops@10.0.0.5:2222",
    hop,
    verdict: null,
    key: null,
    node: "n1",
    seen: { tcp: true, ident: true, hostKey: true, kex: false },
    timeoutS: 7,
    ...more,
  };
}

const err = (message: string, more: { level?: string; code?: string } = {}) =>
  Object.assign(new Error(message), more);
const closed = err("connection closed by the server", { level: "closed" });
const timeout = err("Timed out while waiting for handshake", { level: "client-timeout" });

describe("mapConnectError (pure)", () => {
  const agent = process.env.SSH_AUTH_SOCK;
  afterEach(() => {
    if (agent === undefined) delete process.env.SSH_AUTH_SOCK;
    else process.env.SSH_AUTH_SOCK = agent;
  });

  it("a host key verdict decides before the error's words: unknown, changed, revoked", () => {
    const ed = key("ssh-ed25519");
    const unknown = mapConnectError(closed, failure({ verdict: { status: "unknown" }, key: ed }));
    assert.equal(unknown.code, "HOST_KEY_UNKNOWN");
    assert.match(unknown.message, /host key SHA256:\S+ is not in \/kh\. .*ssh-keyscan -p 2222/);
    assert.equal(unknown.context.phase, "host-key");
    const same = mapConnectError(
      closed,
      failure({ verdict: { status: "changed", line: 3, knownType: "ssh-ed25519" }, key: ed }),
    );
    assert.equal(same.code, "HOST_KEY_CHANGED");
    assert.match(same.message, /presented a different ssh-ed25519 key \(SHA256:\S+\) than \/kh/);
    assert.match(same.message, /ssh-keygen -R '\[10\.0\.0\.5\]:2222' -f \/kh/);
    assert.equal(same.context.presentedType, "ssh-ed25519");
    const other = mapConnectError(
      closed,
      failure({ verdict: { status: "changed", line: 3, knownType: "ssh-rsa" }, key: ed }),
    );
    assert.match(
      other.message,
      /an ssh-ed25519 key .*only an ssh-rsa key is recorded in \/kh line 3/,
    );
    const revoked = mapConnectError(
      err("All configured authentication methods failed"),
      failure({ verdict: { status: "revoked", line: 4 }, key: null }),
    );
    assert.equal(revoked.code, "HOST_KEY_REVOKED");
    assert.match(revoked.message, /host key \? is marked @revoked in \/kh line 4/);
  });

  it("authentication and key file failures name what was tried", () => {
    delete process.env.SSH_AUTH_SOCK;
    const auth = mapConnectError(err("All configured authentication methods failed"), failure());
    assert.equal(auth.code, "AUTH");
    assert.match(auth.message, /tried default keys\)/);
    process.env.SSH_AUTH_SOCK = "/agent.sock";
    const withAgent = mapConnectError(
      err("All configured authentication methods failed"),
      failure({ hop: { ...hop, identityFile: "/id" } }),
    );
    assert.match(withAgent.message, /tried \/id and ssh-agent\)/);
    const keyFile = mapConnectError(err("Encrypted private OpenSSH key detected"), failure());
    assert.equal(keyFile.code, "KEY_FILE");
    assert.equal(keyFile.context.phase, "key-file");
  });

  it("before TCP: CONNECT, retried unless the name does not resolve or the wait timed out", () => {
    const noTcp = { seen: { tcp: false, ident: false, hostKey: false, kex: false } };
    const refused = mapConnectError(
      err("connect ECONNREFUSED 10.0.0.5:2222", { code: "ECONNREFUSED" }),
      failure(noTcp),
    );
    assert.equal(refused.code, "CONNECT");
    assert.match(refused.message, /cannot connect: ECONNREFUSED \(connect .*\): nothing listens/);
    assert.deepEqual([refused.context.phase, refused.context.retryable], ["tcp", true]);
    const dns = mapConnectError(err("getaddrinfo", { code: "ENOTFOUND" }), failure(noTcp));
    assert.equal(dns.context.retryable, false);
    assert.equal(dns.context.cause, "ENOTFOUND");
    const again = mapConnectError(err("getaddrinfo", { code: "EAI_AGAIN" }), failure(noTcp));
    assert.equal(again.context.retryable, false);
    const slow = mapConnectError(timeout, failure(noTcp));
    assert.match(slow.message, /cannot connect: Timed out .*: no TCP connection within 7 s/);
    assert.equal(slow.context.retryable, false);
  });

  it("after the key exchange: CONNECTION_LOST in authentication, never retried", () => {
    const kex = { seen: { tcp: true, ident: true, hostKey: true, kex: true } };
    const lost = mapConnectError(closed, failure(kex));
    assert.equal(lost.code, "CONNECTION_LOST");
    assert.deepEqual([lost.context.phase, lost.context.retryable], ["auth", false]);
    // A timeout after the key exchange is still a handshake that did not complete.
    assert.equal(mapConnectError(timeout, failure(kex)).code, "HANDSHAKE");
  });

  it("in the handshake: HANDSHAKE by phase; a closed connection is retried, a stall is not", () => {
    const noIdent = { seen: { tcp: true, ident: false, hostKey: false, kex: false } };
    const hung = mapConnectError(timeout, failure(noIdent));
    assert.equal(hung.code, "HANDSHAKE");
    assert.deepEqual([hung.context.phase, hung.context.retryable], ["identification", false]);
    assert.match(hung.message, /sent no SSH identification within 7 s .*raise connect_timeout/);
    const refusedIdent = mapConnectError(closed, failure(noIdent));
    assert.deepEqual(
      [refusedIdent.context.phase, refusedIdent.context.retryable],
      ["identification", true],
    );
    assert.match(refusedIdent.message, /before its SSH identification .*MaxStartups/);
    assert.doesNotMatch(refusedIdent.message, /connect_timeout/);
    const kexStall = mapConnectError(timeout, failure());
    assert.deepEqual([kexStall.context.phase, kexStall.context.retryable], ["key-exchange", false]);
    assert.match(kexStall.message, /key exchange did not complete within 7 s/);
    const kexClosed = mapConnectError(closed, failure());
    assert.match(kexClosed.message, /closed the connection during the key exchange \(connection/);
    assert.equal(kexClosed.context.retryable, true);
  });
});
