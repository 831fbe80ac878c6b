// The records' catalogue (`nvidia-smi mig -lgip`, `-lgipp`) read in the same call as the
// discovery started beside the node lock (SessionOpenOptions.withDiscovery), where each read was
// a login of its own: its reads wait for the lease as discovery's do, and what the records get
// is the same catalogue. Local transport, a node state folder of its own, and an nvidia-smi first
// on PATH that answers with real captures of an H100 with two 1g.10gb instances and writes
// down, at each call, the lease it finds.
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readTopologyEarly, recordNodes, TOPOLOGY_KEY } from "../../src/harness/run-records.js";
import { NodeSession } from "../../src/harness/session.js";
import type { Recorder } from "../../src/store/recorder.js";
import { type GpuTopology, TOPOLOGY_READS } from "../../src/store/topology.js";
import { runTagFor } from "../../src/transport/managed.js";
import type { Command } from "../../src/transport/types.js";
import { nodeSpec } from "../helpers/node.js";
import { waitFor } from "../helpers/procs.js";
import { tempDir } from "../helpers/tmp.js";

const node = nodeSpec("topo01", { host: "localhost", transport: "local" });
const CAPTURES = join(import.meta.dirname, "..", "..", "fixtures", "captures");
const capture = (name: string) => join(CAPTURES, `nvidia-smi_${name}.txt`);
const H100 = "H100-80GB-HBM3_580.173.02_2x1g.10gb";

/** Answers from the captures (their first line is the source); `-lgipp` waits 2 s while the
 * file `slow` exists, and removes it: the first call is still running when a test wants it. */
function fakeNvidiaSmi(bin: string, log: string, slow: string): void {
  mkdirSync(bin, { recursive: true });
  const script = `#!/bin/sh
l=$(cat "$SLICECHECK_STATE_DIR/node.lease" 2>/dev/null) || l=none
printf '%s | %s\\n' "$*" "$l" >> '${log}'
case "$*" in
  -L) tail -n +2 '${capture(`-L_${H100}`)}' ;;
  "") tail -n +2 '${capture(`default-table_${H100}`)}' ;;
  "mig -lgi") tail -n +2 '${capture(`mig-lgi_${H100}`)}' ;;
  "mig -lgip") tail -n +2 '${capture(`mig-lgip_${H100}-in-use`)}' ;;
  "mig -lgipp") [ -e '${slow}' ] && rm -f '${slow}' && sleep 2; tail -n +2 '${capture("mig-lgipp_H100-80GB-HBM3_unknown")}' ;;
  --query-gpu=*) echo "0, None, 81559" ;;
  *) exit 2 ;;
esac
`;
  writeFileSync(join(bin, "nvidia-smi"), script);
  chmodSync(join(bin, "nvidia-smi"), 0o755);
}

/** What recordNodes hands the records for each node: its catalogue. */
function recording(): { recorder: Recorder; topology: Map<string, Map<number, GpuTopology>> } {
  const topology = new Map<string, Map<number, GpuTopology>>();
  const recorder = {
    node: (r: { node: string }, t: Map<number, GpuTopology>) => topology.set(r.node, t),
  } as unknown as Recorder;
  return { recorder, topology };
}

describe("node session: the records' catalogue in discovery's call", function () {
  this.timeout(30_000);
  const dir = tempDir("topology-early");
  const saved = { PATH: process.env.PATH, STATE: process.env.SLICECHECK_STATE_DIR };
  let log = "";
  let slow = "";
  let n = 0;
  const calls = () =>
    existsSync(log) ? readFileSync(log, "utf8").trimEnd().split("\n").filter(Boolean) : [];
  /** The commands the session ran through its exec (the lock's own command does not). */
  let commands: Command[] = [];
  const original = NodeSession.prototype.exec;
  beforeEach(() => {
    const here = join(dir, `case${++n}`);
    log = join(here, "calls.log");
    slow = join(here, "slow");
    fakeNvidiaSmi(join(here, "bin"), log, slow);
    mkdirSync(join(here, "state"), { recursive: true });
    process.env.PATH = `${join(here, "bin")}:${saved.PATH}`;
    process.env.SLICECHECK_STATE_DIR = join(here, "state");
    commands = [];
    NodeSession.prototype.exec = function (this: NodeSession, c, o) {
      commands.push(c);
      return original.call(this, c, o);
    };
  });
  afterEach(() => {
    NodeSession.prototype.exec = original;
    process.env.PATH = saved.PATH;
    if (saved.STATE === undefined) delete process.env.SLICECHECK_STATE_DIR;
    else process.env.SLICECHECK_STATE_DIR = saved.STATE;
  });

  /** A session opened as a run opens it: the catalogue asked with the discovery beside the lock. */
  async function opened(runId: string): Promise<NodeSession> {
    const s = new NodeSession(node, runId);
    await s.open({
      lock: true,
      command: "test",
      discoverEarly: true,
      withDiscovery: { [TOPOLOGY_KEY]: TOPOLOGY_READS },
      besideLock: (x) => readTopologyEarly(x, x.readsBesideLock()),
    });
    return s;
  }

  it("is read in discovery's one call, once the lease is the run's, and recorded", async () => {
    const runId = "sc-test-topo1";
    const s = await opened(runId);
    try {
      const inv = await s.discover();
      assert.equal(inv.instances.length, 2);
      const { recorder, topology } = recording();
      await recordNodes(recorder, [s], null, String);
      const gpu0 = topology.get(node.name)?.get(0);
      assert.ok(gpu0, `no catalogue recorded: ${JSON.stringify([...topology])}`);
      assert.deepEqual(
        gpu0.profiles.map((p) => p.id),
        [19, 20, 15, 14, 9, 5, 0],
      );
      assert.deepEqual(gpu0.placements.find((p) => p.profileId === 15)?.starts, [0, 2, 4, 6]);
      // One call: discovery's four reads and the catalogue's two, in one shell.
      assert.equal(commands.length, 1, JSON.stringify(commands).slice(0, 400));
      const text = JSON.stringify(commands[0]);
      for (const r of ["-L", "mig -lgi", "mig -lgip", "mig -lgipp"]) assert.ok(text.includes(r));
      const seen = calls();
      assert.equal(seen.filter((l) => / \| /.test(l)).length, 6, seen.join("\n"));
      const tag = runTagFor(runId, node.name);
      for (const l of seen) assert.match(l, new RegExp(` held ${tag}$`), "a read before the lease");
    } finally {
      await s.close();
    }
  });

  it("is read again for the records where discovery was read anew while that call ran", async () => {
    writeFileSync(slow, "");
    const s = await opened("sc-test-topo2");
    try {
      // As after a layout's apply: the early call, still waiting for its slow -lgipp, is
      // stopped, and its catalogue is no answer.
      assert.ok(await waitFor(() => calls().some((l) => l.startsWith("mig -lgipp ")), 10_000));
      await s.discover(true);
      const { recorder, topology } = recording();
      await recordNodes(recorder, [s], null, String);
      const gpu0 = topology.get(node.name)?.get(0);
      assert.equal(gpu0?.profiles.length, 7, JSON.stringify([...(topology.get(node.name) ?? [])]));
      assert.equal(gpu0?.placements.length, 7);
      const lgipp = calls().filter((l) => l.startsWith("mig -lgipp "));
      assert.equal(lgipp.length, 2, calls().join("\n"));
    } finally {
      await s.close();
    }
  });
});
