// `slicecheck advise`: before slicing, look at the jobs. Reads a `sacct -P` history (a file, or
// `--slurm`: sacct run on a node of the inventory over the normal transport), and prints the
// job-size distribution, the smallest MIG profile each job fits on each catalogued product, and
// a recommendation with the figures behind it (src/report/advise). Exit 0 when advice was given,
// 3 on bad input (an unreadable line is named FILE:LINE), 2 when the node could not be read.

import { writeFileSync } from "node:fs";
import { SlicecheckError } from "../../errors.js";
import { PRODUCTS, type ProductKey, resolveBoard } from "../../mig/catalog/index.js";
import { analyse } from "../../report/advise/analyse.js";
import { recommend } from "../../report/advise/recommend.js";
import { parseSacct, SACCT_FORMAT } from "../../report/advise/sacct.js";
import { fanOut, newRunId } from "../../transport/open.js";
import type { Transport } from "../../transport/types.js";
import { didYouMean } from "../../util/closest.js";
import { loadSelected, type Out } from "../context.js";
import { readInput, STDIN } from "../input.js";
import { adviseJson, histogramOf, printAdvice } from "./advise-print.js";

export interface AdviseOptions {
  sacct?: string;
  format?: string;
  product?: string;
  slurm?: boolean;
  inventory?: string;
  nodes?: string;
  since?: string;
  nodeCount?: number;
  json?: boolean;
  svg?: string;
}

const usage = (m: string, ctx: Record<string, unknown> = {}) =>
  new SlicecheckError("USAGE", m, ctx);

function productOf(name: string): ProductKey {
  const hit = resolveBoard(name);
  if (!hit)
    throw usage(
      `unknown GPU '${name}'${didYouMean(name, PRODUCTS)}; give a catalogued product (${PRODUCTS.join(", ")}) or an nvidia-smi name`,
      { product: name },
    );
  return hit.product;
}

async function run(t: Transport, argv: string[], what: string): Promise<string> {
  const r = await t.exec({ argv }, { timeoutMs: 120_000 });
  if (r.exitCode !== 0)
    throw new SlicecheckError(
      "SLURM",
      `${what} on ${t.node.name} failed (exit ${r.exitCode}): ${r.stderr.trim() || r.stdout.trim()}`,
      { node: t.node.name },
    );
  return r.stdout;
}

/** sacct (and, without --product, the GPU's name) from the first selected node. */
async function fromSlurm(o: AdviseOptions): Promise<{ text: string; file: string; gpu?: string }> {
  const { nodes } = loadSelected({ inventory: o.inventory, nodes: o.nodes });
  const node = nodes[0]!;
  const argv = [
    "sacct",
    "-P",
    "-n",
    "--allusers",
    // sacct's default window is since midnight; a history needs weeks.
    `--starttime=${o.since ?? "now-30days"}`,
    "--endtime=now",
    `--format=${SACCT_FORMAT.join(",")}`,
  ];
  const [r] = await fanOut([node], { runId: newRunId(), attempts: 1 }, async (t) => {
    const text = await run(t, argv, "sacct");
    const gpu = o.product
      ? undefined
      : (await run(t, ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], "nvidia-smi"))
          .split("\n")[0]
          ?.trim();
    return { text, gpu };
  });
  if (r!.error !== undefined) throw r!.error;
  return { ...r!.value!, file: `sacct on ${node.name}` };
}

async function fromFile(file: string): Promise<string> {
  try {
    return await readInput(file);
  } catch (e) {
    throw usage(`--sacct ${file}: cannot read: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
}

export async function adviseCommand(o: AdviseOptions, io: Out): Promise<number> {
  if (!o.sacct === !o.slurm)
    throw usage(
      "advise reads one history: --sacct FILE (sacct -P output, - for stdin) or --slurm (run sacct on a node)",
    );
  const src = o.slurm
    ? await fromSlurm(o)
    : {
        text: await fromFile(o.sacct!),
        file: o.sacct === STDIN ? "<stdin>" : o.sacct!,
        gpu: undefined,
      };
  const name = o.product ?? src.gpu;
  if (!name)
    throw usage(
      "advise needs the product: --product A100-40GB (or --slurm reads it from nvidia-smi)",
    );
  const product = productOf(name);
  const format = o.format?.split(",").map((f) => f.trim());
  const parsed = parseSacct(src.text, { file: src.file, format });
  const analysis = analyse(parsed.jobs, product);
  const advice = recommend(analysis, { nodes: o.nodeCount });
  if (o.svg) {
    try {
      writeFileSync(o.svg, histogramOf(analysis, advice));
    } catch (e) {
      throw new SlicecheckError(
        "OUTPUT_PATH",
        `--svg ${o.svg}: cannot write: ${(e as NodeJS.ErrnoException).code ?? String(e)}`,
      );
    }
  }
  if (o.json) io.out(JSON.stringify(adviseJson(src.file, analysis, advice, o.svg), null, 2));
  else printAdvice(src.file, analysis, advice, o.svg, io);
  return 0;
}
