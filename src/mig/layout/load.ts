// Loads a layout file. YAML is parsed with a LineCounter so that every problem names the file,
// the line, the config, the entry and what was expected, before anything is planned.

import { readFileSync } from "node:fs";
import { isMap, isScalar, isSeq, LineCounter, type Node, parseDocument } from "yaml";
import type { z } from "zod";
import { SlicecheckError } from "../../errors.js";
import { yamlToJs } from "../../util/yaml.js";
import { maxMigDevicesPerGpu } from "../catalog/index.js";
import { normaliseDeviceId, parseProfileKey } from "./keys.js";
import { ENTRY_FIELDS, fileSchema, type RawEntry } from "./schema.js";
import type { LayoutConfig, LayoutDevice, LayoutEntry, LayoutFile } from "./types.js";

type Path = readonly (string | number)[];

interface Located {
  file: string;
  /** 1-based line of the node at `path` (or of `key` inside it), else of its nearest ancestor. */
  lineOf(path: Path, key?: string): number;
}

function layoutError(message: string, context: Record<string, unknown>): SlicecheckError {
  return new SlicecheckError("LAYOUT", message, context);
}

/** `file:line: config 'x', entry 2, mig-devices.3g.40gb: message` */
function where(src: Located, path: Path, key?: string): string {
  const line = src.lineOf(path, key);
  const parts: string[] = [];
  if (path[0] === "mig-configs" && path.length > 1) parts.push(`config '${String(path[1])}'`);
  if (path[0] === "mig-configs" && typeof path[2] === "number") parts.push(`entry ${path[2] + 1}`);
  const inConfig = path[0] === "mig-configs" && path.length > 1;
  const field = (inConfig ? path.slice(3) : path).map(String);
  if (key !== undefined) field.push(key);
  if (field.length > 0) parts.push(field.join("."));
  return `${src.file}:${line}: ${parts.join(", ")}${parts.length ? ": " : ""}`;
}

function valueAt(value: unknown, path: Path): unknown {
  let v = value;
  for (const p of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string | number, unknown>)[p];
  }
  return v;
}

function issueMessage(src: Located, issue: z.core.$ZodIssue, data: unknown): string {
  const path = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p));
  if (issue.code === "unrecognized_keys") {
    const inEntry = path[0] === "mig-configs" && path.length === 3;
    const allowed = inEntry ? ENTRY_FIELDS.join(", ") : "version, mig-configs";
    return issue.keys
      .map((k) => `${where(src, path, k)}unknown field '${k}'; expected one of ${allowed}`)
      .join("\n");
  }
  const got = valueAt(data, path);
  if (got === undefined && path.length > 0) {
    return `${where(src, path)}missing; ${issue.message}`;
  }
  const shown = got === undefined ? "" : `, got ${JSON.stringify(got)}`;
  return `${where(src, path)}${issue.message}${issue.code === "custom" ? "" : shown}`;
}

function locate(file: string, text: string) {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const src: Located = {
    file,
    lineOf(path, key) {
      if (key !== undefined) {
        const node = doc.getIn(path, true);
        if (isMap(node)) {
          const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === key);
          const r = pair && isScalar(pair.key) ? pair.key.range : undefined;
          if (r) return lineCounter.linePos(r[0]).line;
        }
      }
      for (let n = path.length; n >= 0; n--) {
        const node = doc.getIn(path.slice(0, n), true) as Node | undefined;
        const range = node && (isMap(node) || isSeq(node) || isScalar(node)) ? node.range : null;
        if (range) return lineCounter.linePos(range[0]).line;
      }
      return 1;
    },
  };
  return { doc, lineCounter, src };
}

