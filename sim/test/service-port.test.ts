// Ports for the simulated Slurm's and PostgreSQL's daemons: free on every address (slurmd binds
// 0.0.0.0, and a port free on 127.0.0.1 may be a node's sshd's on 127.0.0.13), and outside the
// range the kernel gives outgoing connections, which may take a port while its daemon restarts.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { freeServicePort, listenable } from "../src/sshd.js";

const listen = (host: string, port: number) =>
  new Promise<Server>((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(port, host, () => resolve(s));
  });

describe("simulated daemons' ports", () => {
  it("are below the ephemeral range and free on 0.0.0.0", async () => {
    const lo = Number(
      readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0],
    );
    for (let i = 0; i < 20; i++) {
      const port = await freeServicePort();
      assert.ok(port >= 10_000 && port < lo, `port ${port}, ephemeral range from ${lo}`);
      const s = await listen("0.0.0.0", port);
      s.close();
    }
  });

  it("a port held on one loopback address is not free for a daemon on all of them", async () => {
    const s = await listen("127.0.0.13", 0);
    const port = (s.address() as { port: number }).port;
    try {
      assert.equal(await listenable("127.0.0.1", port), true);
      assert.equal(await listenable("0.0.0.0", port), false);
    } finally {
      s.close();
    }
  });
});
