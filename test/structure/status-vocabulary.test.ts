// One status vocabulary (src/util/status.ts): no other product file spells a status union of
// its own (the scanner is shown failing on a planted `"ok" | "failed"`), stored records of
// older versions read in today's words ("ok" is passed; a CHARACTERISED code is a
// characterisation), and a status maps to the exit code, the run's row and the page's word by
// one function each.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readChecks } from "../../src/report/context.js";
import { resultOf, resultWord } from "../../src/report/signoff/model.js";
import { diffSnapshots } from "../../src/store/diff.js";
import { snapshot } from "../../src/store/query.js";
import { Recorder } from "../../src/store/recorder.js";
import { openStore } from "../../src/store/store.js";
import {
  EXIT_CODE,
  PASS_CODE,
  PASS_KINDS,
  passKindOfCode,
  STATUSES,
  statusOfExit,
  storedStatus,
  worstStatus,
} from "../../src/util/status.js";
import { type CheckRecord, exitOf, readCheck } from "../../src/verdicts/checks.js";
import { statusUnions } from "../helpers/status-vocabulary.js";
import { tempDir } from "../helpers/tmp.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The files that may spell status words in a union, and why. */
const ALLOWED = {
  "src/util/status.ts": "the vocabulary itself",
  "src/chaos/history.ts":
    "Jepsen-style history events (invoke, ok, fail, info): an operation's record, not a verdict",
};

