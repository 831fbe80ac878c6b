// The SSH transport: one ssh2 connection per node (through any jump hosts), reused for all of
// its commands, at most MAX_CHANNELS command channels at once, host keys checked against
// known_hosts, connect retries with backoff, keepalive, and the remote-process discipline.
import pLimit from "p-limit";
import ssh2, { type AuthenticationType, type ClientChannel, type ConnectConfig } from "ssh2";
import { SlicecheckError } from "../errors.js";
import type { JumpHost, NodeSpec } from "../inventory/types.js";
import { settledWithin } from "../util/time.js";
import { checkHostKey, type HostKeyVerdict, recordHostKey } from "./known-hosts.js";
import { ManagedExecutor } from "./managed.js";
import { type ProxyCommand, startProxyCommand } from "./proxy-command.js";
import { KEEPALIVE_COUNT_MAX, KEEPALIVE_INTERVAL_MS } from "./remote-scripts.js";
import { type ConnectError, type HandshakeProgress, mapConnectError } from "./ssh-errors.js";
import { keyConfig } from "./ssh-key.js";
import { consumeStreams } from "./streams.js";
import { NodeSupervisor } from "./supervisor.js";
import type {
  Command,
  ExecOptions,
  ExecResult,
  RawProcess,
  RawShell,
  RunProcess,
  Supervisor,
  Transport,
} from "./types.js";

const { Client } = ssh2;
type SshClient = InstanceType<typeof Client>;

/** Channels one connection carries at once (a node lock's channel included). OpenSSH's
 * MaxSessions defaults to 10: 8 leaves 2 for kill and control channels, whose opening is
 * retried when the node is full anyway (ecosystem.md: "budget at most 8"). One GPU's 7
 * instances and the lock thus fit on one connection. */
export const MAX_CHANNELS = 8;
const CONNECT_ATTEMPTS = 3;

export interface SshOptions {
  runId: string;
  /** Connect attempts (default 3) and the first backoff delay (doubles each time). */
  attempts?: number;
  backoffMs?: number;
  keepaliveMs?: number;
}

type Hop = Omit<JumpHost, "name"> & { name: string };

export class SshTransport implements Transport, RawShell {
  readonly kind = "ssh";
  private clients: SshClient[] = [];
  private connecting: Promise<void> | null = null;
  private lostError: SlicecheckError | null = null;
  private readonly limit = pLimit(MAX_CHANNELS);
  private readonly inflight = new Set<(err: SlicecheckError) => void>();
  private readonly exec_: ManagedExecutor;
  private closed = false;
  private proxy: ProxyCommand | null = null;
  /** The whole chain of hops is up. */
  private live = false;

  constructor(
    readonly node: NodeSpec,
    private readonly opts: SshOptions,
  ) {
    this.exec_ = new ManagedExecutor(this, node, opts.runId, () => this.lostError);
  }

  get runId(): string {
    return this.opts.runId;
  }

  connect(): Promise<void> {
    if (this.lostError) return Promise.reject(this.lostError);
    this.connecting ??= this.connectWithRetries();
    return this.connecting;
  }

  async exec(command: Command, opts?: ExecOptions): Promise<ExecResult> {
    await this.connect();
    return this.limit(() => this.exec_.exec(command, opts));
  }

  /** A node supervisor on one channel of this connection (falls back to a channel each). */
  async supervise(): Promise<Supervisor> {
    await this.connect();
    return new NodeSupervisor(this, this.exec_, (c, o) => this.exec(c, o)).open();
  }

  async killRun(runTag?: string): Promise<number> {
    await this.connect();
    return this.exec_.killRun(runTag);
  }