/** Parses layout text; `file` is only used in messages. */
export function parseLayout(text: string, file: string): LayoutFile {
  const { doc, lineCounter, src } = locate(file, text);
  const bad = doc.errors[0];
  if (bad) {
    const line = lineCounter.linePos(bad.pos[0]).line;
    throw layoutError(
      `${file}:${line}: not valid YAML: ${bad.message.split("\n")[0]}; fix the YAML syntax at that line`,
      { file, line },
    );
  }
  const data: unknown = yamlToJs(doc, lineCounter, file, "LAYOUT");
  const checked = fileSchema.safeParse(data);
  if (!checked.success) {
    // Report in file order, the way a reader goes through the file to fix it.
    const lineOfIssue = (i: z.core.$ZodIssue) =>
      src.lineOf(
        i.path.map((p) => (typeof p === "symbol" ? String(p) : p)),
        i.code === "unrecognized_keys" ? i.keys[0] : undefined,
      );
    const issues = [...checked.error.issues].sort((a, b) => lineOfIssue(a) - lineOfIssue(b));
    const lines = issues.slice(0, 8).map((i) => issueMessage(src, i, data));
    const more = issues.length - lines.length;
    if (more > 0) lines.push(`(and ${more} more)`);
    throw layoutError(lines.join("\n"), {
      file,
      issues: checked.error.issues.length,
      line: src.lineOf(checked.error.issues[0]?.path.map(String) ?? []),
    });
  }
  checkCounts(src, checked.data["mig-configs"]);
  const configs: LayoutConfig[] = Object.entries(checked.data["mig-configs"]).map(
    ([name, entries]) => ({
      name,
      line: src.lineOf(["mig-configs"], name),
      entries: entries.map((e, index) => toEntry(src, name, index, e)),
    }),
  );
  if (configs.length === 0) {
    throw layoutError(`${where(src, ["mig-configs"])}expected at least one config`, { file });
  }
  return { file, configs };
}

/** Refuses counts no catalogued GPU could hold, before the planner expands them into lists. */
function checkCounts(src: Located, configs: Record<string, readonly RawEntry[]>): void {
  const max = maxMigDevicesPerGpu();
  for (const [name, entries] of Object.entries(configs)) {
    entries.forEach((e, index) => {
      for (const [key, count] of Object.entries(e["mig-devices"] ?? {})) {
        if (count <= max) continue;
        const path = ["mig-configs", name, index, "mig-devices"];
        throw layoutError(
          `${where(src, path, key)}${count} instances asked, but no catalogued GPU holds more than ${max} MIG devices; fix the count`,
          { file: src.file, config: name, line: src.lineOf(path, key) },
        );
      }
    });
  }
}

function toEntry(src: Located, config: string, index: number, e: RawEntry): LayoutEntry {
  const path = ["mig-configs", config, index];
  const filter = e["device-filter"];
  const filters = filter === undefined ? [] : typeof filter === "string" ? [filter] : filter;
  // The schema has checked every id; an empty string is mig-parted's "no filter".
  const ids = filters.filter((f) => f !== "").map((f) => normaliseDeviceId(f)!);
  const migDevices: LayoutDevice[] = Object.entries(e["mig-devices"] ?? {}).map(([key, count]) => {
    const k = parseProfileKey(key)!;
    return {
      key,
      gi: k.gi,
      ciSlices: k.ciSlices,
      count,
      line: src.lineOf([...path, "mig-devices"], key),
    };
  });
  return {
    index,
    line: src.lineOf(path),
    deviceFilter: ids.length > 0 ? ids : null,
    devices: e.devices === "all" ? "all" : [...e.devices],
    migEnabled: e["mig-enabled"],
    migDevices,
    placements: Object.fromEntries(Object.entries(e.placements ?? {}).map(([k, v]) => [k, [...v]])),
  };
}

export function loadLayout(path: string): LayoutFile {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new SlicecheckError(
      "LAYOUT",
      `${path}: cannot read the layout file (${code}); give the path of a mig-parted config file`,
      { file: path },
      { cause: err },
    );
  }
  return parseLayout(text, path);
}

/** The config `name`, or the only one when the file has one and no name is given. */
export function selectConfig(layout: LayoutFile, name: string | undefined): LayoutConfig {
  const names = layout.configs.map((c) => c.name);
  if (name === undefined) {
    const only = layout.configs.length === 1 ? layout.configs[0] : undefined;
    if (only) return only;
    throw new SlicecheckError(
      "USAGE",
      `${layout.file} has ${names.length} configs; choose one with -c NAME: ${names.join(", ")}`,
      { file: layout.file, configs: names },
    );
  }
  const found = layout.configs.find((c) => c.name === name);
  if (found) return found;
  throw new SlicecheckError(
    "USAGE",
    `${layout.file} has no config '${name}'; it has: ${names.join(", ")}`,
    { file: layout.file, config: name, configs: names },
  );
}
