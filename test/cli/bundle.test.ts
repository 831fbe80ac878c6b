// The CLI users start (bin/slicecheck.js) runs the bundle the build made (scripts/bundle.mjs):
// it answers as the sources do, still works once its install is moved (no path of the build
// machine inside), and a reader that goes away early (`| head -1`) costs it nothing.
import assert from "node:assert/strict";
import { isAscii } from "node:buffer";
import { spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { asciiComments, CLI_BUNDLE } from "../../scripts/bundle.mjs";
import { cli } from "../helpers/cli.js";

const ROOT = join(import.meta.dirname, "..", "..");
const PLAN = ["plan", "fixtures/layouts/default.yaml", "-c", "all-1g.10gb", "--gpu", "H100-80GB"];

function bin(root: string, args: string[]) {
  return spawnSync(process.execPath, [join(root, "bin", "slicecheck.js"), ...args], {
    cwd: ROOT,
    encoding: "utf8",
  });
}

describe("the bundled CLI (bin/slicecheck.js)", function () {
  this.timeout(60_000);
  let moved = "";
  after(() => {
    if (moved) rmSync(moved, { recursive: true, force: true });
  });

  it("is ASCII: its comments' other characters are written as ?, nothing else of it", () => {
    const built = readFileSync(join(ROOT, CLI_BUNDLE));
    assert.ok(isAscii(built), "the bundle is ASCII");
    const esbuild = createRequire(import.meta.url)("esbuild");
    const commented = "// a dash \u2014 here\nconst a = 1; /* \u2026 */\n";
    assert.equal(asciiComments(esbuild, commented), "// a dash ? here\nconst a = 1; /* ? */\n");
    // In code, a character stays: a raw template's text is what the program reads.
    const raw = "const t = String.raw`x\u2014y`; // \u2014\n";
    assert.equal(asciiComments(esbuild, raw), raw);
  });

  it("is what bin/slicecheck.js runs, and answers as the sources do", async () => {
    assert.ok(existsSync(join(ROOT, CLI_BUNDLE)), "the build made no CLI bundle");
    const b = bin(ROOT, PLAN);
    const s = await cli(...PLAN);
    assert.equal(b.status, s.code);
    assert.equal(b.stdout, s.stdout);
    assert.match(b.stdout, /all-1g\.10gb/);
    const version = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;
    assert.equal(bin(ROOT, ["--version"]).stdout.trim(), version);
  });

  it("still runs once its install is moved: no path of the build machine in any bundle", () => {
    moved = mkdtempSync(join(tmpdir(), "sc-moved-"));
    for (const part of ["bin", "dist", "package.json", "suites", "fixtures"])
      cpSync(join(ROOT, part), join(moved, part), { recursive: true });
    symlinkSync(join(ROOT, "node_modules"), join(moved, "node_modules"));
    for (const folder of ["dist/cli-bundle", "dist/sim-bundle/workloads"]) {
      for (const f of readdirSync(join(moved, folder)).filter((x) => /\.c?js$/.test(x))) {
        assert.ok(
          !readFileSync(join(moved, folder, f), "utf8").includes(ROOT),
          `${folder}/${f} names ${ROOT}`,
        );
      }
    }
    const b = bin(moved, PLAN);
    assert.equal(b.status, 0, b.stderr);
    assert.equal(b.stdout, bin(ROOT, PLAN).stdout);
  });

  it("runs from the code cache the build left, with every dynamic import through its hook", () => {
    const file = join(ROOT, CLI_BUNDLE);
    const text = readFileSync(file, "utf8");
    // The prelude's own import() is the one left: Node 20 loses the loader of the others in
    // code compiled from a cache (src/cli/code-cache.ts). Mocha's file loader is among them.
    assert.equal(text.match(/(?<![\w$.])import\(/g)?.length, 1);
    assert.ok((text.match(/__slicecheckImport\(/g)?.length ?? 0) >= 8, "imports not routed");
    assert.match(text, /doImport = async \(\w+\) => __slicecheckImport\(/);
    const loader = join(ROOT, "dist", "cli", "code-cache.js");
    const script = `const { loadBundle } = await import(${JSON.stringify(loader)});
      console.log(loadBundle(${JSON.stringify(file)}, (s) => import(s)).fromCache);`;
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      encoding: "utf8",
    });
    assert.equal(r.stdout.trim(), "true", r.stderr);
  });

  it("loads ssh2 without its HTTP agents (node:http, https, tls), which it never uses", () => {
    const dir = mkdtempSync(join(tmpdir(), "slicecheck-agents-"));
    try {
      const inv = join(dir, "inv.yaml");
      writeFileSync(
        inv,
        "defaults: {user: root, known_hosts: /dev/null, ssh_config: none}\nnodes:\n  ghost: {host: 127.0.0.1, port: 1}\n",
      );
      // What Node loaded of its own modules, printed as the process ends.
      const hook = join(dir, "loaded.cjs");
      writeFileSync(
        hook,
        'process.on("exit", () => process.stderr.write(`\\nLOADED ${process.moduleLoadList.join(",")}\\n`));\n',
      );
      const r = spawnSync(
        process.execPath,
        ["--require", hook, join(ROOT, "bin", "slicecheck.js"), "exec", "-i", inv, "--", "true"],
        { cwd: ROOT, encoding: "utf8" },
      );
      const loaded = (/^LOADED (.*)$/m.exec(r.stderr)?.[1] ?? "").split(",");
      // ssh2 was used: its connection to the closed port was refused.
      assert.ok(loaded.includes("NativeModule net"), r.stderr);
      assert.match(r.stderr, /ghost/);
      for (const m of ["http", "https", "tls"])
        assert.ok(!loaded.includes(`NativeModule ${m}`), `node:${m} was loaded`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("drops what it prints after its reader has gone, and ends with its own exit code", () => {
    const shell = `${[process.execPath, "bin/slicecheck.js", ...PLAN].join(" ")} | head -1; exit "\${PIPESTATUS[0]}"`;
    const r = spawnSync("/bin/bash", ["-c", shell], { cwd: ROOT, encoding: "utf8" });
    assert.equal(r.stdout.split("\n").length, 2, r.stdout);
    assert.doesNotMatch(r.stderr, /EPIPE|Error/);
    assert.equal(r.status, 0, r.stderr);
  });
});
