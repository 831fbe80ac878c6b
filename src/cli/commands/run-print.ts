// The terminal tables of `slicecheck run`.
import type { IsolationSummary } from "../../chaos/isolation.js";
import type { summarize } from "../../workloads/summary.js";
import { displayPath, type Out, table } from "../context.js";

export function printIsolation(s: IsolationSummary, io: Out, outDir: string): void {
  io.out(
    table([
      ["NODE", "GPU", "MODE", "AGGRESSOR", "FAULT", "VERDICT", "STATUS", "EVIDENCE"],
      ...s.rows.map((r) => [
        r.node,
        String(r.gpu),
        r.mode,
        `${r.aggressor} (${r.profile})`,
        r.fault,
        r.verdict,
        r.status.toUpperCase(),
        r.summary,
      ]),
    ]),
  );
  for (const p of s.problems) io.out(`  ${p.node}: ${p.message}`);
  if (s.rows.some((r) => r.mode !== "mig" && r.mode !== "exclusive"))
    io.out(
      "note: time-slicing and MPS are soft routes, not isolation: processes share the GPU's throughput (and, without a pinned memory limit, its memory), and under MPS one client's fatal fault kills the others; what a route does not promise is reported as a characterisation (code CHARACTERISED) with its figure, and only a broken promise fails",
    );
  const counts = ["passed", "failed", "broken"]
    .map((k) => `${s.rows.filter((r) => r.status === k).length} ${k}`)
    .join(", ");
  io.out(`isolation: ${counts}; history and verdicts in ${displayPath(outDir)}`);
}

export function printRun(
  s: ReturnType<typeof summarize>,
  io: Out,
  outDir: string,
  ms: number,
): void {
  const fmt = (v: number | undefined, d = 2) => (v === undefined ? "-" : v.toFixed(d));
  io.out(
    table([
      [
        "NODE",
        "INSTANCE",
        "PROFILE",
        "SLICES",
        "SUITE",
        "TFLOP/S",
        "ALGBW GB/S",
        "ERRORS",
        "STATUS",
        "NOTE",
      ],
      ...s.rows.map((r) => [
        r.node,
        r.instance,
        r.profile,
        r.placement ?? "-",
        r.suite,
        fmt(r.metrics.tflops),
        fmt(r.metrics.algbw),
        fmt(r.metrics.errors ?? r.metrics.wrong, 0),
        r.status.toUpperCase(),
        r.note ?? "",
      ]),
    ]),
  );
  for (const p of s.problems) io.out(`  ${p.node}${p.suite ? ` (${p.suite})` : ""}: ${p.message}`);
  const counts = ["ok", "failed", "broken"]
    .map((k) => `${s.rows.filter((r) => r.status === k).length} ${k}`)
    .join(", ");
  io.out(`${counts}; ${(ms / 1000).toFixed(1)} s; results in ${displayPath(outDir)}`);
}
