// One-file bundles of what starts a process often: the simulated node's tools (bundleSimTools)
// and the CLI itself (bundleCli). Each module keeps its own import.meta.url, __dirname and
// __filename (ownLocation below), so a module that finds files beside itself (the workloads'
// sources, the reaper, the suites' API) finds the same ones as unbundled. Where esbuild is
// missing (npm ci --omit=dev), nothing is bundled and everything runs from dist/ as before
// (sim/src/tools.ts and bin/slicecheck.js fall back).
//
// The simulated tools: a simulated node starts a Node process per nvidia-smi, pgrep or dmesg
// call (about 60 for one relayout and stress), and most of each call's CPU beyond Node's own
// start-up was loading some 40 modules one by one: on 2 loaded cores, the simulated tools were
// most of the end-to-end tests' CPU. One file per tool loads in one read (measured 0.169 s of
// CPU per `nvidia-smi -L` before, 0.134 s after).
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, sep } from "node:path";
import { pathToFileURL } from "node:url";

const STRICT = /^(?:\s*(?:\/\/[^\n]*|\/\*[\s\S]*?\*\/))*\s*(["'])use strict\1;?/;

/**
 * Each module's import.meta.url, and a CommonJS module's __dirname and __filename, as its own
 * file's location, written relative to the bundle's folder (`outDir`), so that a checkout or an
 * install moved after its build still finds its files. The CommonJS ones are declared at the top
 * of the module, which esbuild wraps in a function of its own: a mention inside a string stays
 * as it was. A dependency npm hoists elsewhere than at build time would not be found this way;
 * the bundled ones that use their location (mocha's and allure-mocha's parallel mode, workerpool)
 * do so only on paths slicecheck does not take.
 */
function ownLocation(outDir) {
  return {
    name: "own-module-location",
    setup(build) {
      build.onLoad({ filter: /\.c?js$/ }, (args) => {
        let text = readFileSync(args.path, "utf8");
        const meta = text.includes("import.meta.url");
        const cjs =
          /\b__(dirname|filename)\b/.test(text) &&
          !/\bimport\.meta\b|^\s*(import|export)\s/m.test(text);
        if (!meta && !cjs) return undefined;
        const rel = JSON.stringify(relative(outDir, args.path).split(sep).join("/"));
        // The bundle's own URL: import.meta.url in an ES module bundle, from __filename in the
        // CLI's CommonJS one (the banners below).
        const url = `new URL(${rel}, __slicecheckBundleUrl)`;
        if (meta) text = text.replaceAll("import.meta.url", `${url}.href`);
        if (cjs) {
          // After a "use strict" prologue, which must stay first to keep the module strict.
          const at = STRICT.exec(text)?.[0].length ?? 0;
          // Not import.meta itself here: esbuild would take the module for an ES module.
          const file = `decodeURIComponent(new URL(${rel}, __slicecheckBundleUrl).pathname)`;
          const own = `var __filename = ${file}, __dirname = ${file}.replace(/\\/[^/]*$/, "");`;
          text = `${text.slice(0, at)}\n${own}\n${text.slice(at)}`;
        }
        return { contents: text, loader: "js" };
      });
    },
  };
}

/** What every bundle shares. Native addons and their loaders, and the packages that find their
 * own files at run time, stay where npm put them. */
const COMMON = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["better-sqlite3", "ssh2", "cpu-features", "pg-native"],
  // A CommonJS dependency's require() of a Node built-in, inside an ES module; the bundle's own
  // URL, for the CommonJS modules' __dirname (ownLocation).
  banner: {
    js: "import { createRequire as __slicecheckRequire } from 'node:module'; const require = __slicecheckRequire(import.meta.url); const __slicecheckBundleUrl = import.meta.url;",
  },
  logLevel: "error",
  ...(process.env.MINI ? { minifyWhitespace: true, minifySyntax: true } : {}),
};

function esbuildOf(root) {
  try {
    return createRequire(join(root, "package.json"))("esbuild");
  } catch {
    return null;
  }
}

/** Bundles every tool; returns how many, or null when esbuild is not installed. */
export async function bundleSimTools(root) {
  const esbuild = esbuildOf(root);
  if (!esbuild) return null;
  const { SIM_TOOLS, RESIDENT_SCRIPT, FENCE_SCRIPT, SLURM_WRAPPER_SCRIPT } = await import(
    pathToFileURL(join(root, "dist/sim/tools.js")).href
  );
  // With the cluster's resident simulator (sim/src/resident), which answers the tools' reads,
  // and the simulated Slurm's Node scripts (tools.ts FENCE_SCRIPT).
  const entries = [
    ...new Set([...Object.values(SIM_TOOLS), RESIDENT_SCRIPT, FENCE_SCRIPT, SLURM_WRAPPER_SCRIPT]),
  ];
  for (const script of entries) {
    // The same path under dist/sim-bundle as the entry's under dist/sim (sim/src/tools.ts).
    const rel = relative(join(root, "dist", "sim"), join(root, script));
    if (rel.startsWith("..")) continue;
    const outfile = join(root, "dist", "sim-bundle", rel);
    mkdirSync(dirname(outfile), { recursive: true });
    await esbuild.build({
      ...COMMON,
      entryPoints: [join(root, script)],
      outfile,
      plugins: [ownLocation(dirname(outfile))],
    });
  }
  return entries.length;
}

/**
 * A native addon that a bundled package requires by a relative path (ssh2's
 * `./crypto/build/Release/sshcrypto.node`) stays where npm built it, required by its path from
 * the bundle's folder: the same layout ownLocation assumes.
 */
function addonsInPlace(outDir) {
  return {
    name: "addons-in-place",
    setup(build) {
      build.onResolve({ filter: /\.node$/ }, (args) => {
        const rel = relative(outDir, join(args.resolveDir, args.path)).split(sep).join("/");
        return { path: rel.startsWith(".") ? rel : `./${rel}`, external: true };
      });
    },
  };
}

/** Where bin/slicecheck.js finds the bundled CLI. */
export const CLI_BUNDLE = "dist/cli-bundle/main.cjs";

/** A dynamic `import(` in code: not a method's (`.import(`) nor part of a longer name. */
const DYNAMIC_IMPORT = /(?<![\w$.])import\(/g;

/** The bundle's own `import()`: the loader's hook where bin/slicecheck.js passed one (code
 * compiled from V8's cache has lost its loader in Node 20), else Node's, as under `require`. */
const IMPORT_PRELUDE =
  'const __slicecheckImport = typeof __slicecheckImportHook === "function" ? __slicecheckImportHook : (s) => import(s);';

/**
 * Every dynamic import of the bundle through its prelude's `__slicecheckImport`: the suites'
 * files, tsx, the simulator, and those of bundled packages (mocha's file loader). Rewritten in
 * the output, where esbuild has already resolved the project's own (`import("./commands/…")`
 * became a call of the module's function). A match inside a string or a comment is rewritten
 * too; the test of the bundle shows none in a string. Returns the text and the count.
 */
export function routeImports(text) {
  let count = 0;
  const out = text.replace(DYNAMIC_IMPORT, () => {
    count++;
    return "__slicecheckImport(";
  });
  const [first, ...rest] = out.split("\n");
  return { text: [first, IMPORT_PRELUDE, ...rest].join("\n"), count };
}

/**
 * ssh2's index requires its HTTP agents for two exports slicecheck never uses, and with them
 * node:http, https and tls: about 15 ms of every command's start on 2 cores (median of six
 * `run` starts, 228 -> 210 ms before the first task). In the CLI's bundle they load when one is
 * first constructed instead; ssh2's own code never constructs them.
 */
function lazySsh2HttpAgents() {
  const ns = "ssh2-lazy-http-agents";
  const stub = [
    "let real;",
    'const load = () => (real ??= require("./http-agents.js"));',
    "class SSHTTPAgent { constructor(...a) { return new (load().SSHTTPAgent)(...a); } }",
    "class SSHTTPSAgent { constructor(...a) { return new (load().SSHTTPSAgent)(...a); } }",
    "module.exports = { SSHTTPAgent, SSHTTPSAgent };",
  ].join("\n");
  return {
    name: ns,
    setup(build) {
      build.onResolve({ filter: /^\.\/http-agents(\.js)?$/ }, (args) =>
        args.namespace === "file" && /[\\/]ssh2[\\/]lib[\\/]index\.js$/.test(args.importer)
          ? { path: "ssh2/lib/http-agents.js", namespace: ns, pluginData: args.resolveDir }
          : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: ns }, (args) => ({
        contents: stub,
        resolveDir: args.pluginData,
        loader: "js",
      }));
    },
  };
}

/**
 * The CLI (dist/cli/main.js) as one CommonJS file, which bin/slicecheck.js compiles with V8's
 * code cache (src/cli/code-cache.ts): Node 20 caches code only for scripts, not ES modules.
 * Measured on 2 cores (the bench's start-up column, before a run's first task): 1.03-1.11 s
 * unbundled, 0.43-0.58 s as split ES modules, and 0.30-0.40 s as this file from its cache.
 * The lazily imported commands stay lazy: esbuild runs each one's modules on its first call.
 * The first line is the build id, a hash of the rest, which keys the cache. "use strict"
 * follows it: the ES modules bundled here were strict, and stay so.
 * What stays outside: the native addons, tsx (its loader registers its own files),
 * playwright-core (Chromium's driver, found by its own paths) and allure-commandline (a jar).
 * The suites' `slicecheck/suite` stays dist/harness/api.js: it reads the run from globalThis,
 * so the bundle's copy and the suites' copy agree; SlicecheckError's brand keeps `instanceof`
 * true across the two (src/errors.ts), as for the simulator, which stays in dist/sim.
 * Returns the number of dynamic imports routed through the prelude, or null without esbuild.
 */
export async function bundleCli(root) {
  const esbuild = esbuildOf(root);
  if (!esbuild) return null;
  const outfile = join(root, CLI_BUNDLE);
  rmSync(dirname(outfile), { recursive: true, force: true });
  await esbuild.build({
    ...COMMON,
    format: "cjs",
    banner: {
      js: '"use strict";\nconst __slicecheckBundleUrl = require("node:url").pathToFileURL(__filename).href;',
    },
    entryPoints: [join(root, "dist/cli/main.js")],
    outfile,
    plugins: [lazySsh2HttpAgents(), ownLocation(dirname(outfile)), addonsInPlace(dirname(outfile))],
    external: [
      ...COMMON.external.filter((x) => x !== "ssh2"),
      "tsx",
      "playwright-core",
      "allure-commandline",
    ],
  });
  const routed = routeImports(readFileSync(outfile, "utf8"));
  const { count } = routed;
  const text = asciiComments(esbuild, routed.text);
  const id = createHash("sha256").update(text).digest("hex").slice(0, 32);
  writeFileSync(outfile, `// slicecheck-build ${id}\n${text}`);
  return count;
}

/**
 * The bundle with every non-ASCII character written as `?`, where that changes only its
 * comments: esbuild's whitespace-minified output, which drops comments, is the same before and
 * after; else the text as it was. A few comments (a dash, an arrow, a library's Catalan) made
 * the 4 MB bundle UTF-8 to decode and a two-byte string for V8; an ASCII one loads as latin1
 * (src/cli/code-cache.ts): a run's first task 366 -> 318 ms (median of 7 alternated runs).
 */
export function asciiComments(esbuild, text) {
  if (!/[^\x00-\x7f]/.test(text)) return text;
  const ascii = text.replace(/[^\x00-\x7f]/g, "?");
  const code = (t) => esbuild.transformSync(t, { loader: "js", minifyWhitespace: true }).code;
  return code(ascii) === code(text) ? ascii : text;
}

/** Every .ts file under `dir`, relative to it. */
function tsFiles(dir, under = "") {
  return readdirSync(join(dir, under), { withFileTypes: true }).flatMap((e) => {
    const rel = join(under, e.name);
    if (e.isDirectory()) return tsFiles(dir, rel);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [rel] : [];
  });
}

/** The suites' API bundled into one module beside the compiled suites (compileSuites). */
export const SUITE_API = "suite-api.js";

/**
 * `slicecheck/suite` as one module, from the compiled API (dist/harness/api.js): as 42 ES modules
 * it took 33-54 ms of every run's start to resolve, read, compile and link, as one 14 ms. The API
 * reads the run from globalThis, so this copy works beside any other. Null where the compiled
 * API is not there (the suites then import `slicecheck/suite` as written).
 */
async function bundleSuiteApi(esbuild, root, to) {
  const api = join(root, "dist", "harness", "api.js");
  if (!existsSync(api)) return null;
  const outfile = join(to, SUITE_API);
  await esbuild.build({ ...COMMON, external: [], banner: {}, entryPoints: [api], outfile });
  return outfile;
}

/** The compiled suite imports `slicecheck/suite` from `api` (a path), every other import as it is
 * written: esbuild reads the specifiers, so no text that merely looks like one is touched. */
function apiImport(api, file) {
  return {
    name: "suite-api",
    setup(build) {
      build.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === "entry-point") return undefined;
        if (api === null || args.path !== "slicecheck/suite")
          return { path: args.path, external: true };
        const rel = relative(dirname(file), api).split(sep).join("/");
        return { path: rel.startsWith(".") ? rel : `./${rel}`, external: true };
      });
    },
  };
}

