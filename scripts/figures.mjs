#!/usr/bin/env node
// `npm run figures`: the closing figures of the route and communication work, measured on the
// simulator. (1) Soft routes: the slowdown per tenant count (2 to 7) under time-slicing and MPS,
// and what a noisy neighbour does to a victim on each route (time-slicing, MPS, MPS with limits,
// MIG). (2) Bus bandwidth: all_reduce across two whole H100s (-g 2) against one rank per
// MIG instance (3g.40gb and 1g.10gb slices: busbw is 0 with one rank, so their algbw is shown
// beside it) and the two-rank attempt across two instances. A script, not a test: it prints.
//   FIGURES_DURATION=2 (seconds per window)
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(root, "bin", "slicecheck.js");
const dir = mkdtempSync(join(tmpdir(), "slicecheck-figures-"));
const inv = join(dir, "sim.yaml");
const duration = process.env.FIGURES_DURATION ?? "2";

function sc(...args) {
  const r = spawnSync(process.execPath, [cli, ...args], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  return { code: r.status ?? 2, stdout: r.stdout, stderr: r.stderr };
}
function must(...args) {
  const r = sc(...args);
  if (r.code !== 0 && r.code !== 1)
    throw new Error(`slicecheck ${args.join(" ")}: exit ${r.code}\n${r.stderr}`);
  return r;
}
const checks = (out) =>
  readFileSync(join(out, "checks.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));

try {
  const spec = join(dir, "spec.yaml");
  writeFileSync(
    spec,
    [
      "nodes:",
      "  - { name: soft01, gpu: A100-80GB, gpus: 1, driver: 535.183.01 }",
      "  - { name: whole01, gpu: H100-80GB, gpus: 2, driver: 580.65.06 }",
      "  - { name: mig3g, gpu: H100-80GB, gpus: 1, driver: 580.65.06 }",
      "  - { name: mig1g, gpu: H100-80GB, gpus: 1, driver: 580.65.06 }",
      "",
    ].join("\n"),
  );
  must("sim", "up", "--spec", spec, "--inventory", inv);
  const layout = join(root, "fixtures", "layouts", "default.yaml");
  const iso = join(root, "test", "fixtures", "isolation-layout.yaml");
  const journal = ["--journal-dir", join(dir, "journal"), "--allow-reset"];
  must("apply", "-i", inv, "--nodes", "mig3g", iso, "-c", "two-3g", ...journal);
  must("apply", "-i", inv, "--nodes", "mig1g", layout, "-c", "all-1g.10gb", ...journal);

  // (1) Soft routes and MIG under a noisy neighbour, and the tenants.
  const isoOut = join(dir, "iso");
  must(
    ...["run", "-i", inv, "--nodes", "soft01,mig3g", "--suites", "isolation"],
    ...["--faults", "noisy", "--tenants", "2-7", "--duration", duration, "--out", isoOut],
  );
  const rows = JSON.parse(readFileSync(join(isoOut, "verdicts.json"), "utf8")).rows;
  console.log("\n== soft routes: slowdown per tenant count (each tenant against one alone) ==");
  for (const r of rows.filter((x) => x.verdict === "slowdownPerTenants")) {
    const f = r.evidence.figures;
    const cells = [2, 3, 4, 5, 6, 7].map((n) => `${n}: x${f[`tenants ${n} slowdown`] ?? "?"}`);
    console.log(`${r.route.padEnd(18)} ${cells.join("  ")}   [${r.status}]`);
  }
  console.log("\n== a noisy neighbour, per route (victimsUnaffected) ==");
  for (const r of rows.filter((x) => x.verdict === "victimsUnaffected")) {
    const slow = Object.entries(r.evidence.figures).filter(([k]) => / slowdown$/.test(k));
    console.log(
      `${r.route.padEnd(52)} ${slow.map(([k, v]) => `${k.replace(/ slowdown$/, "")} x${v}`).join(", ")}  [${r.status}${r.characterisation ? ", characterised" : ""}]`,
    );
  }

  // (2) Bus bandwidth: whole cards against slices.
  const ncclOut = join(dir, "nccl");
  must("run", "-i", inv, "--suites", "nccl", "--duration", duration, "--out", ncclOut);
  const cs = checks(ncclOut);
  console.log("\n== all_reduce_perf bus bandwidth on the simulator (8 MiB to 128 MiB) ==");
  for (const c of cs.filter((x) => x.title.startsWith("all_reduce across"))) {
    const f = c.figures;
    console.log(
      `${c.node.padEnd(8)} ${c.title.padEnd(75)} busbw ${f["busbw GB/s"] ?? "-"} GB/s  ${f.outcome ? `(${f.outcome})` : ""} [${c.code}]`,
    );
  }
  const per = new Map();
  for (const c of cs.filter((x) => x.title === "all_reduce_perf completes without wrong results")) {
    const k = `${c.node} ${c.instance?.profile ?? "-"}`;
    per.set(k, [...(per.get(k) ?? []), c.figures.algbw]);
  }
  for (const [k, v] of per)
    console.log(
      `${k.padEnd(24)} one rank per instance (x${v.length}): busbw 0 (2(n-1)/n with n=1), algbw ${Math.min(...v)}-${Math.max(...v)} GB/s at 128 MiB`,
    );
} finally {
  sc("sim", "down", "--inventory", inv);
  rmSync(dir, { recursive: true, force: true });
}
