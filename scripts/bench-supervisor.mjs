// `BENCH=supervisor npm run bench`: the node-side CPU of starting a phase's workloads through
// each supervisor (src/transport/supervisor-perl.ts, supervisor-script.ts): 28 recorded
// `sleep 1` (the 4-node row's 4 x 7, on one node) sent at once, as the controller sends them,
// to perl's and to the shell's (bash, on a PATH without perl), each run until every exit frame
// came; to perl's both as it starts them itself (`r`, direct-start.ts) and as wrapCommand's
// line (`s`, what a perl without Time::HiRes is sent). CPU is the user and system time of the
// whole process tree (bash's `time`), so it holds the supervisor, its helpers, `timeout`, the
// recorder and `sleep` itself. Prints figures; asserts nothing.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const COUNT = 28;

/** A PATH with /usr/bin's tools but perl. */
function pathWithoutPerl(dir) {
  const bin = join(dir, "bin");
  mkdirSync(bin);
  for (const f of readdirSync("/usr/bin"))
    if (f !== "perl") symlinkSync(join("/usr/bin", f), join(bin, f));
  return bin;
}

export async function benchSupervisor(root) {
  const mod = (m) => import(join(root, "dist", "transport", m));
  const { supervisorCommand } = await mod("supervisor-perl.js");
  const { escapeLine } = await mod("supervisor-script.js");
  const { wrapCommand } = await mod("remote-scripts.js");
  const { directStart } = await mod("direct-start.js");
  const dir = mkdtempSync(join(tmpdir(), "slicecheck-bench-sup-"));
  try {
    // `s`: wrapCommand's line (sh, timeout, the recorder's bash); `r`: perl starts it itself.
    const requests = (kind) =>
      Array.from({ length: COUNT }, (_, i) => {
        const o = { runTag: "bench", cmdTag: `bench.c${i}`, deadlineS: 60, sudo: false };
        const wo = { ...o, record: true, noWatcher: true };
        const cmd = { argv: ["sleep", "1"] };
        const text = kind === "r" ? directStart(cmd, wo) : wrapCommand(cmd, wo);
        return `${kind} c${i} ${escapeLine(text)}\n`;
      }).join("");
    writeFileSync(join(dir, "requests-s"), requests("s"));
    writeFileSync(join(dir, "requests-r"), requests("r"));
    writeFileSync(join(dir, "command"), supervisorCommand("bench", false));
    const rows = [];
    for (const [name, path, kind] of [
      ["perl's, starting each itself (r)", process.env.PATH, "r"],
      ["perl's, wrapCommand's line (s)", process.env.PATH, "s"],
      ["the shell's (bash)", pathWithoutPerl(dir), "s"],
    ]) {
      const runs = [];
      for (let k = 0; k < Number(process.env.BENCH_REPS ?? 3); k++) {
        // The requests, then stdin held open until 28 exit frames came, then its end.
        const script = `TIMEFORMAT='%3U %3S'; time { { cat requests-${kind}; while [ "$(grep -c ' x ' out 2>/dev/null)" -lt ${COUNT} ]; do sleep 0.1; done; } | PATH="$P" sh -c "$(cat command)" > out; }; grep -c ' x 0$' out`;
        const r = spawnSync("bash", ["-c", script], {
          cwd: dir,
          env: { ...process.env, P: path },
          encoding: "utf8",
        });
        const [cpu, ok] = [r.stderr.trim().split("\n").at(-1), r.stdout.trim()];
        const [u, s] = cpu.split(" ").map(Number);
        if (!(u + s >= 0))
          throw new Error(`${name}: no CPU time in ${JSON.stringify(r.stderr)} ${r.stdout}`);
        runs.push({ cpu: u + s, ok: Number(ok) });
        rmSync(join(dir, "out"), { force: true });
      }
      runs.sort((a, b) => a.cpu - b.cpu);
      const mid = runs[Math.floor(runs.length / 2)];
      rows.push({
        supervisor: name,
        workloads: COUNT,
        "exited 0": mid.ok,
        "CPU, median (s)": mid.cpu.toFixed(2),
        "per workload (ms)": ((mid.cpu / COUNT) * 1000).toFixed(0),
        runs: runs.map((x) => x.cpu.toFixed(2)).join(", "),
      });
    }
    console.log(
      `supervisor: ${COUNT} recorded \`sleep 1\` started at once on one node, CPU of the whole tree`,
    );
    console.table(rows);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
