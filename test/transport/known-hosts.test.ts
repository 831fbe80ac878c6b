import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  checkHostKey,
  fingerprint,
  hashName,
  keyTypeOf,
  recordHostKey,
} from "../../src/transport/known-hosts.js";
import { tempDir } from "../helpers/tmp.js";

const dir = tempDir("kh");
function newKey(name: string, alg = "ed25519"): { blob: Buffer; line: string } {
  const path = join(dir, name);
  execFileSync("ssh-keygen", ["-q", "-t", alg, "-N", "", "-f", path]);
  const [type, b64] = readFileSync(`${path}.pub`, "utf8").split(" ");
  return { blob: Buffer.from(b64!, "base64"), line: `${type} ${b64}` };
}

describe("known_hosts", () => {
  const a = newKey("a");
  const b = newKey("b");

  it("sees a file rewritten at once with a key of the same size (its parse is reused only for the same text)", () => {
    const kh = join(dir, "rewritten");
    writeFileSync(kh, `[10.0.0.7]:2222 ${a.line}\n`);
    assert.deepEqual(checkHostKey(kh, "10.0.0.7", 2222, a.blob), { status: "known" });
    assert.deepEqual(checkHostKey(kh, "10.0.0.7", 2222, a.blob), { status: "known" }, "cached");
    // Same length, same mtime tick: a cache keyed on size or mtime would still say "known".
    writeFileSync(kh, `[10.0.0.7]:2222 ${b.line}\n`);
    assert.deepEqual(checkHostKey(kh, "10.0.0.7", 2222, a.blob), {
      status: "changed",
      line: 1,
      knownType: "ssh-ed25519",
    });
    assert.deepEqual(checkHostKey(kh, "10.0.0.7", 2222, b.blob), { status: "known" });
  });

  it("matches plain names, [host]:port, comma lists and wildcards", () => {
    const kh = join(dir, "plain");
    writeFileSync(kh, `# comment\nother,[10.0.0.5]:2222 ${a.line}\n*.lab ${b.line}\n`);
    assert.deepEqual(checkHostKey(kh, "10.0.0.5", 2222, a.blob), { status: "known" });
    assert.deepEqual(
      checkHostKey(kh, "10.0.0.5", 22, a.blob),
      { status: "unknown" },
      "port 22 is looked up without brackets",
    );
    assert.deepEqual(checkHostKey(kh, "n1.lab", 22, b.blob), { status: "known" });
    assert.deepEqual(checkHostKey(kh, "10.0.0.5", 2222, b.blob), {
      status: "changed",
      line: 2,
      knownType: "ssh-ed25519",
    });
  });

  it("judges a key of another type for a known host as changed, as OpenSSH does", () => {
    const ecdsa = newKey("e", "ecdsa");
    const kh = join(dir, "typed");
    writeFileSync(kh, `[10.0.0.7]:2222 ${a.line}\n`);
    assert.deepEqual(checkHostKey(kh, "10.0.0.7", 2222, ecdsa.blob), {
      status: "changed",
      line: 1,
      knownType: "ssh-ed25519",
    });
    // A host known with both types is known by either key; a third key of either type is not.
    writeFileSync(kh, `[10.0.0.7]:2222 ${a.line}\n[10.0.0.7]:2222 ${ecdsa.line}\n`);
    assert.deepEqual(checkHostKey(kh, "10.0.0.7", 2222, ecdsa.blob), { status: "known" });
    assert.deepEqual(checkHostKey(kh, "10.0.0.7", 2222, b.blob), {
      status: "changed",
      line: 1,
      knownType: "ssh-ed25519",
    });
    assert.deepEqual(checkHostKey(kh, "10.0.0.8", 2222, ecdsa.blob), { status: "unknown" });
  });

  it("matches hashed entries written by ssh-keygen -H", () => {
    const kh = join(dir, "hashed");
    writeFileSync(kh, `[127.0.0.9]:2200 ${a.line}\n`);
    execFileSync("ssh-keygen", ["-H", "-f", kh], { stdio: "ignore" });
    const text = readFileSync(kh, "utf8");
    assert.match(text, /^\|1\|/, "ssh-keygen hashed the file");
    assert.deepEqual(checkHostKey(kh, "127.0.0.9", 2200, a.blob), { status: "known" });
    assert.deepEqual(checkHostKey(kh, "127.0.0.9", 2201, a.blob), { status: "unknown" });
    assert.equal(checkHostKey(kh, "127.0.0.9", 2200, b.blob).status, "changed");
    const mine = join(dir, "mine");
    writeFileSync(mine, `${hashName("[h]:1")} ${a.line}\n`);
    assert.deepEqual(checkHostKey(mine, "h", 1, a.blob), { status: "known" });
  });

  it("honours @revoked and negated patterns", () => {
    const kh = join(dir, "revoked");
    writeFileSync(kh, `@revoked * ${b.line}\n*,!bad.lab ${a.line}\n`);
    assert.equal(checkHostKey(kh, "x", 22, b.blob).status, "revoked");
    assert.equal(checkHostKey(kh, "good.lab", 22, a.blob).status, "known");
    assert.equal(checkHostKey(kh, "bad.lab", 22, a.blob).status, "unknown");
  });

  it("records keys as accept-new does, and reads its type and fingerprint", () => {
    const kh = join(dir, "sub", "new");
    recordHostKey(kh, "127.0.0.3", 2022, a.blob);
    assert.equal(readFileSync(kh, "utf8"), `[127.0.0.3]:2022 ${a.line}\n`);
    assert.equal(keyTypeOf(a.blob), "ssh-ed25519");
    const expected = execFileSync("ssh-keygen", ["-lf", join(dir, "a.pub")], {
      encoding: "utf8",
    }).split(" ")[1];
    assert.equal(fingerprint(a.blob), expected);
  });

  it("finds what OpenSSH finds: ssh-keygen -F on the name ssh looks up, for every entry form", () => {
    // Entry forms ssh and ssh-keygen write or accept: plain, [host]:port, port 22 in brackets,
    // upper case, wildcards inside brackets, negation, hashed plain and hashed [host]:port.
    const kh = join(dir, "openssh-compare");
    const hashed = join(dir, "openssh-compare-hashed");
    writeFileSync(hashed, `hashme ${a.line}\n[hashport]:2022 ${a.line}\n`);
    execFileSync("ssh-keygen", ["-q", "-H", "-f", hashed], { stdio: "ignore" });
    writeFileSync(
      kh,
      [
        `plain ${a.line}`,
        `[withport]:2222 ${a.line}`,
        `[bracket22]:22 ${a.line}`,
        `UPPER,[UpPort]:2200 ${a.line}`,
        `[w?]:2300,gpu*.lab,!gpu9.lab ${a.line}`,
        `10.1.2.3 ${a.line}`,
        readFileSync(hashed, "utf8").trim(),
        "",
      ].join("\n"),
    );
    const queries: [string, number][] = [
      ["plain", 22],
      ["plain", 2222], // no port in the entry: ssh looks up [plain]:2222 and does not find it
      ["PLAIN", 22],
      ["withport", 2222],
      ["withport", 22],
      ["withport", 2223],
      ["WithPort", 2222],
      ["bracket22", 22], // ssh looks up "bracket22" for port 22, not "[bracket22]:22"
      ["upper", 22],
      ["upport", 2200],
      ["w1", 2300],
      ["w12", 2300],
      ["gpu5.lab", 22],
      ["gpu9.lab", 22],
      ["10.1.2.3", 22],
      ["10.1.2.3", 2222],
      ["hashme", 22],
      ["HASHME", 22],
      ["hashport", 2022],
      ["HashPort", 2022],
      ["hashport", 22],
    ];
    const differ: string[] = [];
    for (const [host, port] of queries) {
      // ssh lowercases the host, then looks up `host` on port 22 and `[host]:port` elsewhere.
      const name = port === 22 ? host.toLowerCase() : `[${host.toLowerCase()}]:${port}`;
      let openssh: boolean;
      try {
        execFileSync("ssh-keygen", ["-F", name, "-f", kh], { stdio: "ignore" });
        openssh = true;
      } catch {
        openssh = false;
      }
      const ours = checkHostKey(kh, host, port, a.blob).status === "known";
      if (ours !== openssh) differ.push(`${host}:${port}: ssh-keygen -F ${openssh}, ours ${ours}`);
    }
    assert.deepEqual(differ, []);
    // Both answers occur, so the comparison can tell them apart.
    assert.equal(checkHostKey(kh, "plain", 2222, a.blob).status, "unknown");
    assert.equal(checkHostKey(kh, "HashPort", 2022, a.blob).status, "known");
  });
});
