// readStateShared: the node's state as the simulated programs poll it, parsed again only when
// the file's text changed. A stale answer would hide an MPS fault from the clients it dooms.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { initState, readState, readStateShared, writeState } from "../../src/nvsmi/state.js";

describe("readStateShared (the programs' polled state)", () => {
  const dir = mkdtempSync(join(tmpdir(), "slicecheck-shared-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("gives the same object while the file is unchanged, and every change, even of the same size", () => {
    initState(dir, { node: "sim01", product: "H100-80GB", gpus: 1, driver: "550.127.05" });
    const a = readStateShared(dir);
    assert.equal(readStateShared(dir), a, "not parsed again");
    // A change that keeps the file's length (pid 1234 for 5678): only the text tells.
    const s = readState(dir);
    s.gpus[0]!.processes.push({ pid: 1234, name: "x", type: "C", gi: null, ci: null, usedMiB: 1 });
    writeState(dir, s);
    assert.equal(readStateShared(dir).gpus[0]!.processes[0]?.pid, 1234);
    s.gpus[0]!.processes[0]!.pid = 5678;
    writeState(dir, s);
    const b = readStateShared(dir);
    assert.notEqual(b, a);
    assert.equal(b.gpus[0]!.processes[0]?.pid, 5678);
    assert.deepEqual(b, readState(dir));
  });
});
