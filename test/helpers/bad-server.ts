// A TCP server on loopback that misbehaves the way broken or half-dead SSH servers do, so that
// tests can prove one such node never takes the controller (or the healthy nodes) down with it.
// No SSH is mocked here: the healthy nodes beside it are real sshd; this is the broken peer.
import { createServer, type Server, type Socket } from "node:net";

export type BadMode =
  /** Accepts the TCP connection and never sends a byte (a hung sshd, a blackholing proxy). */
  | "silent"
  /** Accepts and closes at once (sshd at MaxStartups, a wrapper that refuses us). */
  | "close-on-accept"
  /** Answers with something that is not an SSH identification (an HTTP server on the port). */
  | "garbage-banner"
  /** Sends a valid identification one byte at a time, slowly, and never finishes the handshake. */
  | "trickled-banner"
  /** Sends a valid identification, then closes before the key exchange. */
  | "stop-after-banner";

export const BAD_MODES: readonly BadMode[] = [
  "silent",
  "close-on-accept",
  "garbage-banner",
  "trickled-banner",
  "stop-after-banner",
];

const BANNER = "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n";

export interface BadServer {
  host: string;
  port: number;
  mode: BadMode;
  /** TCP connections accepted so far. */
  readonly accepted: number;
  close(): Promise<void>;
}

export async function startBadServer(mode: BadMode, host = "127.0.0.1"): Promise<BadServer> {
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let accepted = 0;
  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };
  const server: Server = createServer((sock) => {
    accepted++;
    sockets.add(sock);
    sock.on("close", () => sockets.delete(sock));
    // The client's bytes are read and dropped; a socket error is the client leaving.
    sock.on("data", () => {});
    sock.on("error", () => {});
    switch (mode) {
      case "silent":
        return;
      case "close-on-accept":
        sock.destroy();
        return;
      case "garbage-banner":
        // Non-SSH lines before the identification are allowed (RFC 4253 4.2), so only a long
        // run of them, or a binary blob, shows whether the client gives up or waits forever.
        sock.write("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        sock.write(Buffer.from([0, 1, 2, 255, 254, 10, 13, 10]));
        sock.write(`${"x".repeat(300)}\r\n`);
        return;
      case "trickled-banner": {
        let i = 0;
        const step = () => {
          if (sock.destroyed || i >= BANNER.length - 2) return;
          sock.write(BANNER[i++]!);
          later(400, step);
        };
        step();
        return;
      }
      case "stop-after-banner":
        sock.write(BANNER);
        later(200, () => sock.destroy());
        return;
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => resolve());
  });
  const addr = server.address();
  if (!addr || typeof addr === "string") throw new Error("the bad server has no port");
  return {
    host,
    port: addr.port,
    mode,
    get accepted() {
      return accepted;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A loopback port with nothing listening on it (a stopped sshd): connections are refused. */
export async function closedPort(host = "127.0.0.1"): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, host, () => r()));
  const addr = s.address();
  await new Promise<void>((r) => s.close(() => r()));
  if (!addr || typeof addr === "string") throw new Error("no port");
  return addr.port;
}
