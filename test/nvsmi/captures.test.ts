// Every nvidia-smi_* and xid_* capture must parse, and what it yields must be coherent. The
// list comes from the directory, so a new capture is tested the moment it is added.

import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import type {
  GpusResult,
  LcipResult,
  LciResult,
  LgippResult,
  LgipResult,
  LgiResult,
  MigOpResult,
  NvlinkErrorsResult,
  NvlinkStatusResult,
  QMigResult,
  QueryResult,
  TableResult,
  TopoResult,
  XidResult,
} from "../../src/nvsmi/index.js";
import { NVSMI_PARSE_KINDS, parseQMig, stripSourceLines } from "../../src/nvsmi/index.js";
import { CAPTURE_DIR, type CaptureKind, nvsmiCaptures, readCapture } from "./captures.js";

function parse(kind: CaptureKind, text: string): unknown {
  return kind === "q" ? parseQMig(text) : NVSMI_PARSE_KINDS[kind](text);
}

// What each kind's result must satisfy, whatever the capture.
const COHERENT: Record<CaptureKind, (r: unknown) => void> = {
  gpus: (r) => {
    const { gpus } = r as GpusResult;
    assert.ok(gpus.length > 0);
    for (const g of gpus) {
      assert.match(g.uuid, /^GPU-[0-9a-f-]{36}$/);
      for (const d of g.migDevices) assert.match(d.uuid, /^MIG-/);
    }
  },
  query: (r) => assert.ok((r as QueryResult).rows.length > 0),
  apps: (r) => assert.ok(Array.isArray((r as { apps: unknown[] }).apps)),
  lgip: (r) => {
    const res = r as LgipResult;
    assert.ok(res.gpus.length > 0 || (res.notices?.length ?? 0) > 0);
    for (const p of res.gpus.flatMap((g) => g.profiles)) {
      assert.ok(p.free <= p.total && p.memoryGiB > 0 && p.sm > 0, JSON.stringify(p));
      assert.doesNotMatch(p.name, /^MIG /);
    }
  },
  lgipp: (r) => {
    for (const g of (r as LgippResult).gpus) {
      // The grid is the whole-GPU profile's size: 8 memory slices, 4 on A30, 12 placement units
      // on RTX PRO 6000 Blackwell; every placement lies inside it.
      const grid = Math.max(...g.placements.map((p) => p.size));
      assert.ok([4, 8, 12].includes(grid), `grid ${grid}`);
      for (const p of g.placements)
        assert.ok(p.starts.length > 0 && p.starts.every((s) => s + p.size <= grid));
    }
  },
  lgi: (r) => {
    const res = r as LgiResult;
    assert.ok(res.gpuInstances.length > 0 || (res.notices?.length ?? 0) > 0);
    for (const gi of res.gpuInstances) assert.ok(gi.start + gi.size <= 8, JSON.stringify(gi));
  },
  lci: (r) => {
    const res = r as LciResult;
    assert.ok(res.computeInstances.length > 0 || (res.notices?.length ?? 0) > 0);
  },
  lcip: (r) => {
    const res = r as LcipResult;
    assert.equal(res.profiles.filter((p) => p.isDefault).length, 1);
  },
  "mig-op": (r) => assert.ok((r as MigOpResult).ops.length > 0),
  table: (r) => {
    const t = r as TableResult;
    assert.equal(t.driverVersion === null, t.gpus.length === 0, "banner and GPU rows go together");
    for (const d of t.migDevices) assert.ok(d.sm > 0);
  },
  xid: (r) => {
    const { events } = r as XidResult;
    assert.ok(events.length > 0);
    for (const e of events) assert.match(e.pci, /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}$/);
  },
  q: (r) => {
    const q = r as QMigResult;
    assert.ok(q.gpus.length > 0 && q.gpus.every((g) => g.migModeCurrent !== null));
  },
  topo: (r) => {
    const t = r as TopoResult;
    assert.ok(t.gpus.length >= 2);
    // The diagonal is X and the matrix is symmetric between GPUs.
    for (const g of t.gpus) {
      assert.equal(g.links[`GPU${g.index}`], "X");
      for (const o of t.gpus) assert.equal(g.links[`GPU${o.index}`], o.links[`GPU${g.index}`]);
    }
  },
  "nvlink-status": (r) => {
    const { gpus } = r as NvlinkStatusResult;
    assert.ok(gpus.length > 0 && gpus.every((g) => g.links.length > 0));
    for (const l of gpus.flatMap((g) => g.links)) assert.ok(l.gbs === null || l.gbs > 20);
  },
  "nvlink-errors": (r) => {
    const { gpus } = r as NvlinkErrorsResult;
    assert.ok(gpus.length > 0);
    for (const g of gpus)
      for (const c of Object.values(g.links)) assert.deepEqual(Object.keys(c).length, 3);
  },
};

describe("nvsmi: every capture in fixtures/captures", () => {
  const captures = nvsmiCaptures();

  it("finds the captures and knows the kind of every nvidia-smi/xid file", () => {
    assert.ok(captures.length >= 90, `only ${captures.length} captures found`);
    const others = readdirSync(CAPTURE_DIR).filter(
      (f) =>
        !captures.some((c) => c.file === f) &&
        // Workload outputs and the device check's notes: test/nvsmi/h200-device.test.ts reads
        // the slicecheck-* and nvcc-build ones.
        !/^(?:cuda-error|dcgmi|gpu-burn|nccl|slurm|slicecheck-|nvcc-build|container-toolkit)/.test(
          f,
        ),
    );
    assert.deepEqual(others, [], "captures of no known family");
  });

  for (const { file, kind } of captures) {
    it(`${kind}: ${file}`, () => {
      const text = readCapture(file);
      const result = parse(kind, text);
      COHERENT[kind](result);
      // Stripping the provenance lines first changes nothing: they are never output.
      assert.deepEqual(parse(kind, stripSourceLines(text)), result);
      // The result is plain JSON (the CLI prints it with --json).
      assert.deepEqual(JSON.parse(JSON.stringify(result)), result);
    });
  }
});
