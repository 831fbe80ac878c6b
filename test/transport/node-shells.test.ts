// The node-side helpers run under bash where the node has it, and under sh where it does not
// (remote-scripts.ts PICK_SHELL). Under bash they must use its builtins and start no process for
// a heartbeat or a clock reading: shown by running them with a PATH where no tool is found. Under
// dash they must still work with the tools. Real shells, this machine's.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { parseEndRecord } from "../../src/transport/end-record.js";
import { readBeat, SUPERVISED_WATCHDOG, wrapCommand } from "../../src/transport/remote-scripts.js";
import { type Frame, FrameParser } from "../../src/transport/supervisor-frames.js";
import { perlSupervisor } from "../../src/transport/supervisor-perl.js";
import { escapeLine, supervisorScript } from "../../src/transport/supervisor-script.js";
import { notingTools } from "../helpers/noting-tools.js";
import { taggedPids, waitFor } from "../helpers/procs.js";

/** A command line with what an escaping can get wrong: printf's own escapes (`\c` ends %b's
 * output, `\0` starts an octal), `%`, blanks at its ends, quotes, newlines, UTF-8. */
const TRICKY = "printf '%s' ' a\\tb\\c \\0101 %d \"q\" ü→ \n\n x  '";

/** How `shell` runs the supervisor: its script, or perl's (whose fallback is dash's). */
function supervisorArgv(shell: string): string[] {
  const args = ["slicecheck-supervisor", "15", ""];
  return shell === "perl"
    ? ["-e", perlSupervisor(), ...args, "/bin/sh", supervisorScript(), SUPERVISED_WATCHDOG]
    : ["-c", supervisorScript(), ...args];
}

/** The supervisor's script run by `shell` itself (or perl's by perl): the frames of the one
 * command started by `line`, in the order they came. */
async function superviseFrames(shell: string, line: string, env = process.env): Promise<Frame[]> {
  const p = spawn(shell, supervisorArgv(shell), { stdio: ["pipe", "pipe", "pipe"], env });
  const parser = new FrameParser();
  const frames: Frame[] = [];
  p.stdout.on("data", (b: Buffer) => frames.push(...parser.feed(b)));
  p.stdin.write(`s c1 ${escapeLine(line)}\n`);
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      if (frames.some((f) => f.kind === "exit")) {
        clearInterval(tick);
        resolve();
      }
    }, 20);
  });
  p.stdin.end();
  await new Promise((r) => p.on("close", r));
  return frames;
}

/** Its stdout, from those frames. */
async function superviseOnce(shell: string, line: string): Promise<string> {
  const frames = await superviseFrames(shell, line);
  return Buffer.concat(
    frames.flatMap((f) => (f.kind === "out" && f.stream === "stdout" ? [f.bytes] : [])),
  ).toString();
}

const SHELLS = [
  { shell: "/bin/bash", path: "/nonexistent", why: "bash, no tool on its PATH" },
  { shell: "/bin/sh", path: process.env.PATH ?? "/usr/bin:/bin", why: "sh (dash), with its tools" },
].filter((s) => existsSync(s.shell));

