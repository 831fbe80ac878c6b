// npm test's set-up (scripts/setup.mjs) fetches the npm packages without their build scripts and
// then runs those scripts itself, one `npm rebuild <name>` each, beside apt-get and the checks. A
// package missed here would be left unbuilt (better-sqlite3 without its binary), and one named
// twice would be built twice at once, into the same folder.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { nativeEnv, nativePackages, SQLITE_OPT, sqliteOptLevel } from "../../scripts/setup.mjs";
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

  it("compiles SQLite's C at -O1 after any CFLAGS of the user's, and nothing else", () => {
    assert.equal(SQLITE_OPT, "-O1");
    assert.equal(nativeEnv("better-sqlite3", { PATH: "/bin" }).CFLAGS, "-O1");
    // node-gyp's make puts CFLAGS after the package's own -O3: the last -O wins in gcc.
    assert.equal(nativeEnv("better-sqlite3", { CFLAGS: "-g -pipe" }).CFLAGS, "-g -pipe -O1");
    assert.equal(nativeEnv("ssh2", { PATH: "/bin" }).CFLAGS, undefined);
    assert.equal(nativeEnv("ssh2", { CFLAGS: "-g" }).CFLAGS, "-g");
    for (const n of ["better-sqlite3", "cpu-features"]) assert.equal(nativeEnv(n, {}).JOBS, "max");
  });

  it("reads the -O level SQLite was compiled at from make's .d file, the last -O winning", () => {
    const dir = tempDir("setup-sqlite-opt");
    assert.equal(sqliteOptLevel(dir), null, "no build, no level");
    const deps = join(
      dir,
      "node_modules/better-sqlite3/build/Release/.deps/Release/obj.target/sqlite3/gen/sqlite3",
    );
    mkdirSync(deps, { recursive: true });
    // The first two lines of the file node-gyp's make wrote for better-sqlite3 12.11.1 built by
    // the set-up on this machine (December 2026), the middle of the command shortened.
    const line = (flags: string) =>
      `cmd_Release/obj.target/sqlite3/gen/sqlite3/sqlite3.o := cc -o Release/obj.target/sqlite3/gen/sqlite3/sqlite3.o Release/obj/gen/sqlite3/sqlite3.c '-DNODE_GYP_MODULE_NAME=sqlite3' -I/usr/include/node-O2/src -std=c99 -w -m64 ${flags} -MMD -MF ./Release/.deps/Release/obj.target/sqlite3/gen/sqlite3/sqlite3.o.d.raw -c\nRelease/obj.target/sqlite3/gen/sqlite3/sqlite3.o: Release/obj/gen/sqlite3/sqlite3.c \\\n`;
    writeFileSync(join(deps, "sqlite3.o.d"), line("-O3 -fno-omit-frame-pointer -O1"));
    assert.equal(sqliteOptLevel(dir), "-O1");
    writeFileSync(join(deps, "sqlite3.o.d"), line("-O3 -fno-omit-frame-pointer"));
    assert.equal(sqliteOptLevel(dir), "-O3");
  });
});
