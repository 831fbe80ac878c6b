// Bundles each simulated node tool (sim/src/tools.ts SIM_TOOLS) into one file under
// dist/sim-bundle/, at the same path as its entry under dist/sim/. A simulated node starts a Node
// process per nvidia-smi, pgrep or dmesg call (about 60 for one relayout and stress), and most of
// each call's CPU beyond Node's own start-up was loading some 40 modules one by one: on 2 loaded
// cores, the simulated tools were most of the end-to-end tests' CPU. One file per tool loads in
// one read (measured 0.169 s of CPU per `nvidia-smi -L` before, 0.134 s after).
//
// Each module keeps its own import.meta.url (the plugin below writes it in as a literal), so a
// module that finds files beside itself (the workloads' sources, the reaper) finds the same ones
// as unbundled. Where esbuild is missing (npm ci --omit=dev), nothing is bundled and the tools
// run from dist/sim as before (sim/src/tools.ts falls back).
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { pathToFileURL } from "node:url";

/** Each module's import.meta.url as the literal of its own file's URL. */
const ownUrl = {
  name: "own-import-meta-url",
  setup(build) {
    build.onLoad({ filter: /\.js$/ }, (args) => {
      const text = readFileSync(args.path, "utf8");
      if (!text.includes("import.meta.url")) return undefined;
      const url = JSON.stringify(pathToFileURL(args.path).href);
      return { contents: text.replaceAll("import.meta.url", url), loader: "js" };
    });
  },
};

/** Bundles every tool; returns how many, or null when esbuild is not installed. */
export async function bundleSimTools(root) {
  const require = createRequire(join(root, "package.json"));
  let esbuild;
  try {
    esbuild = require("esbuild");
  } catch {
    return null;
  }
  const { SIM_TOOLS, RESIDENT_SCRIPT } = await import(
    pathToFileURL(join(root, "dist/sim/tools.js")).href
  );
  // With the cluster's resident simulator (sim/src/resident), which answers the tools' reads.
  const entries = [...new Set([...Object.values(SIM_TOOLS), RESIDENT_SCRIPT])];
  for (const script of entries) {
    // The same path under dist/sim-bundle as the entry's under dist/sim (sim/src/tools.ts).
    const rel = relative(join(root, "dist", "sim"), join(root, script));
    if (rel.startsWith("..")) continue;
    const outfile = join(root, "dist", "sim-bundle", rel);
    mkdirSync(dirname(outfile), { recursive: true });
    await esbuild.build({
      entryPoints: [join(root, script)],
      outfile,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      // Native addons and their loaders stay where npm put them.
      external: ["better-sqlite3", "ssh2", "cpu-features", "pg-native"],
      // A CommonJS dependency's require() of a Node built-in, inside an ES module.
      banner: {
        js: "import { createRequire as __slicecheckRequire } from 'node:module'; const require = __slicecheckRequire(import.meta.url);",
      },
      plugins: [ownUrl],
      logLevel: "error",
    });
  }
  return entries.length;
}
