// The node's kill-by-tag, run by a real POSIX shell on real processes, no sshd: a Slurm job that
// `slicecheck exec -- sbatch …` submitted inherits the command's tags (sbatch's --export=ALL),
// and the command's watchdog killed it with SIGHUP whenever it had started before the command's
// channel closed (its TaskProlog, "TaskProlog failed status=1", in a CI run of 5 December 2026).
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  killCommandScript,
  killRunScript,
  listRunScript,
  NEW_TAGGED,
  watchdogEndScript,
  wrapCommand,
} from "../../src/transport/remote-scripts.js";
import { childrenOf } from "../helpers/procs.js";

/** This process's environment less Slurm's and slicecheck's own variables. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(SLURM_|SLICECHECK_)/.test(k)),
  );
}

/** A `sleep 60` with these variables; resolves to its signal once it ends. */
function sleeper(env: Record<string, string>): { p: ChildProcess; ended: Promise<string | null> } {
  const p = spawn("sleep", ["60"], { env: { ...cleanEnv(), ...env }, stdio: "ignore" });
  return { p, ended: new Promise((r) => p.on("exit", (_c, s) => r(s))) };
}

const alive = (p: ChildProcess) => p.exitCode === null && p.signalCode === null;

/** A grep first on PATH whose environ scans (`-lzxsF`, the kill sequence's) numbered in `misses`
 * find nothing: the exec window, when a live process's environ reads empty, played on demand. */
function blindGrep(misses: number[]): { bin: string; missed: () => number[]; remove: () => void } {
  const bin = mkdtempSync(join(tmpdir(), "slicecheck-grep-"));
  const real = spawnSync("sh", ["-c", "command -v grep"], { encoding: "utf8" }).stdout.trim();
  const script = [
    "#!/bin/sh",
    `d=${bin}`,
    `if [ "$1" = -lzxsF ]; then i=1; while [ -e "$d/c$i" ]; do i=$((i+1)); done; : > "$d/c$i"`,
    `  case " ${misses.join(" ")} " in *" $i "*) : > "$d/missed$i"; exit 1;; esac; fi`,
    `exec ${real} "$@"`,
  ];
  writeFileSync(join(bin, "grep"), `${script.join("\n")}\n`, { mode: 0o755 });
  return {
    bin,
    missed: () => misses.filter((i) => existsSync(join(bin, `missed${i}`))),
    remove: () => rmSync(bin, { recursive: true, force: true }),
  };
}

