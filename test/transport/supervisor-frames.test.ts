// The controller's reading of the supervisor's frames: bytes of two commands interleaved line by
// line come apart by id, a line cut into continuation frames (inside a multi-byte character)
// rejoins exactly, a last line without newline stays without one, and a line that is no frame
// is reported instead of ending the reader.
import assert from "node:assert/strict";
import { type Frame, FrameParser, parseFrame } from "../../src/transport/supervisor-frames.js";

/** Each id's stream, as the frames give it back. */
function streams(frames: Frame[]): Record<string, string> {
  const out: Record<string, Buffer[]> = {};
  for (const f of frames) {
    if (f.kind !== "out") continue;
    const key = `${f.id}/${f.stream}`;
    out[key] = [...(out[key] ?? []), f.bytes];
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, Buffer.concat(v).toString()]));
}

describe("supervisor frames (the controller's parser)", () => {
  it("separates two commands' interleaved lines by id and stream, with their exits", () => {
    const p = new FrameParser();
    const wire = "a o one\nb o uno\nb e warn\na o two\na x 0\nb o dos\nb x 3\n";
    // Fed in awkward pieces: a frame cut anywhere waits for its end.
    const frames = [wire.slice(0, 5), wire.slice(5, 23), wire.slice(23)].flatMap((s) =>
      p.feed(Buffer.from(s)),
    );
    assert.deepEqual(streams(frames), {
      "a/stdout": "one\ntwo\n",
      "b/stdout": "uno\ndos\n",
      "b/stderr": "warn\n",
    });
    assert.deepEqual(
      frames.filter((f) => f.kind === "exit"),
      [
        { kind: "exit", id: "a", code: 0 },
        { kind: "exit", id: "b", code: 3 },
      ],
    );
    assert.deepEqual(p.flush(), []);
  });

  it("rejoins continuation frames cut inside a multi-byte character, and keeps a final line without newline", () => {
    const line = Buffer.from("ab\u00e9cd");
    // The cut falls between the two bytes of é.
    const wire = Buffer.concat([
      Buffer.from("c O "),
      line.subarray(0, 3),
      Buffer.from("\nc o "),
      line.subarray(3),
      Buffer.from("\nc O no newline\nc x 1\n"),
    ]);
    const frames = new FrameParser().feed(wire);
    assert.deepEqual(streams(frames), { "c/stdout": "ab\u00e9cd\nno newline" });
    assert.equal(frames.at(-1)?.kind, "exit");
  });

  it("keeps an empty line and spaces inside a payload", () => {
    assert.deepEqual(
      streams([parseFrame(Buffer.from("d o ")), parseFrame(Buffer.from("d e  x  y "))]),
      { "d/stdout": "\n", "d/stderr": " x  y \n" },
    );
  });

  it("reports a line that is no frame, and goes on reading", () => {
    const p = new FrameParser();
    const frames = p.feed(
      Buffer.from("@@slicecheck:sup ready 42\nWelcome to node7\nd q what\nd o fine\nd x oops\n"),
    );
    assert.deepEqual(
      frames.map((f) => f.kind),
      ["ready", "garbage", "garbage", "out", "garbage"],
    );
    assert.deepEqual(frames[1], { kind: "garbage", line: "Welcome to node7" });
    assert.deepEqual(p.feed(Buffer.from("unfinished")), []);
    assert.deepEqual(p.flush(), [{ kind: "garbage", line: "unfinished" }]);
  });

  it("reads the supervisor's refusal", () => {
    assert.deepEqual(
      parseFrame(Buffer.from("@@slicecheck:sup cannot: setsid is missing on the node")),
      { kind: "cannot", reason: "setsid is missing on the node" },
    );
  });
});
