// The run's Allure writer writes a check's files as allure-js-commons' FileSystemWriter does
// (names, bytes, nothing else left in the folder) without its fsync of each, and keeps the first
// error of a write that fails instead of throwing it into mocha's run.
import assert from "node:assert/strict";
import { chmodSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { FileSystemWriter, type Writer } from "allure-js-commons/sdk/reporter";
import { GuardedWriter } from "../../src/report/allure-writer.js";
import { tempDir } from "../helpers/tmp.js";

/** One check's worth of writes, the same for every writer. */
function writeCheck(w: Writer, dir: string): void {
  const log = join(dir, "..", "instance.log");
  writeFileSync(log, Buffer.concat([Buffer.from("line 1\n"), Buffer.alloc(200_000, 0xe9)]));
  const result = { uuid: "4f1c", name: "computes", status: "passed", steps: [] };
  w.writeResult(result as unknown as Parameters<Writer["writeResult"]>[0]);
  w.writeGroup({ uuid: "9a2b", children: ["4f1c"] } as unknown as Parameters<
    Writer["writeGroup"]
  >[0]);
  w.writeAttachment("5d-attachment.txt", Buffer.from("évidence\n"));
  w.writeAttachmentFromPath("6e-attachment.log", log);
}

/** Every file of `dir`, by name, as bytes. */
function files(dir: string): Map<string, string> {
  return new Map(
    readdirSync(dir)
      .sort()
      .map((f) => [f, readFileSync(join(dir, f)).toString("base64")]),
  );
}

describe("the run's Allure writer", () => {
  it("writes a check's result, container and attachments as allure-js-commons does", () => {
    const ours = join(tempDir("allure-ours"), "results");
    const theirs = join(tempDir("allure-theirs"), "results");
    const g = new GuardedWriter(ours);
    writeCheck(g, ours);
    writeCheck(new FileSystemWriter({ resultsDir: theirs }), theirs);
    assert.deepEqual(g.errors, []);
    assert.deepEqual([...files(ours).keys()], [...files(theirs).keys()]);
    assert.deepEqual(files(ours), files(theirs));
  });

  it("keeps a failed write's error and skips the writes after it, throwing none", () => {
    const parent = tempDir("allure-ro");
    const dir = join(parent, "results");
    chmodSync(parent, 0o500);
    try {
      const g = new GuardedWriter(dir);
      // As root the folder can still be made: then the first write's target is made unwritable.
      if (process.getuid?.() === 0) {
        chmodSync(parent, 0o700);
        writeFileSync(join(parent, "results"), "a file where the folder should be");
      }
      assert.doesNotThrow(() => writeCheck(g, dir));
      assert.equal(g.errors.length, 4, String(g.errors));
      assert.match(String(g.errors[1]), /skipped after an earlier write failed/);
    } finally {
      chmodSync(parent, 0o700);
    }
  });
});
