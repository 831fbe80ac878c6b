// npm test's set-up (scripts/setup.mjs) fetches the npm packages without their build scripts and
// then runs those scripts itself, one `npm rebuild <name>` each, beside apt-get and the checks. A
// package missed here would be left unbuilt (better-sqlite3 without its binary), and one named
// twice would be built twice at once, into the same folder.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { nativePackages } from "../../scripts/setup.mjs";
import { tempDir } from "../helpers/tmp.js";

describe("npm test's set-up: the dependencies it builds (scripts/setup.mjs)", () => {
  it("names each installed package with an install script once, scoped and nested ones too", () => {
    const dir = tempDir("setup-native");
    mkdirSync(join(dir, "node_modules"));
    // npm's hidden lockfile (node_modules/.package-lock.json, lockfileVersion 3), in the shape
    // https://docs.npmjs.com/cli/v11/configuring-npm/package-lock-json describes.
    const lock = {
      name: "x",
      lockfileVersion: 3,
      requires: true,
      packages: {
        "node_modules/gyp-a": { version: "1.0.0", hasInstallScript: true },
        "node_modules/plain-b": { version: "1.0.0" },
        "node_modules/plain-b/node_modules/gyp-a": { version: "0.9.0", hasInstallScript: true },
        "node_modules/@scope/gyp-c": { version: "2.0.0", hasInstallScript: true },
        "node_modules/plain-d": { version: "1.0.0", hasInstallScript: false },
      },
    };
    writeFileSync(join(dir, "node_modules", ".package-lock.json"), JSON.stringify(lock));
    assert.deepEqual(nativePackages(dir).sort(), ["@scope/gyp-c", "gyp-a"]);
  });

  it("finds the native builds of this project's own dependencies", () => {
    const names = nativePackages();
    for (const n of ["better-sqlite3", "ssh2"]) assert.ok(names.includes(n), names.join(" "));
    assert.ok(!names.includes("mocha"), "mocha has no install script");
  });
});
