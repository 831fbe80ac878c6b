import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { quote, quoteArgv } from "../../src/util/shell.js";

describe("shell quoting", () => {
  it("passes every hostile argument through sh unchanged", () => {
    const hostile = [
      "a b",
      "$(id)",
      "`id`",
      "x;reboot",
      "it's",
      "\\",
      "'",
      '"',
      "*",
      "$HOME",
      "\n",
      "",
      "-rf",
      "a'b'c",
    ];
    const out = execFileSync("sh", ["-c", `printf '%s\\0' ${quoteArgv(hostile)}`], {
      encoding: "utf8",
    });
    assert.deepEqual(out.split("\0").slice(0, -1), hostile);
  });
  it("leaves plain words bare", () => {
    assert.equal(quote("nvidia-smi"), "nvidia-smi");
    assert.equal(quote("--query-gpu=index,name"), "--query-gpu=index,name");
  });
});
