// ssh's ProxyCommand: a local command whose stdin/stdout carry the SSH connection (`ssh -W
// %h:%p bastion`, `nc %h %p`, a corporate proxy helper). Started as ssh starts it, through
// `sh -c "exec …"` (tokens were expanded by the inventory loader), and handed to ssh2 as the
// `sock` it speaks SSH over. It is killed when the connection ends: a ProxyCommand left
// running would hold a bastion session open.
import { Duplex } from "node:stream";

export interface ProxyCommand {
  command: string;
  sock: Duplex;
  /** What it printed on stderr so far (the reason, when it exits before the handshake). */
  stderr(): string;
  /** Exit code once it has exited, else null. */
  exitCode(): number | null;
  exited: Promise<unknown>;
  stop(): void;
}

export async function startProxyCommand(command: string): Promise<ProxyCommand> {
  // Loaded here: most nodes have no ProxyCommand, and a run needs execa for nothing else.
  const { execa } = await import("execa");
  const child = execa("/bin/sh", ["-c", `exec ${command}`], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    buffer: false,
    reject: false,
    cleanup: true,
  });
  let err = "";
  let code: number | null = null;
  child.stderr?.on("data", (d: Buffer) => {
    if (err.length < 4096) err += d.toString("utf8");
  });
  const exited = child.then((r) => {
    code = r.exitCode ?? (r.signal ? 128 : null);
  });
  const out = child.stdout!;
  const inp = child.stdin!;
  // A plain Duplex over the two pipes (Duplex.from turns the pipes' premature close into an
  // uncaught error). A write after the command exited must not crash the controller: ssh2
  // learns of it from the end of stdout.
  const sock = new Duplex({
    read() {
      out.resume();
    },
    write(chunk, _enc, cb) {
      if (inp.writable) inp.write(chunk, () => cb());
      else cb();
    },
    final(cb) {
      inp.end();
      cb();
    },
    destroy(err, cb) {
      out.destroy();
      inp.destroy();
      cb(err);
    },
  });
  out.on("data", (d: Buffer) => {
    if (!sock.push(d)) out.pause();
  });
  out.on("end", () => sock.push(null));
  out.on("error", () => sock.push(null));
  inp.on("error", () => {});
  sock.on("error", () => {});
  return {
    command,
    sock,
    stderr: () => err.trim(),
    exitCode: () => code,
    exited,
    stop: () => {
      sock.destroy();
      child.kill("SIGTERM");
    },
  };
}
