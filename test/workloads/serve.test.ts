// The serve workload's lines (issue 22 item 3): printed by serve.cu with BUILTIN_PRINTF and by
// the simulator with the format functions, read back by parseBuiltinOutput into the p50, p99
// and requests/s measurements; a malformed line is refused, a run cut short is incomplete, a
// planted wrong answer shows in the errors; and the simulator's latency model keeps a MIG
// slice's latency while time-slicing raises the tail.
import assert from "node:assert/strict";
import { serveFigures } from "../../sim/src/workloads/serve-model.js";
import { incompleteReason } from "../../src/workloads/completion.js";
import {
  BUILTIN_PRINTF,
  formatServeFinalLine,
  formatServeLine,
  parseBuiltinOutput,
} from "../../src/workloads/parsers/builtin.js";
import { metricsOf, serveSpec } from "../../src/workloads/specs.js";
import { assertParseError } from "./captures.js";

/** Just enough of C's printf for the serve formats: %.Nf and %llu. */
function printf(format: string, ...args: number[]): string {
  let i = 0;
  return format.replace(/%(?:\.(\d)f|llu)/g, (_m, digits: string | undefined) => {
    const arg = args[i++]!;
    return digits === undefined ? String(arg) : arg.toFixed(Number(digits));
  });
}

const RUN = [
  "slicecheck-device program=serve uuid=MIG-1 sms=16 cc=9.0 memory_bytes=10737418240 name=NVIDIA H100 80GB HBM3 MIG 1g.10gb\n",
  printf(BUILTIN_PRINTF.serve, 0.3, 0.101, 0.122, 7012.4, 0),
  printf(BUILTIN_PRINTF.serve, 0.6, 0.1, 0.13, 7001, 0),
  printf(BUILTIN_PRINTF.serve, 0.9, 0.099, 0.5, 6990.2, 0),
  printf(BUILTIN_PRINTF.serveFinal, 0.1, 0.2, 7000.5, 0, 6300),
].join("");

describe("serve lines and measurements", () => {
  it("reads what serve.cu prints, the same as the simulator's format functions write", () => {
    const out = parseBuiltinOutput(RUN);
    assert.deepEqual(out.serve[2], { t: 0.9, p50Ms: 0.099, p99Ms: 0.5, rps: 6990.2, errors: 0 });
    assert.deepEqual(out.serveFinal, {
      p50Ms: 0.1,
      p99Ms: 0.2,
      rps: 7000.5,
      errors: 0,
      requests: 6300,
    });
    assert.equal(`${formatServeLine(out.serve[0]!)}\n`, `${RUN.split("\n")[1]!}\n`);
    assert.equal(`${formatServeFinalLine(out.serveFinal!)}\n`, `${RUN.split("\n")[4]!}\n`);
    assert.deepEqual(metricsOf("serve", RUN), [
      { metric: "p50_ms", value: 0.1, unit: "ms" },
      { metric: "p99_ms", value: 0.2, unit: "ms" },
      { metric: "rps", value: 7000.5, unit: "req/s" },
      { metric: "errors", value: 0, unit: "count" },
    ]);
  });

  it("a run killed before its final line reports its worst interval p99, never a better one", () => {
    const cut = RUN.split("\n").slice(0, 4).join("\n");
    const m = Object.fromEntries(metricsOf("serve", cut).map((x) => [x.metric, x.value]));
    assert.equal(m.p99_ms, 0.5);
    assert.equal(m.p50_ms, 0.1);
    const spec = serveSpec(1, 0.3);
    assert.equal(
      incompleteReason(spec, { exitCode: 0, signal: null, timedOut: false, stdout: cut }),
      "ended without its final line",
    );
    assert.equal(
      incompleteReason(spec, { exitCode: 0, signal: null, timedOut: false, stdout: RUN }),
      null,
    );
  });

  it("a planted wrong answer shows in the errors; a malformed line is refused", () => {
    const wrong = printf(BUILTIN_PRINTF.serveFinal, 0.1, 0.2, 7000, 1, 100);
    assert.equal(metricsOf("serve", wrong).find((x) => x.metric === "errors")?.value, 1);
    assertParseError(
      () => parseBuiltinOutput("SLICECHECK serve t=0.3 p50_ms=0.1 p99_ms=x rps=1 errors=0\n"),
      "builtin",
      1,
    );
    assert.throws(() => formatServeLine({ t: 1, p50Ms: -1, p99Ms: 1, rps: 1, errors: 0 }));
  });
});

describe("the simulated serve's latency model", () => {
  const h100 = { fp32PerSm: 67 / 132, memoryMiB: 10240 };
  it("a slice alone keeps a sub-millisecond request with a tight tail", () => {
    const f = serveFigures({ ...h100, share: 1 });
    assert.ok(f.p50Ms > 0.03 && f.p50Ms < 1, `p50 ${f.p50Ms}`);
    assert.ok(f.p99Ms / f.p50Ms < 1.5);
    assert.ok(f.rps > 500);
  });
  it("a shared compute unit slows the request and adds a time slice to the tail", () => {
    const alone = serveFigures({ ...h100, share: 1 });
    const shared = serveFigures({ ...h100, share: 0.5 });
    assert.ok(shared.p50Ms > alone.p50Ms);
    assert.ok(shared.p99Ms > alone.p99Ms + 1, `${shared.p99Ms} vs ${alone.p99Ms}`);
  });
  it("a planted tail factor raises p99 alone, p50 stays", () => {
    const f = serveFigures({ ...h100, share: 1, tailFactor: 4 });
    const base = serveFigures({ ...h100, share: 1 });
    assert.equal(f.p50Ms, base.p50Ms);
    assert.ok(Math.abs(f.p99Ms / base.p99Ms - 4) < 1e-9);
  });
});
