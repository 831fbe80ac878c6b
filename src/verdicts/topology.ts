// Topology and NVLink of a node's whole GPUs (issue 22 item 2). Pure: they read what the suite
// collected.
// - nvlinkTopology: `nvidia-smi nvlink -s` and `topo -m` against what the catalogue says the
//   board has (mig/catalog/nvlink.ts). A link the board should have that is inactive fails
//   (NVLINK_DOWN), one slower than its rated speed fails (NVLINK_SLOW), a pair of GPUs of a
//   board wired without bridges whose matrix cell is not NV# fails (TOPOLOGY_NO_NVLINK).
//   Bridged PCIe boards: a GPU with no active link has no bridge fitted, which is a build
//   choice, recorded and not failed; one with some but not all of its bridge's links fails.
//   `nvlink -e` counters are recorded as figures: low CRC and replay rates are normal on fast
//   serial links, so no threshold is invented here.
// - allReduceOverNvlink: the `-g N` all_reduce's bus bandwidth at its largest size against a
//   floor (BUSBW_BELOW_FLOOR), and its transport from NCCL_DEBUG=INFO: where the topology says
//   NV# between the GPUs, a transport other than P2P (SHM through host memory, NET) fails
//   (NCCL_TRANSPORT_NOT_NVLINK).
import { resolveBoard } from "../mig/catalog/catalog.js";
import { defaultBusbwFloorGBs, type NvlinkSpec, nvlinkOf } from "../mig/catalog/nvlink.js";
import { type NvlinkErrorsResult, parseNvlinkErrors, parseNvlinkStatus } from "../nvsmi/nvlink.js";
import { nvlinksOf, parseTopo, type TopoResult } from "../nvsmi/topo.js";
import { parseNcclTests } from "../workloads/parsers/nccl-tests.js";
import { parseNcclTransport, transportWords } from "../workloads/parsers/nccl-transport.js";
import { type CommOutput, multiGpu } from "./comm.js";
import type { Verdict } from "./types.js";

type Figures = Verdict["evidence"]["figures"];

const verdict = (
  name: string,
  status: Verdict["status"],
  summary: string,
  figures: Figures,
  text: string,
  code?: string,
): Verdict => ({
  name,
  status,
  summary,
  evidence: { figures, logLines: text.trimEnd().split("\n").slice(-12) },
  ...(code ? { code } : {}),
});

export interface TopologyInput {
  topo: string;
  nvlinkStatus: string;
  /** `nvidia-smi nvlink -e`, where it could be read. */
  nvlinkErrors?: string | null;
  /** The whole GPUs judged (their indices). */
  gpus: number[];
  /** What the board should have; null: no NVLink. */
  spec: NvlinkSpec | null;
}

interface Problem {
  code: string;
  text: string;
}

/** One GPU's links against the board's: problems, and its `active/expected` figure. */
function linkProblems(gpu: number, links: { link: number; gbs: number | null }[], s: NvlinkSpec) {
  const active = links.filter((l) => l.gbs !== null && l.gbs > 0);
  const out: Problem[] = [];
  const inactive = links.filter((l) => !active.includes(l)).map((l) => l.link);
  if (s.bridge && active.length === 0) return { out, figure: `0/${s.links} (no bridge)` };
  if (active.length < s.links)
    out.push({
      code: "NVLINK_DOWN",
      text: `GPU ${gpu}: ${active.length} of ${s.links} NVLinks active (inactive: ${inactive.join(", ") || "not listed"})`,
    });
  const slow = active.filter((l) => l.gbs! < s.linkGBs * 0.99);
  if (slow.length)
    out.push({
      code: "NVLINK_SLOW",
      text: `GPU ${gpu}: link(s) ${slow.map((l) => `${l.link} at ${l.gbs} GB/s`).join(", ")} below the rated ${s.linkGBs} GB/s`,
    });
  return { out, figure: `${active.length}/${s.links}` };
}

function pairProblems(t: TopoResult, gpus: number[], s: NvlinkSpec | null): Problem[] {
  if (!s || s.bridge) return [];
  const out: Problem[] = [];
  for (const a of gpus)
    for (const b of gpus.filter((x) => x > a)) {
      const cell = t.gpus.find((g) => g.index === a)?.links[`GPU${b}`];
      if (nvlinksOf(cell) === 0)
        out.push({
          code: "TOPOLOGY_NO_NVLINK",
          text: `GPU ${a} - GPU ${b}: ${cell ?? "absent"} in topo -m, not NV#`,
        });
    }
  return out;
}

function errorFigures(e: NvlinkErrorsResult | null, gpus: number[]): Figures {
  if (!e) return {};
  const sum = (name: string) =>
    e.gpus
      .filter((g) => gpus.includes(g.index))
      .flatMap((g) => Object.values(g.links))
      .reduce((a, c) => a + (c[name] ?? 0), 0);
  return { "NVLink replay errors": sum("Replay Errors"), "NVLink CRC errors": sum("CRC Errors") };
}