/**
 * The built-in suites (suites/**.ts) compiled one file each to dist/suites, as tsx would on
 * every run, with the sha256 of each source in dist/suites/sources.json: a run loads these only
 * while every source still has its hash (src/harness/suite-compiled.ts). Their `slicecheck/suite`
 * is the one module of bundleSuiteApi. `from` and `to` are other folders for the tests. Returns
 * how many, or null without esbuild.
 */
export async function compileSuites(
  root,
  from = join(root, "suites"),
  to = join(root, "dist", "suites"),
) {
  const esbuild = esbuildOf(root);
  if (!esbuild) return null;
  const manifest = {};
  mkdirSync(to, { recursive: true });
  const api = await bundleSuiteApi(esbuild, root, to);
  for (const rel of tsFiles(from)) {
    const source = readFileSync(join(from, rel));
    const target = join(to, rel.replace(/\.ts$/, ".js"));
    mkdirSync(dirname(target), { recursive: true });
    await esbuild.build({
      entryPoints: [join(from, rel)],
      bundle: true,
      format: "esm",
      platform: "node",
      target: "node20",
      outfile: target,
      logLevel: "error",
      plugins: [apiImport(api, target)],
    });
    manifest[rel.split(sep).join("/")] = createHash("sha256").update(source).digest("hex");
  }
  writeFileSync(join(to, "sources.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  return Object.keys(manifest).length;
}