  async listRun(runTag: string): Promise<RunProcess[]> {
    await this.connect();
    return this.exec_.listRun(runTag);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.connecting && !this.lostError) {
      await this.connecting.catch(() => {});
    }
    for (const c of [...this.clients].reverse()) c.end();
    this.clients = [];
    this.proxy?.stop();
  }

  /** RawShell: opens one exec channel on the target connection. */
  start(commandLine: string): Promise<RawProcess> {
    const client = this.clients[this.clients.length - 1];
    if (!client || this.lostError) {
      return Promise.reject(this.lostError ?? this.err("CONNECTION_LOST", "not connected"));
    }
    return this.openChannel(client, commandLine, 0);
  }

  private openChannel(
    client: SshClient,
    commandLine: string,
    attempt: number,
  ): Promise<RawProcess> {
    return new Promise((resolve, reject) => {
      client.exec(commandLine, (err, ch) => {
        if (err) {
          // sshd refuses sessions beyond MaxSessions, and keeps closed ones a while (seconds on
          // a loaded node): retry for about 9 s before calling the channel lost, since the
          // caller's fallback (a kill's new connection) costs the node a second login.
          if (/open failed/i.test(err.message) && attempt < 8) {
            setTimeout(
              () => this.openChannel(client, commandLine, attempt + 1).then(resolve, reject),
              Math.min(100 * 2 ** attempt, 2000),
            );
            return;
          }
          reject(
            this.lostError ??
              this.err("CHANNEL", `could not open a command channel: ${err.message}`),
          );
          return;
        }
        resolve(this.wrapChannel(ch));
      });
    });
  }

  private wrapChannel(ch: ClientChannel): RawProcess {
    const done = new Promise<{ code: number | null; signal: string | null }>((resolve, reject) => {
      this.inflight.add(reject);
      // A channel's stream errors (a write after the peer closed, a protocol error) would
      // otherwise be unhandled 'error' events that end the controller.
      const onError = (e: Error) => {
        this.inflight.delete(reject);
        reject(this.lostError ?? this.err("CHANNEL", `command channel failed: ${e.message}`));
      };
      ch.on("error", onError);
      ch.stderr.on("error", onError);
      ch.on("close", (code: number | null | undefined, signal: string | null | undefined) => {
        this.inflight.delete(reject);
        if (this.lostError && code == null && signal == null) reject(this.lostError);
        else resolve({ code: code ?? null, signal: signal ?? null });
      });
    });
    // Its rejection (a lost connection) is its consumer's to read, whenever that consumer gets
    // to it: a process whose `done` nobody awaits yet must not end the controller as an
    // unhandled rejection (CI saw one crash a test worker with CONNECTION_LOST).
    done.catch(() => {});
    return {
      ...consumeStreams(ch, ch.stderr),
      write: (d) => {
        if (ch.writable) ch.write(d);
      },
      end: () => {
        if (ch.writable) ch.end();
      },
      done,
    };
  }

  private err(
    code: "CONNECTION_LOST" | "CHANNEL" | "CONNECT" | "AUTH",
    msg: string,
  ): SlicecheckError {
    return new SlicecheckError(
      code,
      `${this.node.name} (${this.node.user}@${this.node.host}:${this.node.port}): ${msg}`,
      {
        node: this.node.name,
      },
    );
  }

  private async connectWithRetries(): Promise<void> {
    const attempts = this.opts.attempts ?? CONNECT_ATTEMPTS;
    let backoff = this.opts.backoffMs ?? 500;
    for (let i = 1; ; i++) {
      try {
        await this.connectChain();
        this.live = true;
        return;
      } catch (err) {
        // Taken out of the chain first, so that their closing is not read as a lost connection.
        const failed = this.clients;
        this.clients = [];
        for (const c of failed) c.end();
        this.proxy?.stop();
        const retryable =
          err instanceof SlicecheckError &&
          (err.code === "CONNECT" || err.code === "HANDSHAKE") &&
          err.context.retryable === true;
        if (!retryable || i >= attempts) throw err;
        await new Promise((r) => setTimeout(r, backoff));
        backoff *= 2;
      }
    }
  }

  private async connectChain(): Promise<void> {
    const hops: Hop[] = [...this.node.jump, { ...this.node }];
    let sock: NodeJS.ReadableStream | undefined;
    const first = hops[0]!;
    if (first.proxyCommand) {
      this.proxy = await startProxyCommand(first.proxyCommand);
      sock = this.proxy.sock;
    }
    for (let i = 0; i < hops.length; i++) {
      const hop = hops[i]!;
      const client = await this.connectHop(hop, sock, i === hops.length - 1).catch(
        async (e: unknown) => {
          throw i === 0 && this.proxy ? await this.proxyFailed(e) : e;
        },
      );
      if (i === 0 && this.proxy) {
        const proxy = this.proxy;
        client.once("close", () => proxy.stop());
      }
      this.clients.push(client);
      const next = hops[i + 1];
      if (next) sock = await forwardOut(client, next, this.node.name);
    }
  }

  private connectHop(
    hop: Hop,
    sock: NodeJS.ReadableStream | undefined,
    isTarget: boolean,
  ): Promise<SshClient> {
    const via = isTarget ? "" : ` (jump host ${hop.name})`;
    const where = `${this.node.name}${via} ${hop.user}@${hop.host}:${hop.port}`;
    return new Promise((resolve, reject) => {
      const client = new Client();
      const at: HopAttempt = {
        seen: { tcp: sock !== undefined, ident: false, hostKey: false, kex: false },
        verdict: null,
        presented: null,
        settled: false,
      };
      // Built before any handler: a key file that cannot be read rejects with its own error.
      const cfg = this.hopConfig(hop, sock, where, at);
      const fail = (e: ConnectError) => {
        if (at.settled) return;
        at.settled = true;
        client.end();
        reject(
          mapConnectError(e, {
            where,
            hop,
            verdict: at.verdict,
            key: at.presented,
            node: this.node.name,
            seen: at.seen,
            timeoutS: this.node.connectTimeoutS,
          }),
        );
      };
      this.watchHop(client, at, fail, `${hop.host}:${hop.port}${via}`);
      client.once("ready", () => {
        if (at.settled) return;
        at.settled = true;
        resolve(client);
      });
      try {
        client.connect(cfg);
        // Nagle's algorithm off (TCP_NODELAY), as every request of the controller's is small and
        // waits for its answer: with it on, a packet sent while the last was not yet acknowledged
        // waited for sshd's delayed ACK, 40 ms. The handshake's SERVICE_REQUEST did so on every
        // connection (kex to ready 64-66 ms on one idle simulated node, 24-25 ms without), and
        // so could any request sent right after another. A socket of a jump host's channel or
        // of a ProxyCommand has none to set (ssh2 then does nothing): the hop's own TCP does.
        client.setNoDelay(true);
      } catch (e) {
        // ssh2 parses the private key synchronously: a wrong passphrase throws here.
        fail(e as Error);
      }
    });
  }

  /** ssh2's settings for one hop; its debug and host key callbacks record in `at` how far the
   * handshake got and what key was presented, for the error a failure is mapped to. */
  private hopConfig(
    hop: Hop,
    sock: NodeJS.ReadableStream | undefined,
    where: string,
    at: HopAttempt,
  ): ConnectConfig {
    const cfg: ConnectConfig = {
      host: hop.host,
      port: hop.port,
      username: hop.user,
      readyTimeout: this.node.connectTimeoutS * 1000,
      keepaliveInterval: this.opts.keepaliveMs ?? KEEPALIVE_INTERVAL_MS,
      keepaliveCountMax: KEEPALIVE_COUNT_MAX,
      agent: process.env.SSH_AUTH_SOCK,
      // Only to learn how far the handshake got (the server's identification line has no
      // event of its own); once the client is ready the traces are dropped unread.
      debug: (msg: string) => {
        if (!at.settled && !at.seen.ident && msg.startsWith("Remote ident")) at.seen.ident = true;
      },
      hostVerifier: (key: Buffer) => verifyHostKey(hop, key, at),
      ...keyConfig(hop, where),
    };
    // ssh2 first asks for "none", as OpenSSH's client does, only to learn which methods the
    // server takes: a round trip, and a request for sshd to handle, on every connection (7 ms
    // of a 20-ms login to an idle simulated node). The key, then the agent, is what it would
    // try next, in that order; without either there is nothing to skip.
    const methods: AuthenticationType[] = [];
    if (cfg.privateKey) methods.push("publickey");
    if (cfg.agent) methods.push("agent");
    if (methods.length > 0) cfg.authHandler = methods;
    if (sock) cfg.sock = sock as ConnectConfig["sock"];
    return cfg;
  }

  /** A hop client's events, for its whole life: while its attempt is open they say how far it
   * got, or fail it; once settled, an error or close of a live chain's client is the loss of
   * the connection. ssh2 can emit several errors for one failure (a timeout, then "Connection
   * lost before handshake" when it destroys the socket), and more at any later time: every
   * one is handled here, or one bad node would crash the controller. */
  private watchHop(
    client: SshClient,
    at: HopAttempt,
    fail: (e: ConnectError) => void,
    peer: string,
  ): void {
    client.on("connect", () => {
      at.seen.tcp = true;
    });
    client.on("handshake", () => {
      at.seen.kex = true;
    });
    client.on("error", (e: ConnectError) => {
      if (!at.settled) fail(e);
      else if (this.isLive(client)) this.onLost(e.message);
    });
    // A server that closes after its identification closes without any error event.
    client.on("close", () => {
      if (!at.settled)
        fail(Object.assign(new Error("connection closed by the server"), { level: "closed" }));
      else if (this.isLive(client)) this.onLost(`connection closed by ${peer}`);
    });
  }

  /** A ProxyCommand that exited before the handshake says why on its stderr. */
  private async proxyFailed(e: unknown): Promise<unknown> {
    const p = this.proxy!;
    // ssh2 may see the pipe close before the exit status arrives.
    await settledWithin(p.exited, 1000);
    const code = p.exitCode();
    if (code === null && !p.stderr()) return e;
    return new SlicecheckError(
      "CONNECT",
      `${this.node.name}: ProxyCommand \`${p.command}\` ${code === null ? "failed" : `exited with ${code}`}${p.stderr() ? `: ${p.stderr()}` : ""}. Check the ProxyCommand with \`ssh -G\` and run it by hand.`,
      { node: this.node.name, retryable: code === null, cause: e },
    );
  }

  /** A client of the established chain: its death is the connection's. A hop of a chain that
   * is still being built fails that attempt instead (its forwarded socket closes). */
  private isLive(client: SshClient): boolean {
    return this.live && this.clients.includes(client);
  }

  private onLost(reason: string): void {
    if (this.closed || this.lostError) return;
    this.lostError = this.err(
      "CONNECTION_LOST",
      `connection lost (${reason}); its commands did not finish. The node's watchdog kills this run's processes within 30 s; check with \`slicecheck cleanup --run ${this.runId}\``,
    );
    for (const reject of this.inflight) reject(this.lostError);
    this.inflight.clear();
  }
}

