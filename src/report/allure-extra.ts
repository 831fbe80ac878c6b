// What the Allure results get once the run is over, for a person reading them: each check's
// figures as an HTML table beside its JSON evidence, the GPU's pictures (slice map, throughput
// against share, isolation matrix) on the checks they explain, and an environment that counts
// the nodes as they ended (selected, checked, unreachable) and names the executor; a pass that
// verifies no promise (a characterisation, a documented constraint) gets its kind as a tag.
// allure-mocha wrote the results live; each result names its check by the hidden parameter
// `check`.
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { hasRole } from "../util/suite-registry.js";
import { type CheckRecord, passKindOf } from "../verdicts/checks.js";
import type { RunContext } from "./context.js";
import { figuresPage } from "./signoff/figures.js";
import { signoffModel } from "./signoff/model.js";
import { gpuPictures } from "./signoff/pictures.js";

interface Attachment {
  name: string;
  source: string;
  type: string;
}
interface ResultFile {
  parameters?: { name: string; value: string }[];
  attachments?: Attachment[];
  labels?: { name: string; value: string }[];
}

function write(dir: string, ext: string, body: string): string {
  const source = `${randomUUID()}-attachment.${ext}`;
  writeFileSync(join(dir, source), body);
  return source;
}

/** Adds the attachments; returns how many results got some. */
export function enrichAllureResults(dir: string, ctx: RunContext): number {
  const checks = new Map<string, CheckRecord>((ctx.allChecks ?? []).map((c) => [c.id, c]));
  const model = signoffModel(ctx);
  // One file per GPU picture, shared by every check it explains.
  const pics = new Map<
    string,
    { sliceMap: string; throughput: string | null; matrix: string | null }
  >();
  const picsOf = (node: string | null, gpu: number | null) => {
    const key = `${node}/${gpu}`;
    const g = model.gpus.find((x) => x.node === node && x.gpu === gpu);
    if (!g) return null;
    let p = pics.get(key);
    if (!p) {
      const svg = gpuPictures(g, model.checks);
      p = {
        sliceMap: write(dir, "svg", svg.sliceMap),
        throughput: svg.throughput ? write(dir, "svg", svg.throughput) : null,
        matrix: svg.matrix ? write(dir, "svg", svg.matrix) : null,
      };
      pics.set(key, p);
    }
    return p;
  };
  let n = 0;
  for (const f of readdirSync(dir).filter((x) => x.endsWith("-result.json"))) {
    const file = join(dir, f);
    const r = JSON.parse(readFileSync(file, "utf8")) as ResultFile;
    const id = r.parameters?.find((p) => p.name === "check")?.value;
    const c = id ? checks.get(id) : undefined;
    if (!c) continue;
    const add: Attachment[] = [];
    if (Object.keys(c.figures).length || c.message)
      add.push({
        name: "figures.html",
        source: write(dir, "html", figuresPage(c)),
        type: "text/html",
      });
    const p = picsOf(c.node, c.gpu);
    const svg = (name: string, source: string | null) => {
      if (source) add.push({ name, source, type: "image/svg+xml" });
    };
    if (p && (hasRole(c.suite, "throughput") || hasRole(c.suite, "layout")))
      svg("slice map.svg", p.sliceMap);
    if (p && hasRole(c.suite, "throughput")) svg("throughput against share.svg", p.throughput);
    if (p && hasRole(c.suite, "matrix")) svg("isolation matrix.svg", p.matrix);
    // A pass that verifies no promise is tagged with its kind, so Allure can filter it apart.
    const kind = passKindOf(c);
    const tag = kind && kind !== "measured" ? kind : null;
    if (tag) r.labels = [...(r.labels ?? []), { name: "tag", value: tag }];
    if (!add.length && !tag) continue;
    r.attachments = [...(r.attachments ?? []), ...add];
    writeFileSync(file, JSON.stringify(r));
    n++;
  }
  return n;
}

const escKey = (s: string) => s.replace(/[\\:= ]/g, (c) => `\\${c}`);
const escValue = (s: string) => s.replace(/\\/g, "\\\\").replace(/\r?\n/g, "\\n");

/** environment.properties from the run as it ended (allure-mocha's was written from the nodes
 * as the suites began, before any of them could be found unreachable). */
export function environmentProperties(
  ctx: RunContext,
  executor: Record<string, unknown>,
): Record<string, string> {
  const m = signoffModel(ctx);
  const down = ctx.nodes.filter((x) => x.error).map((x) => x.node);
  const env: Record<string, string> = {
    "run.id": ctx.runId,
    "run.label": ctx.label ?? "-",
    "run.suites": ctx.suites.join(","),
    "run.nodes": String(ctx.nodes.length),
    "run.nodes.checked": String(ctx.nodes.length - down.length),
    "run.nodes.unreachable": down.length ? `${down.length}: ${down.join(", ")}` : "0",
    "run.gpus": String(m.gpus.length),
    "run.instances": String(m.gpus.reduce((a, g) => a + g.tenants, 0)),
    layout: ctx.layout ? `${ctx.layout.file} -c ${ctx.layout.config}` : "as found",
    executor: `${executor.name ?? "?"}${executor.buildName ? ` · ${executor.buildName}` : ""}`,
    "executor.host": hostname(),
  };
  for (const n of ctx.nodes) {
    const gpus = m.gpus.filter((g) => g.node === n.node);
    env[`${n.node}.driver`] = n.driver ?? "unknown";
    env[`${n.node}.cuda`] = n.cuda ?? "unknown";
    env[`${n.node}.gpus`] = [...new Set(gpus.map((g) => g.name))].join(", ") || "unknown";
    env[`${n.node}.route`] =
      gpus.map((g) => `GPU ${g.gpu}: ${g.route} (${g.tenants} tenant(s))`).join("; ") || "unknown";
  }
  return env;
}

export function writeEnvironment(dir: string, env: Record<string, string>): void {
  const body = Object.entries(env)
    .map(([k, v]) => `${escKey(k)}=${escValue(v)}`)
    .join("\n");
  writeFileSync(join(dir, "environment.properties"), `${body}\n`);
}
