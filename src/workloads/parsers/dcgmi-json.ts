// `dcgmi diag -j`. DCGM 4 nests results as test_categories[].tests[].results[] with entity ids
// and a test_summary; DCGM 3 used a `DCGM GPU Diagnostic` root and `gpu_ids` strings (reference
// workloads.md 3.2; no real 3.x JSON was captured, so that branch follows the 3.x source). The
// docs promise no stable schema, so every field is checked and a surprise is a PARSE error.

import {
  type DcgmiDiag,
  type DcgmiGpuResult,
  type DcgmiResult,
  type DcgmiTest,
  toResult,
  worstResult,
} from "./dcgmi-types.js";
import { parseError } from "./text.js";

const KIND = "dcgmi";
const ROOT_NAMES = ["DCGM Diagnostic", "DCGM GPU Diagnostic"] as const;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function stringOrNull(value: Json | undefined): string | null {
  return typeof value === "string" ? value : null;
}

/** `"msg"`, `["msg"]` or `[{"warning": "msg", ...}]`: all three occur across DCGM versions. */
function texts(value: Json | undefined): string[] {
  if (typeof value === "string") return value === "" ? [] : [value];
  if (!Array.isArray(value)) return [];
  return value.flatMap((item) => {
    if (typeof item === "string") return [item];
    if (isObject(item) && typeof item.warning === "string") return [item.warning];
    return [];
  });
}

/** `lines` is the whole input, `start` the 0-based index of the line holding the opening brace. */
export function parseDcgmiJson(lines: string[], start: number): DcgmiDiag {
  // dcgmi's styled JSON closes its root with a `}` at column 0; anything after it (a prompt) is
  // not part of the document. Without that brace the document was cut and parsing says where.
  let end = lines.length;
  for (let i = lines.length - 1; i > start; i--) {
    if ((lines[i] ?? "").trimEnd() === "}") {
      end = i + 1;
      break;
    }
  }
  const body = lines.slice(start, end).join("\n");
  let root: Json;
  try {
    root = JSON.parse(body) as Json;
  } catch (err) {
    const at = /position (\d+)/.exec(String(err))?.[1];
    const line =
      at === undefined ? end : start + 1 + (body.slice(0, Number(at)).match(/\n/g)?.length ?? 0);
    throw parseError(KIND, line, "a complete JSON document", lines[line - 1] ?? "end of input");
  }
  const shapeError = (what: string, got: Json | undefined) =>
    parseError(KIND, start + 1, what, JSON.stringify(got) ?? "nothing");
  if (!isObject(root)) throw shapeError("a JSON object", root);
  const name = ROOT_NAMES.find((n) => isObject(root[n]));
  const diag = name === undefined ? undefined : root[name];
  if (!isObject(diag)) throw shapeError(`an object under '${ROOT_NAMES.join("' or '")}'`, root);
  const metadata = isObject(root.metadata) ? root.metadata : diag;
  const categories = diag.test_categories ?? [];
  if (!Array.isArray(categories)) throw shapeError("test_categories to be an array", categories);
  return {
    version: stringOrNull(metadata.version),
    driver: stringOrNull(metadata["Driver Version Detected"]),
    tests: categories.flatMap((category) => readCategory(category, shapeError)),
    error: stringOrNull(diag.runtime_error),
  };
}

type ShapeError = (what: string, got: Json | undefined) => Error;

function readCategory(category: Json, shapeError: ShapeError): DcgmiTest[] {
  if (
    !isObject(category) ||
    typeof category.category !== "string" ||
    !Array.isArray(category.tests)
  ) {
    throw shapeError("a category object with 'category' and 'tests'", category);
  }
  const name = category.category;
  // Json::Value arrays filled by index leave nulls where a test was skipped (DCGM 3 source).
  return category.tests.filter((t) => t !== null).map((test) => readTest(name, test, shapeError));
}

function readTest(category: string, test: Json, shapeError: ShapeError): DcgmiTest {
  if (!isObject(test) || typeof test.name !== "string") {
    throw shapeError("a test object with a 'name'", test);
  }
  const results = test.results ?? [];
  if (!Array.isArray(results)) throw shapeError("'results' to be an array", results);
  const summary = isObject(test.test_summary) ? test.test_summary : undefined;
  const info: string[] = [...texts(summary?.warnings), ...texts(summary?.info)];
  const gpus: DcgmiGpuResult[] = [];
  let worst: DcgmiResult | undefined;
  for (const entry of results) {
    if (!isObject(entry)) throw shapeError("a result object", entry);
    const status = toResult(stringOrNull(entry.status) ?? "");
    if (status === undefined)
      throw shapeError("a status of Pass, Fail, Skip, Warn or Not Run", entry);
    worst = worst === undefined ? status : worstResult(worst, status);
    const id = gpuId(entry);
    if (id !== undefined) gpus.push({ id, result: status });
    info.push(...texts(entry.warnings), ...texts(entry.info));
  }
  // test_summary is omitted for a test that did not run (DCGM 4 HelperJsonAddResult).
  const summaryStatus =
    summary === undefined ? undefined : toResult(stringOrNull(summary.status) ?? "");
  if (summary !== undefined && summaryStatus === undefined) {
    throw shapeError("test_summary.status of Pass, Fail, Skip, Warn or Not Run", summary);
  }
  return {
    category,
    name: test.name,
    result: summaryStatus ?? worst ?? "Skip",
    gpus,
    info: [...new Set(info)],
  };
}

function gpuId(entry: JsonObject): number | undefined {
  if (entry.entity_group !== undefined) {
    return entry.entity_group === "GPU" && typeof entry.entity_id === "number"
      ? entry.entity_id
      : undefined;
  }
  const legacy = entry.gpu_ids ?? entry.gpu_id;
  if (typeof legacy === "number") return legacy;
  if (typeof legacy === "string" && /^\d+$/.test(legacy)) return Number(legacy);
  return undefined;
}
