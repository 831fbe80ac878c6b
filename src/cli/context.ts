// Shared command-line plumbing: which inventory, which nodes, how to print.
import { existsSync } from "node:fs";
import { relative, resolve } from "node:path";
import Table from "cli-table3";
import { SlicecheckError } from "../errors.js";
import { loadInventory } from "../inventory/load.js";
import { selectNodes } from "../inventory/selectors.js";
import type { Inventory, NodeSpec } from "../inventory/types.js";

/** The inventory a command reads when none is given: the one `slicecheck sim up` writes by
 * default, so that a first try works against the simulated cluster. */
export const DEFAULT_INVENTORY = "inventory/sim.yaml";

export interface NodeOptions {
  inventory?: string;
  nodes?: string;
  /** `exec -x`: nodes to leave out, in the same selector grammar. */
  exclude?: string;
  /** `exec -g`: groups whose nodes to act on (a comma list), added to `nodes` as `@GROUP`. */
  group?: string;
}

/** --nodes and -g as one selector: pdsh's `-w a -g b` targets both. */
function selectorOf(o: NodeOptions): string | undefined {
  if (o.group === undefined) return o.nodes;
  const groups = o.group
    .split(",")
    .map((g) => (g.trim() === "" ? g : `@${g.trim().replace(/^@/, "")}`));
  return [...(o.nodes === undefined ? [] : [o.nodes]), groups.join(",")].join(",");
}

export function inventoryPath(opt: string | undefined): string {
  const p = opt ?? process.env.SLICECHECK_INVENTORY ?? DEFAULT_INVENTORY;
  if (!existsSync(p)) {
    const hint =
      opt === undefined && process.env.SLICECHECK_INVENTORY === undefined
        ? " Give one with -i/--inventory (or $SLICECHECK_INVENTORY), or start the simulated cluster with `slicecheck sim up`."
        : "";
    throw new SlicecheckError("INVENTORY_NOT_FOUND", `inventory ${p} does not exist.${hint}`, {
      file: p,
    });
  }
  return p;
}

/** Signal handlers that do nothing but exit (main's exitOnInterrupt). */
export const exitOnlyHandlers = new WeakSet<(...args: unknown[]) => void>();

/** Reads the inventory. That is synchronous (seconds for 100 000 hosts), so a handler could
 * only run after it: while it reads, a SIGINT/SIGTERM whose only handler would just exit gets
 * its default action instead and ends the process at once (the shell sees 130/143, as from the
 * handler). Nothing has been touched yet. A command with handlers of its own keeps them. */
export function readInventory(path: string): Inventory {
  const detached: [NodeJS.Signals, (...args: unknown[]) => void][] = [];
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    const listeners = process.listeners(sig) as ((...args: unknown[]) => void)[];
    const only = listeners.length === 1 ? listeners[0]! : undefined;
    if (only && exitOnlyHandlers.has(only)) {
      process.removeListener(sig, only);
      detached.push([sig, only]);
    }
  }
  try {
    return loadInventory(path);
  } finally {
    for (const [sig, handler] of detached) process.on(sig, handler);
  }
}

/** With `io`, the inventory's warnings (options it asks for that slicecheck does not do) go to
 * stderr. */
export function loadSelected(
  o: NodeOptions,
  io?: Out,
): { inventory: Inventory; nodes: NodeSpec[] } {
  const inventory = readInventory(inventoryPath(o.inventory));
  for (const w of inventory.warnings ?? []) io?.err(`slicecheck: warning: ${w}`);
  // pdsh ignores an -x host it does not know; the warning still shows a typo.
  const warn = io
    ? (why: string) =>
        io.err(`slicecheck: warning: ${why}; ignored, as pdsh ignores an unknown -x host`)
    : undefined;
  const nodes = selectNodes(inventory, selectorOf(o), o.exclude, warn);
  if (nodes.length === 0) {
    throw new SlicecheckError("SELECTOR", `no nodes selected from ${inventory.file}`);
  }
  return { inventory, nodes };
}