/** Runs the heartbeat loop with a 1-s timeout: writes `beats` bytes, then ends stdin or not. */
function beats(shell: string, path: string, count: number, close: boolean): Promise<string> {
  const script = `${readBeat(1)} n=0; while r; do n=$((n+1)); done; echo "$n"`;
  const p = spawn(shell, ["-c", script], { env: { PATH: path }, stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  p.stdout.on("data", (b: Buffer) => {
    out += b.toString();
  });
  p.stdin.write("h".repeat(count));
  if (close) p.stdin.end();
  return new Promise((resolve) => p.on("close", () => resolve(out.trim())));
}

describe("node-side helpers under bash and under sh", () => {
  it("bash and dash are both here (the test needs the two)", () => {
    assert.equal(SHELLS.length, 2);
  });

  for (const { shell, path, why } of SHELLS) {
    it(`${why}: counts each heartbeat byte, and ends at the channel's end`, async () => {
      assert.equal(await beats(shell, path, 3, true), "3");
    });

    it(`${why}: ends when no heartbeat came for its timeout, the channel still open`, async () => {
      assert.equal(await beats(shell, path, 2, false), "2");
    });
  }

  for (const shell of [...SHELLS.map((s) => s.shell), "perl"]) {
    it(`${shell}: the supervisor decodes a request's text byte for byte`, async () => {
      const expected = spawnSync("sh", ["-c", TRICKY], { encoding: "utf8" }).stdout;
      assert.ok(expected.includes("\\c") && expected.includes("ü→"), expected);
      assert.equal(await superviseOnce(shell, TRICKY), expected);
    });
  }

  for (const shell of [...SHELLS.map((s) => s.shell), "perl"]) {
    const fifos = shell === "/bin/sh";
    it(`${shell}: a command's output ends with its last writer${fifos ? ", through fifos" : ", through pipes of its own (no mkfifo)"}`, async () => {
      // mkfifo is noted, then makes the fifos as asked.
      const tools = notingTools(["mkfifo"]);
      const env = { ...process.env, PATH: tools.path };
      // A child that writes after the command itself has ended: its line still comes.
      const frames = await superviseFrames(shell, "echo a; (sleep 0.3; echo late) & echo b", env);
      const lines = frames.flatMap((f) => (f.kind === "out" ? [f.bytes.toString()] : []));
      assert.deepEqual(lines, ["a\n", "b\n", "late\n"]);
      assert.equal(frames.at(-1)?.kind, "exit", "the exit frame comes after the last line");
      assert.equal(tools.calls().includes("mkfifo"), fifos, `mkfifo ran: ${fifos}`);
    });
  }

  for (const shell of [...SHELLS.map((s) => s.shell), "perl"]) {
    it(`${shell}: a controller that stops reading does not hold off the heartbeat timeout`, async () => {
      // A command that writes without end to a supervisor whose stdout nobody reads, and no
      // heartbeat after its request: its frames fill the pipe, and still, past the 2-s timeout,
      // the watchdog stops the command.
      const tag = `SLICECHECK_T=stalled-${process.pid}-${shell.replace(/\W/g, "")}`;
      const argv = supervisorArgv(shell);
      argv[argv.indexOf("15")] = "2";
      const p = spawn(shell, argv, { stdio: ["pipe", "pipe", "ignore"] });
      p.stdin.write(`s c1 ${escapeLine(`export ${tag}; exec yes`)}\n`);
      assert.ok(await waitFor(() => taggedPids(tag).length === 1, 10_000), "the writer runs");
      assert.ok(
        await waitFor(() => taggedPids(tag).length === 0, 15_000),
        "the writer was stopped",
      );
      // Read at last: the supervisor ends once its frames are out.
      p.stdout.resume();
      p.stdin.end();
      await new Promise((r) => p.on("close", r));
    });
  }

  it("perl's supervisor sends the frames the shell's sends, frame for frame", async () => {
    // Lines about a frame's size (3840), one far longer, empty lines, both streams at once, a last
    // line without newline on each, and an exit status; then a command killed by a signal.
    const lines = [3839, 3840, 3841, 0, 10000, 0, 7].map((n, i) => "abcdefg"[i]!.repeat(n));
    const cmd = `printf '%s\\n' ${lines.map((l) => `'${l}'`).join(" ")}; echo e1 >&2; printf 'no newline'; printf 'last err' >&2; exit 7`;
    const split = (frames: Frame[]) =>
      ["stdout", "stderr"].map((stream) =>
        frames.flatMap((f) =>
          f.kind === "out" && f.stream === stream
            ? [`${f.bytes.length}:${f.bytes.toString()}`]
            : [],
        ),
      );
    for (const line of [cmd, "echo before; kill -TERM $$"]) {
      const [bash, perl] = [
        await superviseFrames("/bin/bash", line),
        await superviseFrames("perl", line),
      ];
      assert.deepEqual(split(perl), split(bash));
      assert.deepEqual(perl.at(-1), bash.at(-1), "the same exit frame, last");
    }
    // The frames carry what was asked: a line cut at 3840 bytes (a whole line's frame holds its
    // newline), and the two statuses.
    const frames = await superviseFrames("perl", cmd);
    assert.deepEqual(
      frames.flatMap((f) => (f.kind === "out" && f.stream === "stdout" ? [f.bytes.length] : [])),
      [3840, 3841, 3840, 2, 1, 3840, 3840, 2321, 1, 8, 10],
    );
    assert.deepEqual(frames.at(-1), { kind: "exit", id: "c1", code: 7 });
    const killed = await superviseFrames("perl", "kill -TERM $$");
    assert.deepEqual(killed.at(-1), { kind: "exit", id: "c1", code: 143 });
  });

  it("a shell command marked bash runs under /bin/bash, from a login shell that is sh", () => {
    const o = { runTag: "t", cmdTag: "c", deadlineS: 30, noWatcher: true, sudo: false };
    const run = (bash: boolean) =>
      spawnSync("sh", ["-c", wrapCommand({ shell: 'echo "[${BASH_VERSION:-}]"', bash }, o)], {
        encoding: "utf8",
      }).stdout;
    assert.match(run(true), /^\[\d+\.\d+/);
    assert.equal(run(false), "[]\n");
  });

  it("the recorder takes its clock from bash itself: a record with fractions and no `date`", () => {
    const cmd = wrapCommand(
      { argv: ["sleep", "0.2"] },
      { runTag: "t", cmdTag: "c", deadlineS: 30, record: true, noWatcher: true, sudo: false },
    );
    // The recorder's shell is /bin/bash here; `date` is made to fail loudly if it is run.
    const fake = "/tmp/slicecheck-no-date";
    spawnSync("mkdir", ["-p", fake]);
    spawnSync("sh", [
      "-c",
      `printf '#!/bin/sh\\necho DATE-RAN >&2; exit 1\\n' > ${fake}/date; chmod +x ${fake}/date`,
    ]);
    const r = spawnSync("sh", ["-c", cmd], {
      encoding: "utf8",
      env: { PATH: `${fake}:${process.env.PATH}` },
    });
    assert.doesNotMatch(r.stderr, /DATE-RAN/);
    const line = r.stderr.split("\n").find((l) => l.startsWith("@@slicecheck:end "));
    assert.ok(line, r.stderr);
    const rec = parseEndRecord(line.slice("@@slicecheck:end ".length));
    assert.ok(rec, line);
    assert.match(line, /start=\d+\.\d{6} end=\d+\.\d{6}/);
    // At least the command's own 0.2 s: the two readings are of one clock, in order.
    assert.ok(rec.elapsedMs >= 200, JSON.stringify(rec));
  });
});
