#!/usr/bin/env node
// `npm run demo`: the main job on the built-in simulated cluster. Four nodes (real sshd each,
// simulated A100 and H100 GPUs): doctor, nvidia-smi on every node, an offline plan, then a run
// that applies a MIG layout, stresses every instance, and restores the original layout, which
// is also the measurement before a driver upgrade with a planted regression caught by `diff`;
// and the isolation story the
// compliance page shows: an OOM and a crash in one instance of each H100 while its neighbours
// are measured, clean on sim03, and on sim04 a planted isolation violation that is caught.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const inv = "inventory/sim.yaml";
// Labels are unique per demo, so `diff` compares this demo's runs, not an earlier demo's.
const stamp = new Date().toISOString().replace(/[-:]/g, "").slice(0, 15);
const demoLabel = (what) => `demo-${what}-${stamp}`;
const step = (title, args, okCodes = [0]) => {
  console.log(`\n== ${title}\n$ slicecheck ${args.join(" ")}`);
  const r = spawnSync(process.execPath, [join(root, "bin", "slicecheck.js"), ...args], {
    stdio: "inherit",
    cwd: root,
  });
  if (!okCodes.includes(r.status ?? -1)) {
    console.error(`demo: \`slicecheck ${args.join(" ")}\` exited ${r.status}`);
    return false;
  }
  return true;
};

let ok = step(
  "start 4 simulated GPU nodes (one sshd each on 127.0.0.x): 2x A100 on R535, 2x H100 on R580",
  ["sim", "up", "--spec", "inventory/demo-cluster.yaml", "--inventory", inv],
);
try {
  ok &&= step("check the nodes", ["doctor", "-i", inv]);
  ok &&= step("list the GPUs of every node at once", ["exec", "-i", inv, "--", "nvidia-smi", "-L"]);
  ok &&= step("plan NVIDIA's all-balanced layout for an H100, offline", [
    "plan",
    "fixtures/layouts/default.yaml",
    "-c",
    "all-balanced",
    "--gpu",
    "H100-80GB",
  ]);
  // A driver upgrade with a planted regression, caught by `diff` and shown in the reports. The
  // measurement before it is the run that applies the layout, stresses every instance and
  // restores the original layout: one run, not a trial run and then a measured one.
  const run = (label) => [
    "run",
    "-i",
    inv,
    "--layout",
    "fixtures/layouts/default.yaml",
    "-c",
    "all-balanced",
    "--suites",
    "stress",
    "--duration",
    "2",
    "--label",
    label,
    "--out",
    `reports/demo/${label}`,
  ];
  ok &&= step(
    `apply it, stress every MIG instance for 2 s, and restore the original layout: the measurement before the upgrade (label '${demoLabel("before")}')`,
    run(demoLabel("before")),
  );
  ok &&= step("the nodes are back as they were (MIG off, no GPU instance)", [
    "exec",
    "-i",
    inv,
    "--",
    "nvidia-smi",
    "--query-gpu=name,mig.mode.current",
    "--format=csv,noheader",
  ]);
  for (const node of ["sim01", "sim02"])
    ok &&= step(
      `upgrade ${node} (A100) from 535.183.01 to 580.65.06 with a planted regression: 1g.10gb stress 20 % slower`,
      [
        "sim",
        "upgrade-driver",
        node,
        "--to",
        "580.65.06",
        "--regress",
        "1g.10gb:tflops=0.8",
        "--inventory",
        inv,
      ],
    );
  // The stress suite judges each instance's share of its GPU: the slowed 1g.10gb instances fall
  // below their A100's median TFLOP/s per SM, so this run fails (exit 1) before diff says why.
  ok &&= step(
    `measure after the upgrade (label '${demoLabel("after")}'; exit 1 expected: the 1g.10gb instances fall below their share)`,
    run(demoLabel("after")),
    [1],
  );
  ok &&= step(
    "compare: the planted regression must show up (exit 1 expected: a regression was found)",
    ["diff", "--before", demoLabel("before"), "--after", demoLabel("after")],
    [1],
  );
  // The isolation story: one instance of each H100 runs out of memory, then crashes, while its
  // neighbours' throughput, memory and kernel log are measured. sim04's simulated GPU gets a
  // planted violation first (a neighbour's fault reaches the others), which must be caught.
  ok &&= step(
    "plant an isolation violation on sim04: a fault in one MIG instance reaches its neighbours",
    ["sim", "fault", "sim04", "isolation-broken", "--inventory", inv],
  );
  const isoOut = `reports/demo/isolation-${stamp}`;
  ok &&= step(
    "OOM and crash in one instance of each H100, neighbours measured (exit 1 expected: sim04's violation is caught)",
    [
      "run",
      "-i",
      inv,
      "--nodes",
      "sim03,sim04",
      "--layout",
      "fixtures/layouts/default.yaml",
      "-c",
      "all-balanced",
      "--suites",
      "layout,isolation",
      "--faults",
      "oom,crash",
      "--aggressors",
      "1",
      "--duration",
      "3",
      "--label",
      demoLabel("isolation"),
      "--out",
      isoOut,
    ],
    [1],
  );
  ok &&= step(
    "the Allure report and the compliance page and PDF of the isolation run (exit 1: its verdict)",
    ["report", "--results", `${isoOut}/allure-results`, "--single-file", "--pdf", "--exit-code"],
    [1],
  );
} finally {
  step("stop the simulated cluster", ["sim", "down", "--inventory", inv]);
}
console.log(
  ok
    ? "\ndemo finished: logs and measurements in reports/demo/; Allure report in reports/allure-report/ (single file: reports/allure-report/single-file/index.html), compliance PDF: reports/allure-report/compliance.pdf"
    : "\ndemo failed",
);
process.exit(ok ? 0 : 1);
