// The SSH transport: one ssh2 connection per node (through any jump hosts), reused for all of
// its commands, at most MAX_CHANNELS command channels at once, host keys checked against
// known_hosts, connect retries with backoff, keepalive, and the remote-process discipline.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import pLimit from "p-limit";
import ssh2, { type ClientChannel, type ConnectConfig } from "ssh2";
import { SlicecheckError } from "../errors.js";
import type { JumpHost, NodeSpec } from "../inventory/types.js";
import { checkHostKey, fingerprint, type HostKeyVerdict, recordHostKey } from "./known-hosts.js";
import { ManagedExecutor } from "./managed.js";
import { type ProxyCommand, startProxyCommand } from "./proxy-command.js";
import { consumeStreams } from "./streams.js";
import type {
  Command,
  ExecOptions,
  ExecResult,
  RawProcess,
  RawShell,
  RunProcess,
  Transport,
} from "./types.js";

const { Client } = ssh2;
type SshClient = InstanceType<typeof Client>;

/** OpenSSH's MaxSessions defaults to 10; the watchdog and kill channels live outside this budget. */
export const MAX_CHANNELS = 6;
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
    this.connecting ??= this.connectWithRetries().then(() => {
      void this.exec_.startWatchdog();
    });
    return this.connecting;
  }

  async exec(command: Command, opts?: ExecOptions): Promise<ExecResult> {
    await this.connect();
    return this.limit(() => this.exec_.exec(command, opts));
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
      await this.exec_.stopWatchdog();
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
          // sshd refuses sessions beyond MaxSessions, and briefly keeps closed ones; retry.
          if (/open failed/i.test(err.message) && attempt < 5) {
            setTimeout(
              () => this.openChannel(client, commandLine, attempt + 1).then(resolve, reject),
              100 * 2 ** attempt,
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
      ch.on("close", (code: number | null | undefined, signal: string | null | undefined) => {
        this.inflight.delete(reject);
        if (this.lostError && code == null && signal == null) reject(this.lostError);
        else resolve({ code: code ?? null, signal: signal ?? null });
      });
    });
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
        return;
      } catch (err) {
        for (const c of this.clients) c.end();
        this.clients = [];
        this.proxy?.stop();
        const retryable =
          err instanceof SlicecheckError &&
          err.code === "CONNECT" &&
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
      this.proxy = startProxyCommand(first.proxyCommand);
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
      let verdict: HostKeyVerdict | null = null;
      let presented: Buffer | null = null;
      const cfg: ConnectConfig = {
        host: hop.host,
        port: hop.port,
        username: hop.user,
        readyTimeout: this.node.connectTimeoutS * 1000,
        keepaliveInterval: this.opts.keepaliveMs ?? 10_000,
        keepaliveCountMax: 3,
        agent: process.env.SSH_AUTH_SOCK,
        hostVerifier: (key: Buffer) => {
          presented = key;
          verdict = checkHostKey(hop.knownHosts, hop.host, hop.port, key);
          if (verdict.status === "unknown" && hop.hostKeyPolicy === "accept-new") {
            recordHostKey(hop.knownHosts, hop.host, hop.port, key);
            verdict = { status: "known" };
          }
          return verdict.status === "known";
        },
        ...keyConfig(hop, where),
      };
      if (sock) cfg.sock = sock as ConnectConfig["sock"];
      let settled = false;
      client.once("ready", () => {
        settled = true;
        if (isTarget) {
          client.on("close", () => this.onLost(`connection closed by ${hop.host}:${hop.port}`));
          client.on("error", (e) => this.onLost(e.message));
        }
        resolve(client);
      });
      client.once("error", (e: Error & { level?: string; code?: string }) => {
        if (settled) return;
        settled = true;
        client.end();
        reject(mapConnectError(e, where, hop, verdict, presented, this.node.name));
      });
      try {
        client.connect(cfg);
      } catch (e) {
        // ssh2 parses the private key synchronously: a wrong passphrase throws here.
        settled = true;
        reject(mapConnectError(e as Error, where, hop, null, null, this.node.name));
      }
    });
  }

  /** A ProxyCommand that exited before the handshake says why on its stderr. */
  private async proxyFailed(e: unknown): Promise<unknown> {
    const p = this.proxy!;
    // ssh2 may see the pipe close before the exit status arrives.
    await Promise.race([p.exited, new Promise((r) => setTimeout(r, 1000))]);
    const code = p.exitCode();
    if (code === null && !p.stderr()) return e;
    return new SlicecheckError(
      "CONNECT",
      `${this.node.name}: ProxyCommand \`${p.command}\` ${code === null ? "failed" : `exited with ${code}`}${p.stderr() ? `: ${p.stderr()}` : ""}. Check the ProxyCommand with \`ssh -G\` and run it by hand.`,
      { node: this.node.name, retryable: code === null, cause: e },
    );
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

function keyConfig(hop: Hop, where: string): Pick<ConnectConfig, "privateKey" | "passphrase"> {
  let file = hop.identityFile;
  if (!file) {
    file =
      ["id_ed25519", "id_ecdsa", "id_rsa"]
        .map((k) => join(homedir(), ".ssh", k))
        .find((p) => existsSync(p)) ?? null;
    if (!file) return {};
  }
  let privateKey: Buffer;
  try {
    privateKey = readFileSync(file);
  } catch (e) {
    throw new SlicecheckError(
      "KEY_FILE",
      `${where}: cannot read identity_file ${file}: ${(e as NodeJS.ErrnoException).code}. Fix identity_file in the inventory.`,
      { file },
    );
  }
  const passphrase = hop.identityPassphraseEnv ? process.env[hop.identityPassphraseEnv] : undefined;
  if (hop.identityPassphraseEnv && passphrase === undefined) {
    throw new SlicecheckError(
      "KEY_FILE",
      `${where}: the key's passphrase is expected in $${hop.identityPassphraseEnv}, which is not set.`,
      { file },
    );
  }
  return passphrase === undefined ? { privateKey } : { privateKey, passphrase };
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

function mapConnectError(
  e: Error & { level?: string; code?: string },
  where: string,
  hop: Hop,
  verdict: HostKeyVerdict | null,
  key: Buffer | null,
  node: string,
): SlicecheckError {
  const fp = key ? fingerprint(key) : "?";
  const v = verdict as HostKeyVerdict | null;
  if (v?.status === "unknown") {
    return new SlicecheckError(
      "HOST_KEY_UNKNOWN",
      `${where}: host key ${fp} is not in ${hop.knownHosts}. Verify the fingerprint out of band, then add it (ssh-keyscan -p ${hop.port} ${hop.host} >> ${hop.knownHosts}) or set host_key_policy: accept-new.`,
      { node, fingerprint: fp },
    );
  }
  if (v?.status === "changed") {
    return new SlicecheckError(
      "HOST_KEY_CHANGED",
      `${where}: HOST KEY CHANGED: the node presented ${fp}, which differs from ${hop.knownHosts} line ${v.line}. This may be an attack; if the node was reinstalled, remove the old line (ssh-keygen -R) and verify the new key.`,
      { node, fingerprint: fp, line: v.line },
    );
  }
  if (v?.status === "revoked") {
    return new SlicecheckError(
      "HOST_KEY_REVOKED",
      `${where}: host key ${fp} is marked @revoked in ${hop.knownHosts} line ${v.line}.`,
      { node, fingerprint: fp },
    );
  }
  if (/authentication methods failed/i.test(e.message)) {
    return new SlicecheckError(
      "AUTH",
      `${where}: authentication failed (tried ${hop.identityFile ?? "default keys"}${process.env.SSH_AUTH_SOCK ? " and ssh-agent" : ""}). Check user and identity_file.`,
      { node },
    );
  }
  if (/passphrase|encrypted/i.test(e.message)) {
    return new SlicecheckError(
      "KEY_FILE",
      `${where}: cannot decrypt the private key: ${e.message}`,
      { node },
    );
  }
  const retryable = e.code !== "ENOTFOUND" && e.code !== "EAI_AGAIN";
  return new SlicecheckError(
    "CONNECT",
    `${where}: cannot connect: ${e.code ?? e.message}${e.code ? ` (${e.message})` : ""}`,
    { node, retryable, cause: e.code },
  );
}
