// Where `plan` gets the GPU's profiles from: the built-in catalogue (--gpu), a GPU's own
// `nvidia-smi mig -lgip` and `-lgipp` outputs (--lgip/--lgipp, files or - for standard input), or
// a node read over SSH (--node, as `apply` reads it: the live listings, else the built-in entry).
// The last two plan GPUs the catalogue lacks (a new product, a board revision) from what their
// driver says, which is what `apply` would do on that node.
import { SlicecheckError } from "../../errors.js";
import { readNode } from "../../mig/apply/read.js";
import { catalogFor as nodeCatalogFor } from "../../mig/apply/target.js";
import {
  catalogFor,
  defaultDriver,
  PRODUCTS,
  type ProductKey,
  resolveBoard,
} from "../../mig/catalog/index.js";
import { builtinCatalog, fromListings, type PlannerCatalog } from "../../mig/planner/index.js";
import { parseLgip, parseLgipp } from "../../nvsmi/index.js";
import { fanOut, newRunId } from "../../transport/open.js";
import { didYouMean } from "../../util/closest.js";
import { loadSelected } from "../context.js";
import { readInput, STDIN } from "../input.js";
import { blankSourceLines } from "./parse.js";

export interface PlanSourceOptions {
  gpu?: string;
  driver?: string;
  lgip?: string;
  lgipp?: string;
  node?: string;
  inventory?: string;
  gpuIndex?: number;
}

export interface PlanSource {
  /** The product key, or the GPU's name where the catalogue lacks it. */
  product: string;
  board: { smiName: string; pciId: string };
  catalog: PlannerCatalog;
  /** Where the profiles came from, as printed: `built-in catalogue`, `-lgip a.txt + …`. */
  origin: string;
}

export const BUILTIN = "built-in catalogue";

const PCI_ID = /^0x[0-9a-f]{8}$/i;

function usage(message: string): SlicecheckError {
  return new SlicecheckError("USAGE", message);
}

function builtin(gpu: string, driver: string | undefined): PlanSource {
  const hit = resolveBoard(gpu);
  if (!hit) {
    throw new SlicecheckError(
      "USAGE",
      `unknown GPU '${gpu}'${didYouMean(gpu, PRODUCTS)}; give a catalogued product (${PRODUCTS.join(", ")}), an nvidia-smi name or a PCI device id such as 0x233010DE, or plan from the GPU's own outputs with --lgip FILE --lgipp FILE (or --node NAME)`,
      { gpu },
    );
  }
  const product: ProductKey = hit.product;
  const version = driver ?? defaultDriver(product);
  catalogFor(product, version); // refuses drivers below the product's MIG minimum
  return {
    product,
    board: hit.board,
    catalog: builtinCatalog(product, version),
    origin: BUILTIN,
  };
}

async function readListing<T>(file: string, what: string, parse: (text: string) => T): Promise<T> {
  const name = file === STDIN ? "<stdin>" : file;
  let text: string;
  try {
    text = await readInput(file);
  } catch (e) {
    throw usage(`${what} ${name}: cannot read: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  try {
    return parse(blankSourceLines(text));
  } catch (e) {
    if (e instanceof SlicecheckError)
      throw new SlicecheckError(e.code, `${what} ${name}: ${e.message}`, { file: name });
    throw e;
  }
}

async function fromFiles(o: PlanSourceOptions): Promise<PlanSource> {
  if (!o.lgip || !o.lgipp)
    throw usage(
      "--lgip and --lgipp go together: give the GPU's `nvidia-smi mig -lgip` and `nvidia-smi mig -lgipp` outputs, read on the same GPU",
    );
  if (o.lgip === STDIN && o.lgipp === STDIN)
    throw usage("only one of --lgip and --lgipp can be - (standard input)");
  if (!o.driver)
    throw usage(
      "--lgip/--lgipp need --driver VERSION (the node's driver: it decides the -cgi placement syntax and which profiles combine)",
    );
  const lgip = await readListing(o.lgip, "--lgip", parseLgip);
  const lgipp = await readListing(o.lgipp, "--lgipp", parseLgipp);
  const index = o.gpuIndex ?? lgip.gpus[0]?.index ?? 0;
  const profiles = lgip.gpus.find((g) => g.index === index);
  const placements = lgipp.gpus.find((g) => g.index === index);
  if (!profiles || profiles.profiles.length === 0)
    throw usage(
      `--lgip ${o.lgip}: lists no profiles for GPU ${index} (is MIG on, and is it -lgip?)`,
    );
  if (!placements)
    throw usage(
      `--lgipp ${o.lgipp}: lists no placements for GPU ${index}; read both on the same GPU`,
    );
  const hit = o.gpu ? resolveBoard(o.gpu) : null;
  const name =
    hit?.board.smiName ??
    (o.gpu && PCI_ID.test(o.gpu) ? `PCI device ${o.gpu}` : (o.gpu ?? "the GPU of --lgip"));
  const pciId = hit?.board.pciId ?? (o.gpu && PCI_ID.test(o.gpu) ? o.gpu : "unknown");
  const catalog = fromListings({
    gpu: name,
    driver: o.driver,
    profiles: profiles.profiles,
    placements: placements.placements,
  });
  return {
    product: hit?.product ?? name,
    board: { smiName: name, pciId },
    catalog,
    origin: `-lgip ${o.lgip} + -lgipp ${o.lgipp} (GPU ${index})`,
  };
}

async function fromNode(o: PlanSourceOptions): Promise<PlanSource> {
  const { nodes } = loadSelected({ inventory: o.inventory, nodes: o.node });
  if (nodes.length !== 1)
    throw usage(`--node ${o.node} selects ${nodes.length} nodes; name one node`);
  const [r] = await fanOut(nodes, { runId: newRunId(), attempts: 1 }, (t) => readNode(t, t.node));
  if (r!.error !== undefined) throw r!.error;
  const snapshot = r!.value!;
  const index = o.gpuIndex ?? 0;
  const gpu = snapshot.gpus.find((g) => g.index === index);
  if (!gpu)
    throw usage(
      `${snapshot.node} has no GPU ${index} (it has ${snapshot.gpus.map((g) => g.index).join(", ")})`,
    );
  const { catalog, live } = nodeCatalogFor(gpu, snapshot.driver);
  const hit = resolveBoard(gpu.pciDeviceId ?? gpu.name) ?? resolveBoard(gpu.name);
  return {
    product: hit?.product ?? gpu.name,
    board: { smiName: gpu.name, pciId: gpu.pciDeviceId ?? hit?.board.pciId ?? "unknown" },
    catalog,
    origin: live
      ? `${snapshot.node} GPU ${index}: its driver's -lgip/-lgipp`
      : `${snapshot.node} GPU ${index}: built-in catalogue (the driver lists no profiles while MIG is off)`,
  };
}

export async function planSource(o: PlanSourceOptions): Promise<PlanSource> {
  if (o.node !== undefined) {
    if (o.lgip || o.lgipp || o.gpu)
      throw usage("--node reads the GPU from the node: drop --gpu, --lgip and --lgipp");
    return fromNode(o);
  }
  if (o.lgip !== undefined || o.lgipp !== undefined) return fromFiles(o);
  if (o.gpu === undefined)
    throw usage(
      "plan needs the GPU: --gpu PRODUCT (built-in catalogue), --lgip FILE --lgipp FILE --driver VER (its own outputs), or --node NAME (read it)",
    );
  return builtin(o.gpu, o.driver);
}
