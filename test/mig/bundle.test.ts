// A bundle of reads in one remote call (src/mig/apply/bundle.ts), run by both of its runners on
// this machine: perl's (bundle-perl.ts), which this machine's perl runs, and the shell's, on a
// PATH without perl. Each read gets its own output and exit code, and its own deadline.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bundleScript, splitBundle } from "../../src/mig/apply/bundle.js";
import { pathWithout } from "../helpers/path-without.js";
import { taggedPids } from "../helpers/procs.js";
import { tempDir } from "../helpers/tmp.js";

const RUNNERS = [
  { name: "perl's", path: process.env.PATH ?? "" },
  { name: "the shell's", path: pathWithout(["perl"]) },
];

/** The bundle's output, run by sh with `path`. */
function run(reads: Parameters<typeof bundleScript>[0], path: string, timeoutS?: number) {
  return execFileSync("sh", ["-c", bundleScript(reads, timeoutS)], {
    encoding: "utf8",
    env: { ...process.env, PATH: path },
  });
}

for (const { name, path } of RUNNERS)
  describe(`read bundle, ${name} runner`, function () {
    this.timeout(30_000);

    it("runs several reads in one call and gives each its own output and exit code", () => {
      const reads = [
        ["printf", "%s", "no newline at the end"],
        { shell: "echo one; echo two >&2; exit 3" },
        ["true"],
        ["printf", "%s\\n\\n", "two newlines"],
        { shell: "kill -TERM $$" },
      ];
      assert.deepEqual(splitBundle(run(reads, path), reads.length, false), [
        { stdout: "no newline at the end", stderr: "", exitCode: 0, timedOut: false },
        { stdout: "one\n", stderr: "two\n", exitCode: 3, timedOut: false },
        { stdout: "", stderr: "", exitCode: 0, timedOut: false },
        { stdout: "two newlines\n\n", stderr: "", exitCode: 0, timedOut: false },
        { stdout: "", stderr: "", exitCode: 143, timedOut: false },
      ]);
    });

    it("gives each read its own deadline: a hung read times out, the others answer", () => {
      const reads = [["sleep", "30"], { shell: "echo answered" }];
      const [hung, other] = splitBundle(run(reads, path, 1), reads.length, false, true);
      assert.deepEqual(hung, { stdout: "", stderr: "", exitCode: 124, timedOut: true });
      assert.deepEqual(other, { stdout: "answered\n", stderr: "", exitCode: 0, timedOut: false });
    });

    it("starts no process per read beyond the read itself but one cat, however many reads", () => {
      // A cat first on PATH that counts its calls: the node's cores are shared with its own
      // work, and a cat and a $(cat) per stream were some forty processes for a snapshot's ten
      // reads. The shell's prints with one cat; perl's with none.
      const bin = tempDir("cat");
      writeFileSync(join(bin, "cat"), `#!/bin/sh\necho x >> ${bin}/calls\nexec /bin/cat "$@"\n`);
      writeFileSync(join(bin, "calls"), "");
      chmodSync(join(bin, "cat"), 0o755);
      const reads = Array.from({ length: 12 }, (_, i) => ({ shell: `echo read ${i}; exit ${i}` }));
      const out = splitBundle(run(reads, `${bin}:${path}`), reads.length, false);
      assert.deepEqual(
        out.map((o) => [o.stdout, o.exitCode]),
        reads.map((_, i) => [`read ${i}\n`, i]),
      );
      const cats = readFileSync(join(bin, "calls"), "utf8").split("\n").length - 1;
      assert.equal(cats, name === "perl's" ? 0 : 1);
    });
  });

describe("read bundle, perl's runner alone", function () {
  this.timeout(30_000);

  it("keeps its deadlines on a node without timeout", () => {
    const reads = [
      ["sleep", "30"],
      ["echo", "answered"],
    ];
    const text = run(reads, pathWithout(["timeout"]), 1);
    const [hung, other] = splitBundle(text, reads.length, false, true);
    assert.deepEqual([hung?.exitCode, hung?.timedOut, other?.stdout], [124, true, "answered\n"]);
  });

  it("kills a read that ignores TERM 5 s after its deadline, with its group (137)", () => {
    const tag = `SLICECHECK_T=bundle-kill-${process.pid}`;
    const reads = [{ shell: `export ${tag}; trap '' TERM; sleep 30 & wait; wait` }];
    const [r] = splitBundle(run(reads, process.env.PATH ?? "", 1), 1, false, true);
    assert.deepEqual([r?.exitCode, r?.timedOut], [137, true]);
    assert.deepEqual(taggedPids(tag), [], "the read's child went with its group");
  });

  it("does not wait for a process a read left holding its output", () => {
    const t0 = Date.now();
    const reads = [{ shell: "echo started; (sleep 20; echo late) & exit 0" }];
    const [r] = splitBundle(run(reads, process.env.PATH ?? "", 30), 1, false, true);
    assert.deepEqual([r?.stdout, r?.exitCode], ["started\n", 0]);
    assert.ok(Date.now() - t0 < 10_000, `${Date.now() - t0} ms`);
  });
});
