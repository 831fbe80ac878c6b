// The simulated kernel log and dmesg: Xid lines in the driver's format, stamped as util-linux
// prints them, read back by the harness's Xid parser.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseXid } from "../../../src/nvsmi/xid.js";
import { type DmesgIo, dmesgMain } from "../../src/klog/dmesg.js";
import { bootTimeMs, KMSG_FILE } from "../../src/klog/log.js";
import { formatXid, logXid, mmuFaultMessage } from "../../src/klog/xid.js";
import { newGpu } from "../../src/nvsmi/state.js";
import { pciOf } from "../../src/workloads/device.js";
import { capture } from "../nvsmi/helpers.js";
import { cleanup, node, state } from "./helpers.js";

async function dmesg(stateDir: string, args: string[], uid = 0) {
  const r = { out: "", err: "", code: 0 };
  const io: DmesgIo = {
    stateDir,
    uid,
    stdout: (s) => {
      r.out += s;
    },
    stderr: (s) => {
      r.err += s;
    },
  };
  r.code = await dmesgMain(args, io);
  return r;
}

describe("dmesg (simulated kernel log)", () => {
  afterEach(cleanup);

  async function withXids() {
    const dir = await node("H100-80GB", 2);
    const [g0, g1] = state(dir).gpus;
    if (!g0 || !g1) throw new Error("two GPUs expected");
    const base = { xid: 31, name: "python3", messages: [mmuFaultMessage(4242)] };
    await logXid(dir, { ...base, gpu: g0, pci: pciOf(g0), pid: 4242, gi: 2, ci: 0 });
    await logXid(dir, { ...base, gpu: g0, pci: pciOf(g0), pid: 4243, gi: 13, ci: null });
    await logXid(dir, {
      ...base,
      gpu: g1,
      pci: pciOf(g1),
      pid: null,
      gi: null,
      ci: null,
      xid: 43,
      messages: ["Ch 00000008"],
    });
    return dir;
  }

  it("prints plain `[%5ld.%06ld]` stamps since the node's boot, with the GPU banner once per GPU", async () => {
    const dir = await withXids();
    const r = await dmesg(dir, []);
    assert.equal(r.code, 0);
    const lines = r.out.trimEnd().split("\n");
    assert.ok(
      lines.every((l) => /^\[\s*\d+\.\d{6}\] NVRM: /.test(l)),
      r.out,
    );
    assert.equal(lines.filter((l) => l.includes("NVRM: GPU at PCI:")).length, 2);
    assert.match(lines[0]!, /NVRM: GPU at PCI:0000:07:00: GPU-[0-9a-f-]{36}$/);
    assert.match(lines[1]!, /NVRM: GPU Board Serial Number: \d{13}$/);
    const stamps = lines.map((l) => Number(/^\[\s*([\d.]+)\]/.exec(l)![1]));
    assert.deepEqual(
      [...stamps].sort((a, b) => a - b),
      stamps,
      "time only grows",
    );
    const uptime = (Date.now() - bootTimeMs(dir)) / 1000;
    assert.ok(Math.abs(stamps.at(-1)! - uptime) < 5);
  });

  it("every time format reads back through the Xid parser, MIG attribution included", async () => {
    const dir = await withXids();
    for (const args of [
      [],
      ["-T"],
      ["--ctime"],
      ["--time-format=iso"],
      ["--time-format", "iso"],
      ["-t"],
      ["-r"],
    ]) {
      const r = await dmesg(dir, args);
      const events = parseXid(r.out).events;
      assert.deepEqual(
        events.map((e) => [e.pci, e.xid, e.pid, e.gpuInstanceId, e.computeInstanceId]),
        [
          ["0000:07:00", 31, 4242, 2, 0],
          ["0000:07:00", 31, 4243, 13, null],
          ["0000:0f:00", 43, null, null, null],
        ],
        args.join(" "),
      );
      const timed = !args.includes("-t") && !args.includes("-r");
      assert.ok(
        events.every((e) => (e.time !== null) === timed),
        `${args.join(" ")}: ${r.out}`,
      );
    }
  });

  it("writes the driver's own line layout, as in the real captures", () => {
    const gpu = newGpu("sim01", 0, "A100-40GB");
    const report = { gpu, pci: "0000:0a:00", xid: 45, pid: null, name: null, gi: null, ci: null };
    const line = formatXid({ ...report, messages: [] }, "Ch 00000008");
    assert.ok(capture("xid_31_62_45-storm_dmesg.txt").includes(`] ${line}\n`), line);
  });

  it("refuses what it does not simulate, and clearing needs root", async () => {
    const dir = await withXids();
    const bad = await dmesg(dir, ["--follow"]);
    assert.equal(bad.code, 1);
    assert.match(
      bad.err,
      /^dmesg: unrecognized option '--follow'\nTry 'dmesg --help' for more information\.$/m,
    );
    assert.equal((await dmesg(dir, ["--time-format=reltime"])).code, 1);
    const user = await dmesg(dir, ["-C"], 1000);
    assert.equal(user.code, 1);
    assert.match(user.err, /Operation not permitted/);
    assert.equal((await dmesg(dir, ["-C"])).code, 0);
    assert.equal(readFileSync(join(dir, KMSG_FILE), "utf8"), "");
    assert.equal((await dmesg(dir, [])).out, "");
  });
});