describe("kill by tag (sh on real processes, no sshd)", function () {
  this.timeout(20_000);
  const started: ChildProcess[] = [];
  const start = (env: Record<string, string>) => {
    const s = sleeper(env);
    started.push(s.p);
    return s;
  };
  afterEach(() => {
    for (const p of started.splice(0)) p.kill("SIGKILL");
  });

  it("kills the command's own processes, in a job or not, and spares the Slurm jobs it submitted", async () => {
    const own = start({ SLICECHECK_CMD: "t1", SLICECHECK_JOB: "" });
    const ownInJob = start({ SLICECHECK_CMD: "t1", SLURM_JOB_ID: "41", SLICECHECK_JOB: "41" });
    // sbatch from a session outside any job, and from inside job 41 (run --via slurm).
    const job = start({ SLICECHECK_CMD: "t1", SLURM_JOB_ID: "42", SLICECHECK_JOB: "" });
    const nested = start({ SLICECHECK_CMD: "t1", SLURM_JOB_ID: "43", SLICECHECK_JOB: "41" });
    const other = start({ SLICECHECK_CMD: "t2", SLICECHECK_JOB: "" });
    await new Promise((r) => setTimeout(r, 200));
    const r = spawnSync("sh", ["-c", killCommandScript("t1", null)], {
      env: cleanEnv(),
      encoding: "utf8",
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /alive=2\b/, r.stdout);
    assert.match(r.stdout, /killed=2\b/, r.stdout);
    assert.equal(await own.ended, "SIGTERM");
    assert.equal(await ownInJob.ended, "SIGTERM");
    assert.ok(alive(job.p), "the job submitted from outside a job was killed");
    assert.ok(alive(nested.p), "the job submitted from inside job 41 was killed");
    assert.ok(alive(other.p), "another command's process was killed");
  });

  it("looks again when its first scan finds nothing (a process mid-exec shows no environ)", async () => {
    // Every exec leaves a moment when the process's environ reads empty, so a scan can miss a
    // stray that was exec'ing as its command ended: here the first scan misses it.
    const g = blindGrep([1]);
    try {
      const stray = start({ SLICECHECK_CMD: "t3", SLICECHECK_JOB: "" });
      await new Promise((r) => setTimeout(r, 200));
      const r = spawnSync("sh", ["-c", killCommandScript("t3", null)], {
        env: { ...cleanEnv(), PATH: `${g.bin}:${process.env.PATH}` },
        encoding: "utf8",
      });
      assert.deepEqual(g.missed(), [1], "the planted grep was not used");
      assert.match(r.stdout, /alive=1\b/, r.stdout);
      assert.equal(await stray.ended, "SIGTERM");
    } finally {
      g.remove();
    }
  });

  it("waits for the tagged to go until two scans in a row find none, then KILLs", async () => {
    // A process that ignores TERM, missed by the wait's scan and by the one after it: the KILL
    // scan must still come after a scan that saw it gone twice, not once.
    const g = blindGrep([3, 4]);
    const p = spawn("sh", ["-c", "trap '' TERM; exec sleep 60"], {
      env: { ...cleanEnv(), SLICECHECK_CMD: "t4", SLICECHECK_JOB: "" },
      stdio: "ignore",
    });
    started.push(p);
    const ended = new Promise((r) => p.on("exit", (_c, sig) => r(sig)));
    try {
      await new Promise((r) => setTimeout(r, 200));
      spawnSync("sh", ["-c", killCommandScript("t4", null)], {
        env: { ...cleanEnv(), PATH: `${g.bin}:${process.env.PATH}` },
        encoding: "utf8",
      });
      assert.deepEqual(g.missed(), [3, 4], "the planted grep did not miss where planted");
      const late = new Promise((r) => setTimeout(() => r("still running"), 3000));
      assert.equal(await Promise.race([ended, late]), "SIGKILL");
    } finally {
      g.remove();
    }
  });

  /** The last pid the kernel gave: a command started now gets a pid above it. */
  const lastPid = () => Number(readFileSync("/proc/sys/kernel/ns_last_pid", "utf8"));
  /** A grep first on PATH that notes each use: the end scan under bash must use none. */
  const tripwireGrep = () => {
    const g = blindGrep([]);
    return { ...g, used: () => existsSync(join(g.bin, "c1")) };
  };

  it("at a command's end, bash finds a stray among what started after the command, sparing the rest", async () => {
    const since = lastPid();
    const own = start({ SLICECHECK_CMD: "t5", SLICECHECK_JOB: "" });
    const job = start({ SLICECHECK_CMD: "t5", SLURM_JOB_ID: "42", SLICECHECK_JOB: "" });
    const other = start({ SLICECHECK_CMD: "t6", SLICECHECK_JOB: "" });
    await new Promise((r) => setTimeout(r, 200));
    // $1 is the command's pid (its process group): here a pid that no longer exists.
    const end = (tag: string, env: NodeJS.ProcessEnv = cleanEnv()) =>
      spawnSync("bash", ["-c", watchdogEndScript(tag), "watchdog", String(since)], {
        env,
        encoding: "utf8",
      });
    const r = end("t5");
    assert.match(r.stdout, /alive=1\b/, r.stdout + r.stderr);
    assert.equal(await own.ended, "SIGHUP");
    assert.ok(alive(job.p), "the Slurm job it submitted was killed");
    assert.ok(alive(other.p), "another command's process was killed");
    // A command that left nothing (every watchdog's usual end): no process started to say so.
    const g = tripwireGrep();
    try {
      const none = end("t9", { ...cleanEnv(), PATH: `${g.bin}:${process.env.PATH}` });
      assert.match(none.stdout, /alive=0\b/, none.stdout + none.stderr);
      assert.equal(g.used(), false, "grep was used");
    } finally {
      g.remove();
    }
  });

  it("where the pid counter may have wrapped since the command began, it scans everything", async () => {
    // A command that began at a pid above the last one given: the counter went round since.
    const stray = start({ SLICECHECK_CMD: "t7", SLICECHECK_JOB: "" });
    await new Promise((r) => setTimeout(r, 200));
    const since = String(lastPid() + 1000);
    const r = spawnSync("bash", ["-c", watchdogEndScript("t7"), "watchdog", since], {
      env: cleanEnv(),
      encoding: "utf8",
    });
    assert.match(r.stdout, /alive=1\b/, r.stdout + r.stderr);
    assert.equal(await stray.ended, "SIGHUP");
  });

  /** The node's fork count so far (/proc/stat's `processes`), as WATCHDOG_FORKS takes it. */
  const forks = () => Number(/^processes (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))?.[1]);

  /** A watchdog's end for `tag` as if its command began at pid `since` with the node's fork count
   * at `f0` and 1000 s ago: too long for the time rule on any pid_max up to 20 million. */
  const lateEnd = (tag: string, since: number, f0: string, bin: string) =>
    spawnSync(
      "bash",
      ["-c", `SECONDS=1000; ${watchdogEndScript(tag)}`, "watchdog", String(since), f0],
      { env: { ...cleanEnv(), PATH: `${bin}:${process.env.PATH}` }, encoding: "utf8" },
    );

  it("a command that ran long but saw few forks: bash's scan still, by the fork count", async () => {
    const since = lastPid();
    const f0 = String(forks());
    const stray = start({ SLICECHECK_CMD: "t10", SLICECHECK_JOB: "" });
    await new Promise((r) => setTimeout(r, 200));
    const g = tripwireGrep();
    try {
      // Nothing left (a watchdog's usual end): no grep, which only the scan of everything uses.
      const none = lateEnd("t12", since, f0, g.bin);
      assert.match(none.stdout, /alive=0\b/, none.stdout + none.stderr);
      assert.equal(g.used(), false, "grep was used");
      const r = lateEnd("t10", since, f0, g.bin);
      assert.match(r.stdout, /alive=1\b/, r.stdout + r.stderr);
      assert.equal(await stray.ended, "SIGHUP");
    } finally {
      g.remove();
    }
  });

  it("no fork count, or more forks since than a wrap of the pid counter needs: it scans everything", () => {
    const pidMax = Number(readFileSync("/proc/sys/kernel/pid_max", "utf8"));
    const since = lastPid();
    for (const f0 of ["", String(forks() - pidMax)]) {
      const g = tripwireGrep();
      try {
        const r = lateEnd("t11", since, f0, g.bin);
        assert.match(r.stdout, /alive=0\b/, r.stdout + r.stderr);
        assert.equal(g.used(), true, `F0=${f0 || "(none)"}: no scan of everything`);
      } finally {
        g.remove();
      }
    }
  });

  it("bash's scan says when a live process's environ reads empty (an exec under way), not for a zombie", async () => {
    const since = lastPid();
    const scan = (tag: string) =>
      spawnSync("bash", ["-c", `${NEW_TAGGED} tn ${tag} ${since}; echo "T=$T E=$E"`], {
        env: cleanEnv(),
        encoding: "utf8",
      }).stdout.trim();
    // A zombie: `true` ends and its parent, exec'd into sleep, never reaps it.
    const z = spawn("sh", ["-c", "true & exec sleep 60"], { stdio: "ignore", env: cleanEnv() });
    started.push(z);
    const tagged = start({ SLICECHECK_CMD: "t8", SLICECHECK_JOB: "" });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(scan("SLICECHECK_CMD=t8"), `T= ${tagged.p.pid} E=`);
    // A process whose environ is empty stands for one caught in the middle of an exec.
    const bare = spawn("env", ["-i", "sleep", "60"], { stdio: "ignore" });
    started.push(bare);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(scan("SLICECHECK_CMD=t8"), `T= ${tagged.p.pid} E=1`);
  });

  it("bash's scan matches the tag as a whole entry, not inside another's value", async () => {
    const since = lastPid();
    const tagged = start({ SLICECHECK_CMD: "t14", SLICECHECK_JOB: "" });
    // \x02 is the separator the scan joins a process's entries with before it looks closer.
    start({ X: "a\x02SLICECHECK_CMD=t14\x02b", SLICECHECK_JOB: "" });
    start({ XSLICECHECK_CMD: "t14", SLICECHECK_JOB: "" });
    await new Promise((r) => setTimeout(r, 200));
    const r = spawnSync(
      "bash",
      ["-c", `${NEW_TAGGED} tn SLICECHECK_CMD=t14 ${since}; echo "T=$T"`],
      {
        env: cleanEnv(),
        encoding: "utf8",
      },
    );
    assert.equal(r.stdout.trim(), `T= ${tagged.p.pid}`, r.stderr);
  });

  it("bash's scan passes over processes above the last pid given: from before the counter went round", () => {
    // A pid namespace of its own, whose counter can be set without moving the machine's (other
    // tests' watchdogs read that one): a process at 20001 from before a wrap, the command's at
    // 101. On the simulated cluster at 256 nodes, the long-lived processes left above a wrapped
    // counter were read by every node's end scan (140-s execs instead of 8 s).
    const body = [
      "echo 20000 > /proc/sys/kernel/ns_last_pid",
      "env SLICECHECK_CMD=t15 SLICECHECK_JOB= sleep 60 & old=$!",
      "echo 100 > /proc/sys/kernel/ns_last_pid",
      "env SLICECHECK_CMD=t15 SLICECHECK_JOB= sleep 60 & new=$!",
      "sleep 0.2",
      `${NEW_TAGGED} tn SLICECHECK_CMD=t15 100; echo "T=$T old=$old new=$new"`,
      "kill $old $new",
    ].join("\n");
    const r = spawnSync("unshare", ["--pid", "--fork", "--mount-proc", "bash", "-c", body], {
      env: cleanEnv(),
      encoding: "utf8",
    });
    assert.equal(r.stdout.trim(), "T= 101 old=20001 new=101", r.stderr);
  });

  for (const shell of ["bash", "sh"])
    it(`a ${shell} killer that carries the run's tag kills the run's processes, never itself`, async () => {
      const victim = start({ SLICECHECK_RUN: "r9@n1", SLICECHECK_JOB: "" });
      await new Promise((r) => setTimeout(r, 200));
      // As `slicecheck cleanup` runs it: a remote command of the same run, tagged like the rest.
      const r = spawnSync(shell, ["-c", killRunScript("r9@n1")], {
        env: { ...cleanEnv(), SLICECHECK_RUN: "r9@n1", SLICECHECK_JOB: "" },
        encoding: "utf8",
      });
      assert.equal(r.signal, null, `the killer was killed: ${r.stdout}${r.stderr}`);
      assert.match(r.stdout, /killed=1\b/, r.stdout + r.stderr);
      assert.equal(await victim.ended, "SIGTERM");
    });

  /** The pids whose parent is `ppid`, with their argv. */
  const children = (ppid: number) =>
    childrenOf(ppid).flatMap((pid) => {
      try {
        return [{ pid, argv: readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0") }];
      } catch {
        return []; // gone meanwhile
      }
    });

  for (const shell of ["bash", "sh"])
    it(`the watchdog of a ${shell} login: a ${shell === "bash" ? "subshell (no bash started)" : "bash of its own"}, it kills a stray once the channel ends`, async () => {
      // The command leaves a stray outside its process group, then waits; its stdin, the
      // channel's, stays open until the test ends it.
      const cmd = wrapCommand(
        {
          argv: ["sh", "-c", "setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $!; exec sleep 60"],
        },
        { runTag: "r1@n1", cmdTag: "w1", deadlineS: 30, sudo: false },
      );
      const login = spawn(shell, ["-c", cmd], { env: cleanEnv(), stdio: ["pipe", "pipe", "pipe"] });
      started.push(login);
      let out = "";
      login.stdout!.on("data", (d) => {
        out += d;
      });
      const ended = new Promise((r) => login.on("exit", r));
      for (let i = 0; i < 100 && !/\d+\n/.test(out); i++)
        await new Promise((r) => setTimeout(r, 50));
      const stray = Number(out.trim());
      assert.ok(stray > 0, `no stray pid printed: ${out}`);
      // The login shell exec'd timeout: its children are the recorder's side and the watchdog.
      const own = children(login.pid as number);
      const exec = own.filter((c) => c.argv.includes("watchdog"));
      assert.equal(own.length, 2, JSON.stringify(own));
      assert.equal(exec.length, shell === "bash" ? 0 : 1, JSON.stringify(own));
      login.stdin!.end(); // the channel ends: the controller went away
      await ended;
      let gone = false;
      for (let i = 0; i < 60 && !gone; i++) {
        gone =
          !existsSync(`/proc/${stray}`) ||
          /^\S+ \(\S+\) Z/.test(readFileSync(`/proc/${stray}/stat`, "utf8"));
        if (!gone) await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(gone, `the stray ${stray} outlived its command's channel`);
    });

  for (const shell of ["bash", "sh"])
    it(`the watchdog of a ${shell} login takes the fork count at the start: a command past the time rule ends without a scan of everything`, async () => {
      // The pid counter may wrap while the command runs (pid_max is 32768 here, and the other
      // test files fork beside this one): then the watchdog rightly scans everything, and the
      // case is tried again, at most three times.
      for (let attempt = 1; ; attempt++) {
        const g = tripwireGrep();
        try {
          const cmd = wrapCommand(
            { argv: ["sleep", "1.5"] },
            { runTag: "r2@n1", cmdTag: "w2", deadlineS: 30, sudo: false },
          );
          const env = { ...cleanEnv(), PATH: `${g.bin}:${process.env.PATH}` };
          const login = spawn(shell, ["-c", cmd], { env, stdio: ["pipe", "ignore", "ignore"] });
          started.push(login);
          const ended = new Promise((r) => login.on("exit", r));
          await new Promise((r) => setTimeout(r, 300));
          const [wd] = children(login.pid as number).filter((c) => c.argv[0] !== "sleep");
          assert.ok(wd, "no watchdog");
          await ended;
          login.stdin!.end();
          for (let i = 0; i < 50 && existsSync(`/proc/${wd.pid}`); i++)
            await new Promise((r) => setTimeout(r, 100));
          assert.equal(existsSync(`/proc/${wd.pid}`), false, "the watchdog did not end");
          if (lastPid() < (login.pid as number) && attempt < 3) continue;
          // Past 0.6 s, where pid_max is 32768 (here) the time rule no longer rules a wrap out.
          assert.equal(g.used(), false, "the watchdog's end scanned every process with grep");
          return;
        } finally {
          g.remove();
        }
      }
    });

  it("lists the run's processes without the Slurm jobs it submitted", async () => {
    const own = start({ SLICECHECK_RUN: "r1@n1", SLICECHECK_JOB: "" });
    const job = start({ SLICECHECK_RUN: "r1@n1", SLURM_JOB_ID: "42", SLICECHECK_JOB: "" });
    await new Promise((r) => setTimeout(r, 200));
    const r = spawnSync("sh", ["-c", listRunScript("r1@n1")], {
      env: cleanEnv(),
      encoding: "utf8",
    });
    const pids = r.stdout
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((l) => Number(l.split("\t")[0]));
    assert.ok(pids.includes(own.p.pid as number), r.stdout);
    assert.ok(!pids.includes(job.p.pid as number), r.stdout);
  });

  it("a wrapped command records the job it was started in, or none", () => {
    const cmd = wrapCommand(
      { argv: ["sh", "-c", 'printf "%s|%s" "$SLICECHECK_CMD" "$SLICECHECK_JOB"'] },
      { runTag: "r1@n1", cmdTag: "c1", deadlineS: 10, sudo: false, noWatcher: true },
    );
    const inJob = spawnSync("sh", ["-c", cmd], {
      env: { ...cleanEnv(), SLURM_JOB_ID: "77" },
      encoding: "utf8",
    });
    assert.equal(inJob.stdout, "c1|77", inJob.stderr);
    const outside = spawnSync("sh", ["-c", cmd], { env: cleanEnv(), encoding: "utf8" });
    assert.equal(outside.stdout, "c1|", outside.stderr);
  });

  it("tags and environment reach the command without an env process, unless a name is the shell's", () => {
    // An env first on PATH that leaves a mark: the login shell exports the tags and execs
    // timeout, one process fewer per command, except where `export` would fail (UID in bash).
    const bin = mkdtempSync(join(tmpdir(), "slicecheck-env-"));
    const real = spawnSync("sh", ["-c", "command -v env"], { encoding: "utf8" }).stdout.trim();
    writeFileSync(join(bin, "env"), `#!/bin/sh\n: > ${bin}/used\nexec ${real} "$@"\n`, {
      mode: 0o755,
    });
    const show = { argv: ["sh", "-c", 'printf "%s|%s|%s" "$SLICECHECK_CMD" "$A" "$UID"'] };
    // No watcher: spawnSync's stdin ends at once, which to a watcher is the channel gone.
    const opts = { runTag: "r1@n1", cmdTag: "c1", deadlineS: 10, sudo: false, noWatcher: true };
    const env = { ...cleanEnv(), PATH: `${bin}:${process.env.PATH}` };
    try {
      for (const shell of ["sh", "bash"]) {
        rmSync(join(bin, "used"), { force: true });
        const plain = wrapCommand(show, { ...opts, env: { A: "x y'z" } });
        const r = spawnSync(shell, ["-c", plain], { env, encoding: "utf8" });
        assert.equal(r.stdout.replace(/\|\d*$/, "|"), "c1|x y'z|", `${shell}: ${r.stderr}`);
        assert.ok(!existsSync(join(bin, "used")), `${shell}: no env process for plain names`);
      }
      const owned = wrapCommand(show, { ...opts, env: { A: "1", UID: "4242" } });
      const r = spawnSync("bash", ["-c", owned], { env, encoding: "utf8" });
      assert.equal(r.stdout, "c1|1|4242", r.stderr);
      assert.ok(existsSync(join(bin, "used")), "UID is bash's own: passed on through env");
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });
});
