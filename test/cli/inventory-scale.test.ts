// Large inventories: `inventory --list` lays out 100 000 rows (in blocks, as one table would),
// the host limits refuse with exit 3 naming file:line, and a SIGTERM during the (synchronous)
// load ends the process at once instead of after it. Speed itself is measured in
// `BENCH=inventory npm run bench`, not here.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { join, resolve } from "node:path";
import Table from "cli-table3";
import { PLAIN_CHARS, table } from "../../src/cli/context.js";
import { cli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

const dir = tempDir("invscale");
const root = resolve(".");

/** The layout table() gave before it went through cli-table3 in blocks: one table, all rows. */
function oneTable(rows: string[][]): string {
  const t = new Table({
    chars: PLAIN_CHARS,
    style: { head: [], border: [], "padding-left": 0, "padding-right": 0, compact: true },
  });
  for (const r of rows) t.push(r);
  return t
    .toString()
    .split("\n")
    .map((l) => l.trimEnd())
    .join("\n");
}

/** Runs the built CLI's inventory reader in a child on a FIFO: the FIFO's open for writing
 * returns once the child opens it to read, so the child is then inside the load (blocked in
 * it, as in a long one). SIGTERM goes there; then the content is written. */
async function termDuringLoad(
  reader: "readInventory" | "loadInventory",
): Promise<{ code: number | null; signal: string | null; stdout: string }> {
  const fifo = join(dir, `${reader}-${Date.now()}.ini`);
  execFileSync("mkfifo", [fifo]);
  const script = `
    import { writeSync } from "node:fs";
    const { exitOnInterrupt } = await import(${JSON.stringify(join(root, "dist/cli/main.js"))});
    const { readInventory } = await import(${JSON.stringify(join(root, "dist/cli/context.js"))});
    const { loadInventory } = await import(${JSON.stringify(join(root, "dist/inventory/load.js"))});
    exitOnInterrupt();
    const inv = (${reader})(${JSON.stringify(fifo)});
    writeSync(1, "loaded " + inv.nodes.length + "\\n");
    // A command goes on after the load (connects, prints): the loop keeps running, so a
    // signal taken by the handler is acted on now; without more work Node would just exit 0.
    await new Promise((r) => setTimeout(r, 20_000));
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    env: { ...process.env, HOME: dir },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let stdout = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  const closed = new Promise<{ code: number | null; signal: string | null }>((done, fail) => {
    child.on("error", fail);
    child.on("close", (code, signal) => done({ code, signal }));
  });
  const fd = await open(fifo, "w");
  child.kill("SIGTERM");
  // A child that is still alive takes the inventory and goes on; a killed one gets EPIPE.
  await fd.write("[gpus]\ngpu[1:3]\n").catch(() => undefined);
  await fd.close().catch(() => undefined);
  return { ...(await closed), stdout };
}

describe("large inventories", function () {
  this.timeout(120_000);
  const big = join(dir, "big.ini");
  writeFileSync(big, "[gpus]\ngpu[1:100000] ansible_user=ops\n");

  it("lays out a long table in blocks exactly as one table, wide and coloured text included", () => {
    const rows = [["NODE", "ADDRESS", "NOTE"]];
    for (let i = 0; i < 1700; i++) rows.push([`n${i}`, `10.0.${i >> 8}.${i & 255}`, "-"]);
    rows[20]![2] = "\u001b[31mred\u001b[39m";
    rows[900]![0] = "日本語のノード名"; // wide characters, the widest cell of column 1
    rows[1650]![2] = "a note far wider than any other cell";
    const want = oneTable(rows);
    assert.equal(table(rows), want);
    // Printable ASCII takes a shorter way; the same layout, an empty column included.
    const ascii = rows.map((r, i) => [r[1]!, i % 7 ? `x${"y".repeat(i % 13)}` : "", ""]);
    assert.equal(table(ascii), oneTable(ascii));
    // The blocks really do differ in width: laid out alone, the first block is narrower.
    assert.notEqual(table(rows.slice(0, 500)).split("\n")[0], want.split("\n")[0]);
  });

  it("lists 100 000 hosts of one range, and their group", async () => {
    const r = await cli("inventory", "-i", big, "--list", "--json");
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout);
    assert.equal(j.nodes.length, 100_000);
    assert.equal(j.nodes[99_999].name, "gpu100000");
    assert.deepEqual(j.nodes[99_999].groups, ["all", "gpus"]);
    assert.equal(j.groups.gpus.length, 100_000);
  });

  it("refuses a range past the limit with exit 3, naming file and line (its size is computed, not made)", async () => {
    const p = join(dir, "bomb.ini");
    writeFileSync(p, "[a]\ngpu01\n[b]\ngpu[1:1000]x[1:1000]\n");
    const r = await cli("inventory", "-i", p, "--list");
    assert.equal(r.code, 3, r.stderr);
    assert.match(
      r.stderr,
      /bomb\.ini:4: gpu\[1:1000\]x\[1:1000\]: expands to 1,000,000 hosts; one inventory may name at most 100,000/,
    );
  });

  it("refuses a file whose lines together name more than 100 000 hosts, at the line that passes it", async () => {
    const p = join(dir, "two.ini");
    writeFileSync(p, "[a]\na[1:60000]\n[b]\nb[1:60000]\n");
    const r = await cli("inventory", "-i", p, "--list");
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /two\.ini:4: b40001: the inventory names more than 100,000 hosts/);
  });

  it("ends at once on SIGTERM during the load (and, as a control, only after it without readInventory)", async () => {
    const fixed = await termDuringLoad("readInventory");
    assert.equal(fixed.signal, "SIGTERM", JSON.stringify(fixed));
    assert.equal(fixed.stdout, "");
    // The fault readInventory removes: a handler that can only run once the load is over.
    const planted = await termDuringLoad("loadInventory");
    assert.equal(planted.code, 143, JSON.stringify(planted));
    assert.equal(planted.stdout, "loaded 3\n");
  });
});