function planted(files: Record<string, string>): string {
  const dir = tempDir("vocabulary");
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

const rec = (p: Partial<CheckRecord>): CheckRecord => ({
  id: "c0001",
  suite: "isolation",
  node: "sim01",
  gpu: 0,
  instance: null,
  title: "victimsUnaffected",
  fullTitle: "victimsUnaffected",
  status: "passed",
  code: "OK",
  message: "",
  figures: {},
  evidence: [],
  steps: [],
  parameters: {},
  startMs: 0,
  stopMs: 1,
  ...p,
});

describe("one status vocabulary", () => {
  it("no product file but the vocabulary's own spells a status union or list", () => {
    const hits = [
      ...statusUnions(root, join(root, "src"), ALLOWED),
      ...statusUnions(root, join(root, "suites"), ALLOWED),
    ];
    assert.deepEqual(hits, [], JSON.stringify(hits, null, 2));
  });

  it("the scanner finds a planted union, a planted list and a fifth word, and spares a subset", () => {
    const dir = planted({
      "src/workloads/x.ts": 'export type S = "ok" | "failed";\n',
      "src/store/y.ts": 'export const ORDER = ["passed", "failed", "broken"] as const;\n',
      "src/report/z.ts": 'type R = { status: "passed" | "error" | "other" };\nexport type { R };\n',
      "src/harness/w.ts":
        'import type { Status } from "../util/status.js";\nexport type D = Extract<Status, "passed" | "broken">;\n' +
        'type Mine = string;\nexport type E = Extract<Mine, "ok" | "failed">;\n',
      "src/chaos/history.ts": 'export type EventType = "invoke" | "ok" | "fail" | "info";\n',
    });
    const hits = statusUnions(dir, join(dir, "src"), ALLOWED);
    assert.deepEqual(hits.map((h) => h.where).sort(), [
      "src/harness/w.ts:4",
      "src/report/z.ts:1",
      "src/store/y.ts:1",
      "src/workloads/x.ts:1",
    ]);
  });

  it("a stored 'ok' reads as passed, an unknown word as undecided, the four as themselves", () => {
    assert.equal(storedStatus("ok"), "passed");
    for (const s of STATUSES) assert.equal(storedStatus(s), s);
    assert.equal(storedStatus("weird"), "broken");
    assert.equal(storedStatus(null), "broken");
  });

  it("ranks a failure over an undecided check over a pass; nothing assessed is skipped", () => {
    assert.equal(worstStatus(["passed", "broken", "skipped"]), "broken");
    assert.equal(worstStatus(["broken", "failed", "passed"]), "failed");
    assert.equal(worstStatus(["skipped", "passed"]), "passed");
    assert.equal(worstStatus([]), "skipped");
  });

  it("maps a status to the exit code, the run's row and the page's word, and back", () => {
    for (const [s, code] of Object.entries(EXIT_CODE)) assert.equal(statusOfExit(code), s);
    assert.equal(statusOfExit(130), "broken", "an exit code no status has is undecided");
    assert.equal(exitOf([rec({ status: "broken" }), rec({ status: "failed" })]), 1);
    assert.equal(exitOf([rec({ status: "skipped" })]), 0);
    assert.deepEqual(STATUSES.map(resultWord), ["PASS", "FAIL", "BROKEN", "NOT ASSESSED"]);
    assert.equal(resultOf([rec({ status: "passed" }), rec({ status: "broken" })]), "BROKEN");
    assert.equal(resultOf([]), "NOT ASSESSED");
  });

  it("each pass kind has its own code, and a code says its kind back", () => {
    for (const k of PASS_KINDS) assert.equal(passKindOfCode(PASS_CODE[k]), k);
    assert.equal(new Set(Object.values(PASS_CODE)).size, PASS_KINDS.length);
    assert.equal(passKindOfCode("SITE_RULE_OK"), "measured");
  });

  it("reads checks.jsonl written before kinds: a CHARACTERISED pass gets its kind, 'ok' is passed", () => {
    const dir = tempDir("vocabulary-old");
    const file = join(dir, "checks.jsonl");
    const old = [
      { ...rec({ id: "c1", code: "CHARACTERISED" }), kind: undefined },
      { ...rec({ id: "c2", code: "DOCUMENTED_CONSTRAINT", suite: "nccl" }) },
      { ...rec({ id: "c3" }), status: "ok" },
      rec({ id: "c4", status: "failed", code: "ISOLATION_VIOLATION" }),
      rec({ id: "c5", code: "OK", kind: "characterised" }),
    ];
    writeFileSync(file, `${old.map((c) => JSON.stringify(c)).join("\n")}\n`);
    const read = readChecks(file);
    assert.deepEqual(
      read.map((c) => [c.id, c.status, c.kind]),
      [
        ["c1", "passed", "characterised"],
        ["c2", "passed", "documented-constraint"],
        ["c3", "passed", "measured"],
        ["c4", "failed", undefined],
        ["c5", "passed", "characterised"],
      ],
    );
    // A kind on a check that did not pass is dropped: only a pass has one.
    assert.equal(readCheck(rec({ status: "broken", kind: "measured" })).kind, undefined);
  });

  it("reads a database verdict an older version stored as 'ok' as passed, so diff sees it fail", async () => {
    const path = join(tempDir("vocabulary-db"), "r.db");
    for (const [runId, status] of [
      ["sc-old", "ok"],
      ["sc-new", "failed"],
    ] as const) {
      const rec = await Recorder.start(path, { runId, label: runId, argv: [] });
      rec.node({ node: "n1", inventory: null, suites: [], error: null }, new Map(), null);
      assert.equal(await rec.finish("passed"), null);
      const db = await openStore(path, { mustExist: true });
      // Written as the older version did, below the recorder (which now writes only Status).
      await db.run(
        "INSERT INTO verdicts (run_id, node, name, status, summary) VALUES (?, 'n1', 'victimsUnaffected', ?, 's')",
        [runId, status],
      );
      await db.close();
    }
    const db = await openStore(path, { mustExist: true });
    const before = await snapshot(db, "sc-old");
    const after = await snapshot(db, "sc-new");
    await db.close();
    assert.equal(before.verdicts[0]?.status, "passed");
    const found = diffSnapshots(before, after).findings.filter((f) => f.area === "behaviour");
    assert.deepEqual(
      found.map((f) => [f.detail, f.regression]),
      [["passed → failed: s", true]],
    );
  });
});
