#!/usr/bin/env node
// The simulated `dcgmi`, only `dcgmi dmon -e <fields> [-d <ms>] [-c <count>]`: the profiling
// field 1002 (DCGM_FI_PROF_SM_ACTIVE, `SMACT`, a 0-1 fraction) and 252 (DCGM_FI_DEV_FB_USED,
// `FBUSD`, MiB), one row per GPU without MIG and per GPU instance under MIG. It answers only
// while nv-hostengine runs on the node (`sim fault holder --name nv-hostengine`), as dcgmi
// needs the host engine.
//
// RECONSTRUCTED: workloads.md covers dcgmi diag and dcgmproftester, not dmon, so the layout is
// DCGM's documented one (a `#Entity` header with the fields' short names, an `ID` line, then
// `GPU <id>` rows each followed by its `GPU-I <id>` rows). The GPU-I id is DCGM's own entity id,
// not the MIG GI id: DCGM numbers the node's GPU instances itself (here 0, 1, … in GPU then GI
// order, as its discovery enumerates them), and `dcgmi discovery -c` (also simulated, its
// layout RECONSTRUCTED from DCGM's user guide: an `Instance Hierarchy` box, `-> I gpu/gi` rows
// with `GPU Instance (EntityID: n)`, `-> CI gpu/gi/ci` rows) maps them. SM activity is the share of the
// instance's SMs the stress-type processes keep busy: 1 while one computes (time-slicing keeps
// the SMs busy for whoever holds the slice), under MPS the sum of their thread percentages, and
// a planted tenant's jittered reading around its mean (nvsmi/tenant.ts).
import { readState, type SimGpu, type SimProcess } from "../nvsmi/state.js";
import { tenantsBusy } from "../nvsmi/tenant.js";
import { giUsedMiB, gpuUsedMiB, viewOf } from "../nvsmi/view.js";
import { DMON_FIELD_NAMES, hostEngineRuns, NO_HOST_ENGINE, parseDcgmi } from "./dcgmi-args.js";
import { isAlive } from "./proc.js";

const stateDir = process.env.SLICECHECK_SIM_STATE;
if (!stateDir) {
  process.stderr.write("dcgmi (simulated): SLICECHECK_SIM_STATE is not set\n");
  process.exit(255);
}
const call = parseDcgmi(process.argv.slice(2));
if (call.kind === "refused") {
  process.stderr.write(call.stderr);
  process.exit(255);
}
if (!hostEngineRuns(readState(stateDir).gpus)) {
  process.stdout.write(NO_HOST_ENGINE);
  process.exit(255);
}

/** DCGM's entity ids of the node's GPU instances: 0, 1, … in GPU then GI order. */
function entityIds(gpus: readonly SimGpu[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const g of [...gpus].sort((a, b) => a.index - b.index))
    if (g.mig.current)
      for (const gi of [...g.gis].sort((a, b) => a.id - b.id))
        out.set(`${g.index}/${gi.id}`, out.size);
  return out;
}

if (call.kind === "discovery") {
  const state = readState(stateDir);
  const ids = entityIds(state.gpus);
  const rule = `+${"-".repeat(19)}+${"-".repeat(68)}+`;
  const row = (a: string, b: string) => `| ${a.padEnd(18)}| ${b.padEnd(67)}|`;
  const out = [
    rule,
    `| ${"Instance Hierarchy".padEnd(86)}|`,
    `+${"=".repeat(19)}+${"=".repeat(68)}+`,
  ];
  let ciId = 0;
  for (const g of state.gpus) {
    out.push(row(`GPU ${g.index}`, `GPU ${g.uuid} (EntityID: ${g.index})`));
    if (!g.mig.current) continue;
    for (const gi of [...g.gis].sort((a, b) => a.id - b.id)) {
      out.push(
        row(
          `-> I ${g.index}/${gi.id}`,
          `GPU Instance (EntityID: ${ids.get(`${g.index}/${gi.id}`)})`,
        ),
      );
      for (const ci of [...gi.cis].sort((a, b) => a.id - b.id))
        out.push(
          row(`   -> CI ${g.index}/${gi.id}/${ci.id}`, `Compute Instance (EntityID: ${ciId++})`),
        );
    }
  }
  out.push(rule);
  process.stdout.write(`${out.join("\n")}\n`);
  process.exit(0);
}

/** A unit's SM activity, 0-1: its stress-type workloads', plus its planted tenants' readings
 * (`sim fault NODE tenant`: their pids are no processes of this machine). */
const busy = (procs: readonly SimProcess[]) => {
  const live = procs.filter(
    (p) => p.type !== "G" && isAlive(p.pid) && /stress|burn|all_reduce/.test(p.name),
  );
  const pct = live.reduce((s, p) => s + (p.threadPct ?? 100), 0) + (tenantsBusy(procs) ?? 0);
  return Math.min(1, pct / 100);
};

// Past the refusal and discovery, this is a dmon call.
const { fields, delayMs, count } = call;
const header = `#Entity   ${fields.map((f) => DMON_FIELD_NAMES[f]!.padStart(12)).join("")}`;
process.stdout.write(`${header}\nID\n`);
for (let n = 0; count === 0 || n < count; n++) {
  const state = readState(stateDir);
  for (const g of state.gpus) {
    const v = viewOf(state, g);
    const ids = entityIds(state.gpus);
    // The GPU's row, then its GPU instances' rows (by GI id), as dmon lists a GPU's entities.
    const gis = g.mig.current
      ? [...g.gis]
          .sort((a, b) => a.id - b.id)
          .map((gi) => ({
            name: `GPU-I ${ids.get(`${g.index}/${gi.id}`)}`,
            sm: busy(g.processes.filter((p) => p.gi === gi.id)),
            mem: giUsedMiB(v, gi),
            slices: gi.size,
          }))
      : [];
    const slices = gis.reduce((a, x) => a + x.slices, 0);
    const gpuSm = gis.length
      ? gis.reduce((a, x) => a + x.sm * x.slices, 0) / Math.max(1, slices)
      : busy(g.processes);
    const rows = [{ name: `GPU ${g.index}`, sm: gpuSm, mem: gpuUsedMiB(v) }, ...gis];
    for (const r of rows) {
      const cells = fields.map((f) => (f === 1002 ? r.sm.toFixed(3) : String(r.mem)).padStart(12));
      process.stdout.write(`${r.name.padEnd(10)}${cells.join("")}\n`);
    }
  }
  if (count !== 0 && n + 1 >= count) break;
  await new Promise((r) => setTimeout(r, delayMs));
}
