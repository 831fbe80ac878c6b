// slicecheck's ssh_config resolution against OpenSSH's own: `ssh -G -F FILE HOST` prints what
// ssh would use, and for every host below both must agree on the options slicecheck reads.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { homedir, userInfo } from "node:os";
import { join, resolve } from "node:path";
import { loadSshConfig, type SshConfigHit } from "../../src/inventory/ssh-config.js";
import { tempDir } from "../helpers/tmp.js";

const FIXTURES = resolve("test/fixtures/ssh_config");
const KEYS = [
  "hostname",
  "user",
  "port",
  "identityfile",
  "proxycommand",
  "proxyjump",
  "userknownhostsfile",
  "stricthostkeychecking",
  "connecttimeout",
] as const;
type View = Partial<Record<(typeof KEYS)[number], string>>;

function sshG(file: string, host: string, user?: string): View {
  const args = ["-G", "-F", file, ...(user ? ["-l", user] : []), host];
  const out = execFileSync("ssh", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const view: View = {};
  for (const line of out.split("\n")) {
    const sp = line.indexOf(" ");
    const k = line.slice(0, sp) as (typeof KEYS)[number];
    if (!KEYS.includes(k)) continue;
    const v = line.slice(sp + 1);
    view[k] = view[k] === undefined ? v : `${view[k]}\n${v}`;
  }
  return view;
}

const DEFAULT_IDS = [
  "id_rsa",
  "id_ecdsa",
  "id_ecdsa_sk",
  "id_ed25519",
  "id_ed25519_sk",
  "id_xmss",
  "id_dsa",
]
  .map((k) => `~/.ssh/${k}`)
  .join("\n");

/** Our resolution printed the way ssh -G prints it, with ssh's defaults where nothing applies. */
function view(hit: SshConfigHit, alias: string, user?: string): View {
  const shk = hit.strictHostKeyChecking?.value;
  const v: View = {
    hostname: hit.hostName?.value ?? alias.toLowerCase(),
    user: user ?? hit.user?.value ?? userInfo().username,
    port: String(hit.port?.value ?? 22),
    identityfile: hit.identityFiles?.map((i) => i.value).join("\n") ?? DEFAULT_IDS,
    userknownhostsfile:
      hit.userKnownHostsFile?.value.join(" ") ??
      `${join(homedir(), ".ssh/known_hosts")} ${join(homedir(), ".ssh/known_hosts2")}`,
    stricthostkeychecking:
      shk === undefined
        ? "ask"
        : shk === "yes" || shk === "true"
          ? "true"
          : shk === "no" || shk === "off" || shk === "false"
            ? "false"
            : shk,
    connecttimeout: hit.connectTimeout ? String(hit.connectTimeout.value) : "none",
  };
  if (hit.proxyCommand) v.proxycommand = hit.proxyCommand.value;
  if (hit.proxyJump) v.proxyjump = hit.proxyJump.value.join(",");
  return v;
}

const dir = tempDir("sshcfg");
function withDir(name: string): string {
  const p = join(dir, name);
  writeFileSync(p, readFileSync(join(FIXTURES, name), "utf8").replaceAll("@DIR@", FIXTURES));
  return p;
}

const CASES: { file: string; hosts: (string | [string, string])[] }[] = [
  {
    file: "bastion.conf",
    hosts: [
      "bastion",
      "gpu-01",
      "gpu-123",
      "gpu-1234",
      "gpu-99",
      "10.20.3.4",
      "10.21.0.1",
      "other",
    ],
  },
  {
    file: "match.conf",
    hosts: [
      "a.lab",
      "db1.lab",
      "short-x",
      "short-final",
      "bad",
      "10.0.0.1",
      ["short-x", "ops"],
      ["a.lab", "ops"],
    ],
  },
  { file: "include.conf", hosts: ["gpu7", "login1", "skip-me", "plain"] },
];

describe("ssh_config as ssh -G resolves it", () => {
  let compared = 0;
  for (const c of CASES) {
    it(`${c.file}: ${c.hosts.length} hosts agree with ssh -G`, () => {
      const file = withDir(c.file);
      const resolver = loadSshConfig(file)!;
      for (const h of c.hosts) {
        const [alias, user] = typeof h === "string" ? [h, undefined] : h;
        const ours = view(resolver(alias, { user }), alias, user);
        assert.deepEqual(
          ours,
          sshG(file, alias, user),
          `${c.file} ${alias}${user ? ` -l ${user}` : ""}`,
        );
        compared++;
      }
    });
  }
  after(() => {
    // For the closing report: how many host resolutions were compared.
    if (compared)
      process.stdout.write(`      (${compared} host resolutions compared with ssh -G)\n`);
  });

  it("names file and line of every value, and warns about Match exec instead of running it", () => {
    const p = join(dir, "exec.conf");
    const marker = join(dir, "exec-ran");
    writeFileSync(
      p,
      [`Match exec "touch ${marker}"`, "  Port 1", "Host gpu1", "  Port 2022", "  User=ops"].join(
        "\n",
      ),
    );
    const hit = loadSshConfig(p)!("gpu1");
    assert.deepEqual(hit.port, { value: 2022, where: `${p}:4` });
    assert.deepEqual(hit.user, { value: "ops", where: `${p}:5` });
    assert.match(hit.warnings.join("\n"), new RegExp(`${p}:1: Match exec is never run`));
    assert.throws(() => readFileSync(marker), /ENOENT/, "the exec command must not have run");
  });

  it("reads relative Include paths from ~/.ssh (here: the sshDir given)", () => {
    const p = join(dir, "rel.conf");
    writeFileSync(p, "Include conf.d/1*.conf\n");
    const hit = loadSshConfig(p, { sshDir: FIXTURES })!("gpu5");
    assert.equal(hit.hostName?.value, "gpu5.cluster.example");
    assert.equal(hit.hostName?.where, `${join(FIXTURES, "conf.d/10-gpu.conf")}:3`);
  });

  it("refuses an unknown Match criterion, naming file and line", () => {
    const p = join(dir, "bad.conf");
    writeFileSync(p, "Host a\n  Port 1\nMatch hots x\n  Port 2\n");
    assert.throws(
      () => loadSshConfig(p)!("a"),
      new RegExp(`${p}:3: unsupported Match criterion 'hots'`),
    );
  });
});