export function nvlinkTopology(i: TopologyInput): Verdict {
  const name = "nvlinkTopology";
  const text = `${i.topo}\n${i.nvlinkStatus}`;
  let topo: TopoResult;
  let status: ReturnType<typeof parseNvlinkStatus>;
  try {
    topo = parseTopo(i.topo);
    status = parseNvlinkStatus(i.nvlinkStatus);
  } catch (e) {
    return verdict(name, "broken", (e as Error).message, { gpus: i.gpus.length }, text);
  }
  let errors: NvlinkErrorsResult | null = null;
  try {
    errors = i.nvlinkErrors ? parseNvlinkErrors(i.nvlinkErrors) : null;
  } catch {
    errors = null; // The counters are figures only; an unreadable -e takes nothing away.
  }
  const figures: Figures = { gpus: i.gpus.length, ...errorFigures(errors, i.gpus) };
  const pairs = i.gpus.flatMap((a) =>
    i.gpus.filter((b) => b > a).map((b) => topo.gpus.find((g) => g.index === a)?.links[`GPU${b}`]),
  );
  figures.topology = [...new Set(pairs.map((c) => c ?? "?"))].join(",");
  // Links first: a link down is the cause, the PCIe path in the matrix its consequence.
  const problems: Problem[] = [];
  if (i.spec) {
    for (const g of i.gpus) {
      const links = status.gpus.find((x) => x.index === g)?.links ?? [];
      const r = linkProblems(g, links, i.spec);
      figures[`GPU ${g} NVLinks active`] = r.figure;
      problems.push(...r.out);
    }
  }
  problems.push(...pairProblems(topo, i.gpus, i.spec));
  if (problems.length)
    return verdict(
      name,
      "failed",
      problems.map((p) => p.text).join("; "),
      figures,
      text,
      problems[0]!.code,
    );
  const what = i.spec
    ? `every expected NVLink active at ${i.spec.linkGBs} GB/s`
    : "the board has no NVLink (PCIe)";
  return verdict(
    name,
    "passed",
    `${i.gpus.length} GPUs, topology ${figures.topology}: ${what}`,
    figures,
    text,
  );
}

export interface FloorInput {
  /** GB/s at the largest size, null: no floor (no NVLink, nothing configured). */
  floorGBs: number | null;
  /** Where the floor comes from, in words (catalogue default, configuration). */
  floorSource: string;
  /** The topology says NV# between every pair of the GPUs. */
  nvlinkInTopology: boolean;
}

/** `all_reduce_perf -g N` (with NCCL_DEBUG=INFO): no wrong results, busbw floor, transport. */
export function allReduceOverNvlink(o: CommOutput, gpus: number, f: FloorInput): Verdict {
  const base = multiGpu(o, gpus);
  if (base.status !== "passed") return base;
  const r = parseNcclTests(o.stdout);
  const busbw = r.rows.at(-1)?.outOfPlace.busbw ?? null;
  const t = parseNcclTransport(`${o.stdout}\n${o.stderr}`);
  const figures: Figures = {
    ...base.evidence.figures,
    "largest size busbw GB/s": busbw,
    "busbw floor GB/s": f.floorGBs,
    "floor source": f.floorSource,
    transport: transportWords(t) ?? "not logged",
  };
  const problems: Problem[] = [];
  if (f.floorGBs !== null && (busbw === null || busbw < f.floorGBs))
    problems.push({
      code: "BUSBW_BELOW_FLOOR",
      text: `bus bandwidth ${busbw ?? "?"} GB/s at the largest size, below the floor of ${f.floorGBs} GB/s (${f.floorSource})`,
    });
  const offPath = (["SHM", "NET"] as const).filter((k) => t.counts[k]);
  if (
    f.nvlinkInTopology &&
    (offPath.length > 0 || (!t.counts.P2P && !t.counts.NVLS && transportWords(t)))
  )
    problems.push({
      code: "NCCL_TRANSPORT_NOT_NVLINK",
      text: `topology says NVLink but NCCL used ${transportWords(t)}`,
    });
  const text = `${o.stdout}\n${o.stderr}`;
  if (problems.length)
    return verdict(
      base.name,
      "failed",
      `${gpus} whole GPUs: ${problems.map((p) => p.text).join("; ")}`,
      figures,
      text,
      problems[0]!.code,
    );
  const floor = f.floorGBs === null ? "no floor" : `floor ${f.floorGBs} GB/s`;
  return verdict(
    base.name,
    "passed",
    `${base.summary}; ${busbw} GB/s at the largest size (${floor}), transport ${transportWords(t) ?? "not logged"}`,
    figures,
    text,
  );
}

/** The NVLink a GPU of this name should have (catalogue), null where none or unknown. */
export function expectedNvlink(gpuName: string): NvlinkSpec | null {
  const b = resolveBoard(gpuName);
  return b ? nvlinkOf(b.product, b.board.key) : null;
}

/** True when `topo -m` says NV# between every pair of these GPUs; false when unreadable. */
export function nvlinkBetweenAll(topo: string | null, gpus: number[]): boolean {
  if (!topo) return false;
  try {
    const t = parseTopo(topo);
    return gpus.every((a) =>
      gpus.every(
        (b) => a === b || nvlinksOf(t.gpus.find((g) => g.index === a)?.links[`GPU${b}`]) > 0,
      ),
    );
  } catch {
    return false;
  }
}

/**
 * The floor for an all_reduce across these whole GPUs: the configured one, else the catalogue
 * default of a board wired for NVLink (bridged boards only where the topology shows the
 * bridges), else none.
 */
export function floorFor(
  spec: NvlinkSpec | null,
  nvlinkInTopology: boolean,
  configured: number | null,
): { floorGBs: number | null; floorSource: string } {
  if (configured !== null) return { floorGBs: configured, floorSource: "configured (busbw_floor)" };
  if (!spec || (spec.bridge && !nvlinkInTopology))
    return { floorGBs: null, floorSource: "none: no NVLink expected" };
  return {
    floorGBs: defaultBusbwFloorGBs(spec),
    floorSource: `40 % of ${spec.links} x ${spec.linkGBs} GB/s NVLink (catalogue default)`,
  };
}
