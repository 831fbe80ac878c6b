// `BENCH=transport npm run bench`: the SSH transport's timings against one simulated node (real
// sshd), the figures its tests used to bound with a clock and now leave here: 15 commands of
// 1.5 s over one connection (the channel budget queues the rest), a deadline's kill, a dropped
// connection, and a SIGKILLed controller whose remote commands the node's watchdog must stop.
// Prints figures; asserts nothing (timing belongs here, not in tests).
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const sleep = (n) => new Promise((r) => setTimeout(r, n));

/** Pids of this machine's processes whose environment holds exactly `entry` (the nodes are local). */
function taggedPids(entry) {
  const out = [];
  for (const d of readdirSync("/proc").filter((x) => /^\d+$/.test(x))) {
    try {
      if (readFileSync(`/proc/${d}/environ`, "latin1").split("\0").includes(entry)) out.push(d);
    } catch {
      /* gone, or not ours to read */
    }
  }
  return out;
}

/** Polls until `cond` holds (or 120 s pass: a figure of 120000 then means "never"). */
async function until(cond) {
  const t0 = process.hrtime.bigint();
  while (!cond() && ms(t0) < 120_000) await sleep(50);
  return ms(t0);
}

/** The children of `pid` (the sshd listener's session processes). */
function childrenOf(pid) {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, "utf8");
        return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1] === String(pid);
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function measure(root, dir, inv) {
  const { loadInventory } = await import(join(root, "dist/inventory/load.js"));
  const { SshTransport, MAX_CHANNELS } = await import(join(root, "dist/transport/ssh.js"));
  const { newRunId } = await import(join(root, "dist/transport/open.js"));
  const { runTagFor } = await import(join(root, "dist/transport/managed.js"));
  const node = loadInventory(inv, { sshConfig: null }).nodes[0];
  const rows = [];
  const row = (what, figure, ideal) => rows.push({ what, ms: Math.round(figure), ideal });

  let t = new SshTransport(node, { runId: newRunId(), attempts: 1 });
  await t.connect();
  let t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: 15 }, () => t.exec({ shell: "sleep 1.5" })));
  row(`15 commands of 1.5 s, ${MAX_CHANNELS} channels`, ms(t0), "3000 (two waves)");

  t0 = process.hrtime.bigint();
  await t.exec({ shell: "sleep 300 & sleep 300 & wait" }, { timeoutMs: 1500 });
  row("a 1.5 s deadline on `sleep 300`: exec returns", ms(t0), "1500");
  await t.close();

  const run = newRunId();
  const tag = `SLICECHECK_RUN=${runTagFor(run, node.name)}`;
  t = new SshTransport(node, { runId: run, attempts: 1 });
  await t.connect();
  const listener = Number(readFileSync(join(dir, ".sim.d/nodes/sim01/sshd.pid"), "utf8"));
  const p = t.exec({ argv: ["sleep", "300"] }, { timeoutMs: 120_000 }).catch((e) => e);
  await until(() => taggedPids(tag).length > 0);
  t0 = process.hrtime.bigint();
  for (const pid of childrenOf(listener)) process.kill(pid, "SIGKILL");
  await p;
  row("connection dropped: CONNECTION_LOST", ms(t0), "keepalive");
  row(
    "connection dropped: the node's processes gone",
    ms(t0) + (await until(() => taggedPids(tag).length === 0)),
    "< 30000 (the message's promise)",
  );
  await t.close().catch(() => {});

  const run2 = newRunId();
  const tag2 = `SLICECHECK_RUN=${runTagFor(run2, node.name)}`;
  const file = join(dir, "controller.mjs");
  writeFileSync(
    file,
    `import { loadInventory } from ${JSON.stringify(join(root, "dist/inventory/load.js"))};
import { SshTransport } from ${JSON.stringify(join(root, "dist/transport/ssh.js"))};
const node = loadInventory(${JSON.stringify(inv)}, { sshConfig: null }).nodes[0];
await new SshTransport(node, { runId: ${JSON.stringify(run2)} }).exec({ shell: "sleep 300 & sleep 300; wait" }, { timeoutMs: 600000 });\n`,
  );
  const child = spawn(process.execPath, [file], { stdio: "ignore" });
  await until(() => taggedPids(tag2).length >= 2);
  child.kill("SIGKILL");
  row(
    "controller SIGKILLed: the node's processes gone",
    await until(() => taggedPids(tag2).length === 0),
    "< 30000 (was a test's bound)",
  );
  return rows;
}

export async function benchTransport(root) {
  const dir = mkdtempSync(join(tmpdir(), "slicecheck-bench-transport-"));
  const inv = join(dir, "sim.yaml");
  const cli = join(root, "bin", "slicecheck.js");
  const sc = (...args) =>
    execFileSync(process.execPath, [cli, ...args], { cwd: root, stdio: "ignore" });
  try {
    sc("sim", "up", "--nodes", "1", "--inventory", inv);
    const rows = await measure(root, dir, inv);
    console.log("ssh transport against one simulated node (real sshd); one run each");
    console.table(rows);
  } finally {
    try {
      sc("sim", "down", "--inventory", inv);
    } catch {
      /* the cluster did not start */
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