export interface Out {
  out(line: string): void;
  err(line: string): void;
  /** Whether stdout / stderr is a terminal (live progress, colour); unset means no. */
  outTty?: boolean;
  errTty?: boolean;
  /** The terminal the live progress redraws (stderr). */
  errStream?: NodeJS.WriteStream;
}

export const stdio: Out = {
  out: (l) => process.stdout.write(`${l}\n`),
  err: (l) => process.stderr.write(`${l}\n`),
  outTty: process.stdout.isTTY === true,
  errTty: process.stderr.isTTY === true,
  errStream: process.stderr,
};

/** No borders, two spaces between columns: a table that greps and pastes well. */
export const PLAIN_CHARS = {
  top: "",
  "top-mid": "",
  "top-left": "",
  "top-right": "",
  bottom: "",
  "bottom-mid": "",
  "bottom-left": "",
  "bottom-right": "",
  left: "",
  "left-mid": "",
  mid: "",
  "mid-mid": "",
  right: "",
  "right-mid": "",
  middle: "  ",
};

/** Rows (the first is the header) laid out by cli-table3, which measures wide and coloured
 * text. Its layout is quadratic in the rows (minutes for `inventory --list` of 100 000 nodes), so
 * long tables go through it in blocks: a first pass measures every block (cli-table3 writes the
 * widths it computed into colWidths), a second lays each out at the widest of them. */
export function table(rows: string[][]): string {
  const cols = Math.max(...rows.map((r) => r.length));
  const full = rows.map((r) => Array.from({ length: cols }, (_, c) => r[c] ?? ""));
  if (full.every((r) => r.every((c) => PRINTABLE_ASCII.test(c)))) return asciiTable(full, cols);
  const blocks: string[][][] = [];
  for (let i = 0; i < full.length; i += TABLE_BLOCK) blocks.push(full.slice(i, i + TABLE_BLOCK));
  const layout = (block: string[][], colWidths: number[]) => {
    const t = new Table({
      chars: PLAIN_CHARS,
      style: { head: [], border: [], "padding-left": 0, "padding-right": 0, compact: true },
      colWidths,
    });
    for (const r of block) t.push(r);
    return t.toString();
  };
  let widths: number[] = [];
  if (blocks.length > 1) {
    for (const block of blocks) {
      const measured: number[] = [];
      layout(block, measured);
      widths = measured.map((w, c) => Math.max(w, widths[c] ?? 0));
    }
  }
  return blocks
    .map((block) => layout(block, [...widths]))
    .join("\n")
    .split("\n")
    .map((l) => l.trimEnd())
    .join("\n");
}

const TABLE_BLOCK = 100;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** The same layout as cli-table3's for one-line printable ASCII cells, where a character is one
 * column wide (cli-table3 costs about 0.2 ms a row: 20 s for 100 000 nodes). Columns are at
 * least 1 wide, as there. */
function asciiTable(rows: string[][], cols: number): string {
  const widths: number[] = Array.from({ length: cols }, () => 1);
  for (const r of rows)
    for (let c = 0; c < cols; c++) widths[c] = Math.max(widths[c]!, r[c]!.length);
  return rows
    .map((r) =>
      r
        .map((cell, c) => cell.padEnd(widths[c]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

export function parsePositiveInt(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1)
      throw new SlicecheckError("USAGE", `${name} expects a positive integer, got '${v}'`);
    return n;
  };
}

export function parsePositiveNumber(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0)
      throw new SlicecheckError("USAGE", `${name} expects a positive number, got '${v}'`);
    return n;
  };
}

/** A GPU index option's parser, naming the option in its error. */
export function gpuIndexOption(option: string) {
  return (v: string): number => {
    if (!/^\d{1,2}$/.test(v)) {
      throw new SlicecheckError("USAGE", `${option} expects a GPU index (0, 1, …), got '${v}'`);
    }
    return Number(v);
  };
}

export const parseGpuIndex = gpuIndexOption("--gpu");

/** A path as the user would type it: relative below the working folder, absolute elsewhere. */
export function displayPath(path: string): string {
  const rel = relative(process.cwd(), resolve(path));
  return rel === "" ? "." : rel.startsWith("..") ? resolve(path) : rel;
}
