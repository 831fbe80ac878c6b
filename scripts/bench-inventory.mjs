// `BENCH=inventory npm run bench`: how long loading an inventory and `slicecheck inventory
// --list` take, and the peak memory (max RSS) of the process, for 1 000 / 10 000 / 100 000
// hosts, as one INI range line (`gpu[1:N]`), an INI file of one host per line and a native
// YAML inventory of N nodes. Each figure comes from a fresh process (GNU time's %e and %M).
// Prints figures; asserts nothing. BENCH_INVENTORY_SIZES=1000,10000 picks the sizes;
// BENCH_INVENTORY_TIMEOUT_S (default 300) gives up on one measurement.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

function inventories(dir, n) {
  const pad = String(n).length;
  const name = (i) => `gpu${String(i).padStart(pad, "0")}`;
  const lines = [];
  for (let i = 1; i <= n; i++)
    lines.push(`${name(i)} ansible_host=10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
  const yaml = ["defaults: {user: ops, ssh_config: none}", "nodes:"];
  for (let i = 1; i <= n; i++)
    yaml.push(`  ${name(i)}: {host: 10.${i >> 16}.${(i >> 8) & 255}.${i & 255}}`);
  const files = {
    "INI range": ["range.ini", `[gpus]\ngpu[${"1".padStart(pad, "0")}:${n}]\n`],
    "INI lines": ["lines.ini", `[gpus]\n${lines.join("\n")}\n`],
    "native YAML": ["native.yaml", `${yaml.join("\n")}\n`],
  };
  return Object.entries(files).map(([kind, [file, text]]) => {
    const path = join(dir, `${n}-${file}`);
    writeFileSync(path, text);
    return { kind, path };
  });
}

/** Wall and CPU (user + system) seconds and max RSS (MB) of one process, or why there are none.
 * CPU time is the figure to compare on a shared machine, where wall time waits for a core. */
function measure(args, timeoutS, env) {
  const r = spawnSync("/usr/bin/time", ["-f", "%e %U %S %M", ...args], {
    encoding: "utf8",
    timeout: timeoutS * 1000,
    killSignal: "SIGTERM",
    maxBuffer: 1 << 30,
    env,
  });
  if (r.error?.code === "ETIMEDOUT" || r.signal)
    return { wall: `> ${timeoutS} s`, cpu: "-", rss: "-" };
  const m = /(\d+\.\d+) (\d+\.\d+) (\d+\.\d+) (\d+)\s*$/.exec(r.stderr);
  if (r.status !== 0 || !m)
    return { wall: `exit ${r.status}`, cpu: "-", rss: r.stderr.split("\n")[0] };
  return {
    wall: `${Number(m[1]).toFixed(2)} s`,
    cpu: `${(Number(m[2]) + Number(m[3])).toFixed(2)} s`,
    rss: `${Math.round(Number(m[4]) / 1024)} MB`,
  };
}

export function benchInventory(root) {
  const sizes = (process.env.BENCH_INVENTORY_SIZES ?? "1000,10000,100000").split(",").map(Number);
  const timeoutS = Number(process.env.BENCH_INVENTORY_TIMEOUT_S ?? 300);
  const cli = join(root, "bin", "slicecheck.js");
  const load = join(root, "dist", "inventory", "load.js");
  if (!existsSync(load)) throw new Error("run `npm run build` first");
  const dir = mkdtempSync(join(tmpdir(), "slicecheck-bench-inventory-"));
  // HOME: the CLI reads ~/.ssh/config for Ansible inventories; an empty one keeps yours out.
  const env = { ...process.env, HOME: dir };
  const rows = [];
  try {
    for (const n of sizes) {
      for (const { kind, path } of inventories(dir, n)) {
        const loadOnly = measure(
          [
            process.execPath,
            "--input-type=module",
            "-e",
            `const { loadInventory } = await import(${JSON.stringify(load)}); const inv = loadInventory(${JSON.stringify(path)}, { sshConfig: null }); if (inv.nodes.length !== ${n}) throw new Error("got " + inv.nodes.length);`,
          ],
          timeoutS,
          env,
        );
        const list = measure(
          [process.execPath, cli, "inventory", "-i", path, "--list"],
          timeoutS,
          env,
        );
        rows.push({
          hosts: n,
          inventory: kind,
          "load wall": loadOnly.wall,
          "load CPU": loadOnly.cpu,
          "load max RSS": loadOnly.rss,
          "--list wall": list.wall,
          "--list CPU": list.cpu,
          "--list max RSS": list.rss,
        });
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    "inventory: one fresh process per figure (Node start-up included, about 0.1 s); `inventory --list` prints the table of every node and the groups",
  );
  console.table(rows);
}