/** One hop's connection attempt: how far it got, the host key it was shown and known_hosts'
 * verdict on it (what mapConnectError explains a failure with), and whether it is decided. */
interface HopAttempt {
  seen: HandshakeProgress;
  verdict: HostKeyVerdict | null;
  presented: Buffer | null;
  /** Resolved or rejected: later events are the established connection's, not the attempt's. */
  settled: boolean;
}

/** known_hosts' verdict on a presented host key, kept in `at`; under accept-new an unknown key
 * is recorded and accepted, a changed or revoked one never. */
function verifyHostKey(hop: Hop, key: Buffer, at: HopAttempt): boolean {
  at.seen.hostKey = true;
  at.presented = key;
  // Kept before recording: a key that cannot be recorded still fails as unknown.
  at.verdict = checkHostKey(hop.knownHosts, hop.host, hop.port, key);
  if (at.verdict.status === "unknown" && hop.hostKeyPolicy === "accept-new") {
    recordHostKey(hop.knownHosts, hop.host, hop.port, key);
    at.verdict = { status: "known" };
  }
  return at.verdict.status === "known";
}

function forwardOut(client: SshClient, next: Hop, node: string): Promise<NodeJS.ReadableStream> {
  return new Promise((resolve, reject) => {
    client.forwardOut("127.0.0.1", 0, next.host, next.port, (err, stream) => {
      if (err) {
        reject(
          new SlicecheckError(
            "CONNECT",
            `${node}: the jump host could not reach ${next.host}:${next.port}: ${err.message} (is AllowTcpForwarding on?)`,
            { node, retryable: false },
          ),
        );
      } else resolve(stream);
    });
  });
}
