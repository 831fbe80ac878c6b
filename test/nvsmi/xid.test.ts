// Xid lines out of kernel logs in their different wrappers, with MIG attribution.

import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseXid } from "../../src/nvsmi/index.js";
import { readCapture } from "./captures.js";
import { assertParseError, editLine, lineOf } from "./helpers.js";

const STORM = readCapture("xid_31_62_45-storm_dmesg.txt");
const CTIME = readCapture("xid_13_109_dmesg-ctime.txt");
const KMSG = readCapture("xid_144_145_149_94_nvlink5-kmsg-lines.txt");

describe("nvsmi xid", () => {
  it("reads plain dmesg lines, pid/name, and pid='<unknown>' as null", () => {
    const { events } = parseXid(STORM);
    assert.equal(events.length, 10);
    assert.deepEqual(events[0], {
      time: "14328.198504",
      pci: "0000:0a:00",
      xid: 31,
      pid: 13332,
      name: "cuda_plot_k32_v",
      gpuInstanceId: null,
      computeInstanceId: null,
      causedBy: null,
      message:
        "Ch 00000010, intr 00000000. MMU Fault: ENGINE CE2 HUBCLIENT_CE0 faulted @ 0x7f29_5b8c9000. Fault is of type FAULT_PRIV_VIOLATION ACCESS_TYPE_VIRT_READ",
    });
    assert.deepEqual(
      [events[2]!.xid, events[2]!.pid, events[2]!.name, events[2]!.message],
      [45, null, null, "Ch 00000008"],
    );
    assert.deepEqual(
      events.map((e) => e.xid),
      [31, 62, 45, 45, 45, 45, 45, 45, 45, 45],
    );
  });

  it("reads dmesg -T stamps and skips the non-Xid lines around them", () => {
    const { events } = parseXid(CTIME);
    assert.equal(events.length, 4);
    assert.equal(events[0]!.time, "Fri Aug 30 11:43:09 2024");
    assert.deepEqual(
      [events[3]!.xid, events[3]!.pid, events[3]!.name],
      [109, 1797828, "pt_main_thread"],
    );
    assert.match(events[3]!.message, /^Ch 00000008, errorString CTX SWITCH TIMEOUT/);
  });

  it("reads bare kmsg lines: no time, pid/name only when printed", () => {
    const { events } = parseXid(KMSG);
    assert.deepEqual(
      events.map((e) => [e.xid, e.pci, e.pid]),
      [
        [149, "0019:01:00", null],
        [149, "0000:00:00", null],
        [145, "0018:01:00", null],
        [94, "0000:9b:00", 1234],
        [144, "0000:01:00", null],
        [149, "0000:00:00", null],
      ],
    );
    assert.ok(events.every((e) => e.time === null));
    assert.equal(events[3]!.message, "Contained ECC error");
  });

  it("reads MIG attribution, 'caused by previous Xid' and syslog/journal wrappers", () => {
    // Reconstructed from the driver's format strings (kernel_rc.c) and the reference's
    // reconstructed examples; no real MIG-attributed capture exists.
    const log = [
      "Nov 29 10:00:01 gpu01 kernel: [ 1234.5678] NVRM: Xid (PCI:0000:3b:00 GPU-I:02 GPU-CI:00): 31, pid=12345, name=python3, Ch 00000008, intr 00000000. MMU Fault: ...",
      "2024-11-29T10:00:02+0000 gpu01 kernel: NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No",
      "[ 1240.000001] NVRM: Xid (PCI:0000:3b:00 GPU-I 1, GPU-CI 0): 43, pid=1234, name=python, Ch 00000008",
      "[ 1241.000001] NVRM: Xid (PCI:0000:3b:00): 45, pid=1234, name=python, Ch 0000000a caused by previous Xid 31",
      "6,1234,1241000002,-;NVRM: Xid (PCI:0000:3b:00): 43, pid=<unknown>, name=<unknown>, Ch 00000008",
      "2024-11-29T10:00:09,123456+00:00 NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
    ].join("\n");
    const { events } = parseXid(log);
    assert.deepEqual(events[0], {
      time: "Nov 29 10:00:01",
      pci: "0000:3b:00",
      xid: 31,
      pid: 12345,
      name: "python3",
      gpuInstanceId: 2,
      computeInstanceId: 0,
      causedBy: null,
      message: "Ch 00000008, intr 00000000. MMU Fault: ...",
    });
    assert.deepEqual(
      [events[1]!.time, events[1]!.gpuInstanceId, events[1]!.computeInstanceId, events[1]!.name],
      ["2024-11-29T10:00:02+0000", 5, null, null],
    );
    assert.equal(events[1]!.message, "Contained: CE User Channel (0x9). RST: No, D-RST: No");
    assert.deepEqual([events[2]!.gpuInstanceId, events[2]!.computeInstanceId], [1, 0]);
    assert.deepEqual([events[3]!.xid, events[3]!.causedBy], [45, 31]);
    assert.deepEqual(
      [events[4]!.time, events[4]!.pid, events[4]!.name],
      ["1241000002", null, null],
    );
    // `dmesg --time-format=iso`, what readKernelLog() runs; pid/name dropped when unknown.
    assert.deepEqual(
      [events[5]!.time, events[5]!.xid, events[5]!.pid, events[5]!.message],
      ["2024-11-29T10:00:09,123456+00:00", 79, null, "GPU has fallen off the bus."],
    );
  });

  it("names an Xid line cut in the middle", () => {
    const no = lineOf(STORM, "): 62,");
    assertParseError(() => parseXid(editLine(STORM, no, (l) => l.slice(0, 50))), "xid", no);
    const pid = lineOf(STORM, "Ch 00000009");
    assertParseError(
      () => parseXid(editLine(STORM, pid, (l) => l.slice(0, l.indexOf("unknown")))),
      "xid",
      pid,
    );
    const bare = lineOf(CTIME, "): 109,");
    assertParseError(
      () => parseXid(editLine(CTIME, bare, (l) => l.slice(0, l.indexOf(": 109") + 5))),
      "xid",
      bare,
    );
  });

  // The byte-exact dmesg -T capture in shared/reference/fetched (read there, never copied);
  // registered only where the shared reference is checked out.
  const fetched = join(
    dirname(fileURLToPath(import.meta.url)),
    "../../../shared/reference/fetched/xid_119_gsp-rpc-timeout_h100_dmesg-T.txt",
  );
  if (existsSync(fetched)) {
    it("reads the fetched Xid 119 GSP-timeout dmesg -T capture", () => {
      const { events } = parseXid(readFileSync(fetched, "utf8"));
      assert.equal(events.length, 5);
      assert.ok(events.every((e) => e.xid === 119 && e.pci === "0000:9b:00"));
      assert.deepEqual(
        events.map((e) => e.name),
        ["nvidia-smi", "nvidia-smi", "nvidia-smi", "cache_mgr_main", "gpud"],
      );
      assert.equal(events[4]!.time, "Sun Feb 23 16:30:13 2025");
    });
  }

  it("gives a GPU that fell off the bus an event of its own, with or without an Xid", () => {
    // The driver's wording as it appears in public bug reports: `NVRM: GPU 0000:09:00.0: GPU
    // has fallen off the bus.` in a dmesg paste, `kernel: NVRM: GPU has fallen off the bus.`
    // from an older driver in a journal, and an Xid 79 wrapped by the terminal after `name=…,`.
    const log = [
      "[  228.414765] NVRM: GPU 0000:09:00.0: GPU has fallen off the bus.",
      "[  228.445633] pci 0000:09:00.0: Unable to change power state from unknown to D0, device inaccessible",
      "Nov 29 10:00:00 gpu01 kernel: NVRM: GPU has fallen off the bus.",
      "NVRM: Xid (PCI:0000:01:00): 79, pid=811977, name=nvidia-smi,",
      "      GPU has fallen off the bus.",
    ].join("\n");
    const r = parseXid(log);
    assert.deepEqual(r.fallenOffBus, [
      { time: "228.414765", pci: "0000:09:00", message: "GPU has fallen off the bus." },
      { time: "Nov 29 10:00:00", pci: null, message: "GPU has fallen off the bus." },
    ]);
    assert.deepEqual(
      r.events.map((e) => [e.xid, e.pci, e.pid, e.name, e.message]),
      [[79, "0000:01:00", 811977, "nvidia-smi", "GPU has fallen off the bus."]],
      "the wrapped Xid 79 is re-joined, not refused",
    );
  });

  it("re-joins a time-stamped Xid line that a terminal wrapped mid-word", () => {
    const r = parseXid(
      [
        "[14328.198504] NVRM: Xid (PCI:0000:0a:00): 31, pid=13332, name=cuda_plot_k32_v, Ch 00000010, intr 00000000. MMU Fault: ENGI",
        "NE CE2 HUBCLIENT_CE0 faulted @ 0x7f29_5b8c9000.",
        "[14370.687545] NVRM: Xid (PCI:0000:0a:00): 62, pid='<unknown>', name=<unknown>, 2023b230",
      ].join("\n"),
    );
    assert.deepEqual(
      r.events.map((e) => e.message),
      [
        "Ch 00000010, intr 00000000. MMU Fault: ENGINE CE2 HUBCLIENT_CE0 faulted @ 0x7f29_5b8c9000.",
        "2023b230",
      ],
    );
    assert.deepEqual(r.fallenOffBus, []);
  });
});
