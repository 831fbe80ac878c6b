// What a simulated cluster looks like: nodes with a GPU product, a GPU count and a driver.
// Given on the command line (`--nodes 4 --gpu H100-80GB`) or in a spec file for mixed clusters.
import { readFileSync } from "node:fs";
import { LineCounter, parseDocument } from "yaml";
import { z } from "zod";
import { SlicecheckError } from "../../src/errors.js";
import { yamlToJs } from "../../src/util/yaml.js";
import { checkSimDriver, defaultDriverFor, resolveSimProduct } from "./products.js";

/** The most nodes one simulated cluster has (issue 25's bench runs 256; each is an sshd). */
export const MAX_SIM_NODES = 480;

export interface SimNodeSpec {
  name: string;
  gpu: string;
  gpus: number;
  driver: string;
  /** Seconds every command's login shell sleeps before the command (bash sources BASH_ENV):
   * a real node's start-up files. Absent: none. */
  loginDelayS?: number;
}

const specFile = z.strictObject({
  nodes: z
    .array(
      z.strictObject({
        name: z
          .string()
          .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/)
          .optional(),
        gpu: z.string(),
        gpus: z.number().int().min(1).max(16).optional(),
        driver: z
          .string()
          .regex(/^\d+\.\d+(\.\d+)?$/, "expected a driver version like 550.127.05")
          .optional(),
        count: z.number().int().min(1).max(MAX_SIM_NODES).optional(),
      }),
    )
    .min(1),
});

export interface SimSpecArgs {
  nodes?: number;
  gpu?: string;
  gpusPerNode?: number;
  driver?: string;
  spec?: string;
  /** Seconds each login shell sleeps first (SimNodeSpec.loginDelayS). */
  loginDelay?: number;
}

export function buildSimSpec(a: SimSpecArgs): SimNodeSpec[] {
  if (a.spec) return readSpecFile(a.spec);
  const count = a.nodes ?? 4;
  if (!Number.isInteger(count) || count < 1 || count > MAX_SIM_NODES) {
    throw new SlicecheckError(
      "USAGE",
      `--nodes must be an integer 1-${MAX_SIM_NODES}, got ${a.nodes}`,
    );
  }
  const gpus = a.gpusPerNode ?? 1;
  if (!Number.isInteger(gpus) || gpus < 1 || gpus > 16) {
    throw new SlicecheckError(
      "USAGE",
      `--gpus-per-node must be an integer 1-16, got ${a.gpusPerNode}`,
    );
  }
  const gpu = resolveSimProduct(a.gpu ?? "H100-80GB", "--gpu");
  const driver = a.driver ?? defaultDriverFor(gpu);
  checkSimDriver(gpu, driver, "--driver");
  const delay = a.loginDelay;
  if (delay !== undefined && !(delay >= 0 && delay <= 60))
    throw new SlicecheckError("USAGE", `--login-delay must be 0-60 seconds, got ${delay}`);
  return Array.from({ length: count }, (_, i) => ({
    name: nodeName(i),
    gpu,
    gpus,
    driver,
    ...(delay ? { loginDelayS: delay } : {}),
  }));
}

function nodeName(i: number): string {
  return `sim${String(i + 1).padStart(2, "0")}`;
}

function readSpecFile(file: string): SimNodeSpec[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new SlicecheckError(
      "SIM_SPEC",
      `${file}: cannot read the simulated cluster spec: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      { file },
    );
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const bad = doc.errors[0];
  if (bad) {
    const line = lineCounter.linePos(bad.pos[0]).line;
    throw new SlicecheckError(
      "SIM_SPEC",
      `${file}:${line}: not valid YAML: ${bad.message.split("\n")[0]}; fix the YAML syntax at that line`,
      { file, line },
    );
  }
  const data = yamlToJs(doc, lineCounter, file, "SIM_SPEC");
  const r = specFile.safeParse(data);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new SlicecheckError("SIM_SPEC", `${file}: ${i.path.join(".")}: ${i.message}`, { file });
  }
  const out: SimNodeSpec[] = [];
  r.data.nodes.forEach((n, idx) => {
    const gpu = resolveSimProduct(n.gpu, `${file}: nodes.${idx}.gpu`);
    for (let k = 0; k < (n.count ?? 1); k++) {
      const name = n.name && (n.count ?? 1) === 1 ? n.name : nodeName(out.length);
      const driver = n.driver ?? defaultDriverFor(gpu);
      checkSimDriver(gpu, driver, `${file}: nodes.${idx}.driver`);
      out.push({ name, gpu, gpus: n.gpus ?? 1, driver });
    }
  });
  const dup = out.find((n, i) => out.findIndex((m) => m.name === n.name) !== i);
  if (dup)
    throw new SlicecheckError("SIM_SPEC", `${file}: node name '${dup.name}' is used twice`, {
      file,
    });
  return out;
}
