// A late exit is judged by the node's record of its end (pure parts): the recorder's line is
// taken out of stderr however the stream is cut, parsed with the node's clock, and the
// judgement never fails a workload that ended in time because its exit arrived late.
import assert from "node:assert/strict";
import { parseEndRecord } from "../../src/transport/end-record.js";
import { END_MARKER, EndRecordSplitter } from "../../src/transport/remote-scripts.js";
import { judgeLateExit, starvedAtDeadline } from "../../src/workloads/completion.js";

describe("late exits: the node's record of a workload's end", () => {
  it("parses the recorder's line (GNU date with nanoseconds, and whole seconds with a second of doubt)", () => {
    assert.deepEqual(parseEndRecord("rc=0 start=100.250000000 end=120.500000000"), {
      exitCode: 0,
      elapsedMs: 20_250,
      startS: 100.25,
      endS: 120.5,
    });
    // A date without %N prints the seconds and a literal "N": the end may be a second later.
    assert.deepEqual(parseEndRecord("rc=143 start=100.N end=120.N"), {
      exitCode: 143,
      elapsedMs: 21_000,
      startS: 100,
      endS: 121,
    });
    assert.equal(parseEndRecord("rc=0 start= end=5"), null);
    assert.equal(parseEndRecord("rc=0 start=9 end=5"), null, "an end before the start");
  });

  it("takes the line out of stderr whatever the chunks, and keeps everything else byte for byte", () => {
    const text = `warn: one\nlast words without newline${END_MARKER}rc=3 start=1.0 end=2.5\n`;
    for (let cut = 0; cut <= text.length; cut++) {
      for (const step of [1, 3, 7]) {
        const s = new EndRecordSplitter();
        let out = s.feed(text.slice(0, cut));
        for (let i = cut; i < text.length; i += step) out += s.feed(text.slice(i, i + step));
        out += s.flush();
        assert.equal(out, "warn: one\nlast words without newline", `cut ${cut} step ${step}`);
        assert.deepEqual(s.record, { exitCode: 3, elapsedMs: 1500, startS: 1, endS: 2.5 });
      }
    }
    // A stream without the line: nothing is held back at its end, no record.
    const s = new EndRecordSplitter();
    assert.equal(s.feed("plain @@slice") + s.flush(), "plain @@slice");
    assert.equal(s.record, null);
  });

  it("judges a late exit by the record: in time passes on, past the deadline times out, unknown is undecided", () => {
    const D = 25_000;
    assert.deepEqual(judgeLateExit({ timedOut: false }, D), {
      timedOut: false,
      unjudged: null,
      late: null,
    });
    const inTime = judgeLateExit(
      { timedOut: true, endRecord: { exitCode: 0, elapsedMs: 20_100 }, aliveAtKill: false },
      D,
    );
    assert.equal(inTime.timedOut, false);
    assert.equal(inTime.unjudged, null);
    assert.match(
      inTime.late ?? "",
      /after its 25\.0 s deadline, but the node recorded its end \(exit 0\) after 20\.1 s/,
    );
    // Overran on the node's own clock (the kill's TERM ended it, the recorder saw when).
    assert.deepEqual(
      judgeLateExit({ timedOut: true, endRecord: { exitCode: 143, elapsedMs: 25_400 } }, D),
      { timedOut: true, unjudged: null, late: null },
    );
    // Our kill found it running, though the record's span is within the deadline: the record
    // starts after the login chain the deadline counts, so its TERM (exit 143) was ours.
    const killedByUs = judgeLateExit(
      { timedOut: true, endRecord: { exitCode: 143, elapsedMs: 21_000 }, aliveAtKill: true },
      D,
    );
    assert.deepEqual(killedByUs, { timedOut: true, unjudged: null, late: null });
    assert.equal(
      starvedAtDeadline(
        { exitCode: 143, endRecord: { elapsedMs: 21_000, cpuWaitMs: 20_000 } },
        killedByUs.timedOut,
      ) !== null,
      true,
      "so a starved node's deadline kill is undecided, not a workload's failure",
    );
    // No record, but the kill found it still running on the node: it overran.
    assert.equal(
      judgeLateExit({ timedOut: true, endRecord: null, aliveAtKill: true }, D).timedOut,
      true,
    );
    // No record and no evidence either way: undecided (broken), never failed.
    for (const aliveAtKill of [false, null]) {
      const u = judgeLateExit({ timedOut: true, endRecord: null, aliveAtKill }, D);
      assert.equal(u.timedOut, false);
      assert.match(u.unjudged ?? "", /record of its end could not be read/);
    }
  });
});
