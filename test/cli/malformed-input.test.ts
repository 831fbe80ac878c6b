// Malformed input, table-driven: every row is refused with exit 3 and its exact message, and
// no node is connected to. The proof of "no connection" is the simulated sshd's own log
// (LogLevel VERBOSE writes one "Connection from" line per TCP connection), read before and
// after each row; a control row shows the count does move when a command does connect.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "../helpers/cli.js";
import { sshdConnections, useCluster } from "../helpers/cluster.js";

interface Row {
  name: string;
  /** Arguments; `{inv}` is the good inventory, `{dir}` the test folder. */
  args: string[];
  /** Files to write first, relative to the test folder. */
  files?: Record<string, string>;
  env?: Record<string, string>;
  /** The substring the error line must contain (file:line for files). */
  expect: string;
}

const BOMB = `a: &a [x, x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
`;

function layout(devices: string): string {
  return `version: v1\nmig-configs:\n  cfg:\n    - devices: all\n      mig-enabled: true\n      mig-devices: ${devices}\n`;
}

describe("malformed input is refused before any connection (exit 3, real sshd logs)", function () {
  this.timeout(120_000);
  const c = useCluster(2);
  let good = "";
  let head = "";
  let first = ""; // sim01's host and port: `{host: …, port: …}`

  before(() => {
    const [a, b] = c.inventory.nodes;
    head = `defaults: {user: ${a!.user}, identity_file: ${a!.identityFile}, known_hosts: ${a!.knownHosts}, ssh_config: none}\nnodes:\n  sim01: {host: ${a!.host}, port: ${a!.port}}\n  sim02: {host: ${b!.host}, port: ${b!.port}}\n`;
    first = `{host: ${a!.host}, port: ${a!.port}}`;
    good = join(c.dir, "good.yaml");
    writeFileSync(good, head);
    writeFileSync(join(c.dir, "a-file"), "not a folder\n");
    mkdirSync(join(c.dir, "a-folder"), { recursive: true });
    writeFileSync(join(c.dir, "ok-layout.yaml"), layout('{"1g.10gb": 2}'));
  });

  // Inventory text: the good one with `extra` appended (line 5 on) or a line replaced.
  const inv = (extra: string) => () => `${head}${extra}`;
  const entry = (lines: string) =>
    `version: v1\nmig-configs:\n  cfg:\n    - ${lines}\n      mig-enabled: true\n      mig-devices: {"1g.10gb": 1}\n`;
  const rows: (Omit<Row, "files"> & { files?: Record<string, string | (() => string)> })[] = [
    // --- issue 26: the malformed inputs a fault campaign found mishandled ---
    {
      name: "inventory: host:port in host",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv('  sim03: {host: "127.0.0.1:42301"}\n') },
      expect:
        "i.yaml:5: nodes.sim03.host: '127.0.0.1:42301' is host:port; give the host alone and the port apart (port: 42301)",
    },
    {
      name: "inventory: invalid IPv4",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv("  sim03: {host: 127.0.0.300}\n") },
      expect:
        "i.yaml:5: nodes.sim03.host: '127.0.0.300' is not an IPv4 address (four numbers 0-255)",
    },
    {
      name: "inventory: 300-character host",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv(`  sim03: {host: ${"a".repeat(300)}}\n`) },
      expect: "i.yaml:5: nodes.sim03.host: a DNS name has at most 253 characters, this one 300",
    },
    {
      name: "inventory: 70-character label in a node name used as its host",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv(`  ${"b".repeat(70)}.example.org: {port: 22}\n`) },
      expect: `i.yaml:5: nodes.${"b".repeat(70)}.example.org: host "${"b".repeat(70)}.example.org": a DNS name's labels have at most 63 characters`,
    },
    {
      name: "inventory: YAML !!python/object tag",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv("  sim03: !!python/object:os.system {host: 127.0.0.99}\n") },
      expect:
        "i.yaml:5: YAML tag tag:yaml.org,2002:python/object:os.system is not one slicecheck reads",
    },
    {
      name: "inventory: known_hosts that is a folder",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: {
        "i.yaml": () => `${head}  sim03: {host: 127.0.0.99, known_hosts: ${c.dir}/a-folder}\n`,
      },
      expect: "i.yaml:5: nodes.sim03.known_hosts: known_hosts {dir}/a-folder is a folder",
    },
    {
      name: "inventory: two nodes with the same host:port",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": () => `${head}  sim03: ${first}\n` },
      expect: "i.yaml:5: nodes.sim03: nodes sim01 and sim03 both reach",
    },
    {
      name: "inventory: node names differing only in case, same host",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": () => `${head}  SIM01: ${first}\n` },
      expect: "i.yaml:5: nodes.SIM01: nodes sim01 and SIM01 both reach",
    },
    {
      name: "ssh_config: Host line without a pattern",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: {
        "bad-ssh-config": "Host\n  User bob\n",
        "i.yaml": () => head.replace("ssh_config: none", `ssh_config: ${c.dir}/bad-ssh-config`),
      },
      expect: 'bad-ssh-config:1: no argument after keyword "host" (ssh refuses this file too)',
    },
    {
      name: "inventory: INI range past the host limit",
      args: ["inventory", "-i", "{dir}/i.ini", "--list"],
      files: { "i.ini": "[gpus]\ngpu[1:1000]x[1:1000]\n" },
      expect:
        "i.ini:2: gpu[1:1000]x[1:1000]: expands to 1,000,000 hosts; one inventory may name at most 100,000",
    },
    {
      name: "run --grep '(' (not a regular expression)",
      args: ["run", "-i", "{inv}", "--grep", "(", "--db", "{dir}/r.db", "--out", "{dir}/out"],
      expect: '--grep "(": not a regular expression',
    },
    {
      name: "run --db URL with a bad percent-encoding",
      args: ["run", "-i", "{inv}", "--db", "postgres://u:p%zz@127.0.0.1/db", "--out", "{dir}/out"],
      expect: "bad percent-encoding: '%' must start %XX",
    },
    {
      name: "run --db URL whose %XX bytes are not UTF-8",
      args: ["run", "-i", "{inv}", "--db", "postgres://u%C3%28@127.0.0.1/db", "--out", "{dir}/out"],
      expect: "bad percent-encoding: its %XX bytes are not UTF-8",
    },
    {
      name: "run --db sslmode=bogus",
      args: [
        "run",
        "-i",
        "{inv}",
        "--db",
        "postgres://u@127.0.0.1/db?sslmode=bogus",
        "--out",
        "{dir}/out",
      ],
      expect:
        "sslmode=bogus is not one of disable, prefer, require, verify-ca, verify-full, no-verify",
    },
    {
      name: "run --db URL with a space",
      args: ["run", "-i", "{inv}", "--db", "postgres://u@127.0.0.1/my db", "--out", "{dir}/out"],
      expect: "holds a space; a URL has none",
    },
    {
      name: "run --db mysql://",
      args: ["run", "-i", "{inv}", "--db", "mysql://u@127.0.0.1/db", "--out", "{dir}/out"],
      expect: "--db mysql://u@127.0.0.1/db: unknown scheme 'mysql://'",
    },
    {
      name: "run --db file://",
      args: ["run", "-i", "{inv}", "--db", "file:///tmp/x.db", "--out", "{dir}/out"],
      expect: "--db file:///tmp/x.db: unknown scheme 'file://'",
    },
    {
      name: "apply: devices [0, 0]",
      args: ["apply", "-i", "{inv}", "{dir}/l.yaml"],
      files: { "l.yaml": entry("devices: [0, 0]") },
      expect: "GPU index 0 is listed twice",
    },
    {
      name: "apply: devices [99]",
      args: ["apply", "-i", "{inv}", "{dir}/l.yaml"],
      files: { "l.yaml": entry("devices: [99]") },
      expect: "GPU index 99: no node holds more than 64 GPUs",
    },
    {
      name: "apply: device-filter ''",
      args: ["apply", "-i", "{inv}", "{dir}/l.yaml"],
      files: { "l.yaml": entry("devices: all\n      device-filter: ''") },
      expect: "an empty device-filter matches no GPU",
    },
    // --- inventories (file:line named) ---
    {
      name: "inventory: YAML alias bomb",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": () => `${head}x:\n${BOMB.replace(/^/gm, "  ")}` },
      expect: "i.yaml:7: the YAML aliases expand to more than 100 copies",
    },
    {
      name: "inventory: alias bomb, doctor",
      args: ["doctor", "-i", "{dir}/i.yaml"],
      files: { "i.yaml": () => `${head}x:\n${BOMB.replace(/^/gm, "  ")}` },
      expect: "i.yaml:7: the YAML aliases expand to more than 100 copies",
    },
    {
      name: "inventory: not valid YAML",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv("  sim03: host: x: y\n") },
      expect: "i.yaml:5: not valid YAML: Nested mappings are not allowed in compact mappings",
    },
    {
      name: "inventory: duplicate node",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv("  sim01: {host: 127.0.0.99}\n") },
      expect: "i.yaml:5: not valid YAML: Map keys must be unique",
    },
    {
      name: "inventory: port not a number",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv('  sim03: {host: 127.0.0.99, port: "22a"}\n') },
      expect: 'i.yaml:5: nodes.sim03.port: expected a port number (integer 1-65535), got "22a"',
    },
    {
      name: "inventory: port out of range",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv("  sim03: {host: 127.0.0.99, port: 70000}\n") },
      expect: "i.yaml:5: nodes.sim03.port: expected a port number (integer 1-65535), got 70000",
    },
    {
      name: "inventory: unknown field",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv("  sim03: {hots: 127.0.0.99}\n") },
      expect: "i.yaml:5: nodes.sim03: unknown field 'hots'",
    },
    {
      name: "inventory: node name with a shell character",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv('  "a;b": {host: 127.0.0.99}\n') },
      expect: "i.yaml:5: nodes.a;b: node names use letters, digits",
    },
    {
      name: "inventory: host that is an ssh option",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv('  sim03: {host: "-oProxyCommand=touch /tmp/x"}\n') },
      expect: "i.yaml:5: nodes.sim03.host: expected a host name or address",
    },
    {
      name: "inventory: user with a shell character",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv('  sim03: {host: 127.0.0.99, user: "root;id"}\n') },
      expect: "i.yaml:5: nodes.sim03.user: expected a login user name",
    },
    {
      name: "inventory: unknown host_key_policy",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv("  sim03: {host: 127.0.0.99, host_key_policy: yolo}\n") },
      expect: "i.yaml:5: nodes.sim03.host_key_policy: expected 'strict' or 'accept-new'",
    },
    {
      name: "inventory: connect_timeout beyond a timer's reach",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv("  sim03: {host: 127.0.0.99, connect_timeout: 3000000}\n") },
      expect:
        "i.yaml:5: nodes.sim03.connect_timeout: expected a number of seconds (above 0, at most 3600)",
    },
    {
      name: "inventory: negative connect_timeout",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv("  sim03: {host: 127.0.0.99, connect_timeout: -1}\n") },
      expect: "i.yaml:5: nodes.sim03.connect_timeout: expected a number of seconds",
    },
    {
      name: "inventory: passphrase variable that is not a name",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv('  sim03: {host: 127.0.0.99, identity_passphrase_env: "A-B"}\n') },
      expect:
        "i.yaml:5: nodes.sim03.identity_passphrase_env: expected the NAME of an environment variable",
    },
    {
      name: "inventory: become neither sudo nor none",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv("  sim03: {host: 127.0.0.99, become: maybe}\n") },
      expect: "i.yaml:5: nodes.sim03.become: expected 'sudo', 'none', true or false",
    },
    {
      name: "inventory: tags not a list",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv("  sim03: {host: 127.0.0.99, tags: gpu}\n") },
      expect: "i.yaml:5: nodes.sim03.tags: expected a list of tags",
    },
    {
      name: "inventory: group naming an unknown node",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": inv("groups:\n  g: [sim01, ghost]\n") },
      expect: "i.yaml:6: groups.g.1: group 'g' names node 'ghost', which is not in nodes:",
    },
    {
      name: "inventory: a list, not a mapping",
      args: ["exec", "-i", "{dir}/i.yaml", "--", "true"],
      files: { "i.yaml": "- sim01\n- sim02\n" },
      expect: "i.yaml:1: expected a mapping",
    },
    {
      name: "inventory: a folder",
      args: ["exec", "-i", "{dir}/a-folder", "--", "true"],
      expect: "a-folder: cannot read the inventory: EISDIR",
    },
    {
      name: "inventory: missing",
      args: ["exec", "-i", "{dir}/nope.yaml", "--", "true"],
      expect: "nope.yaml does not exist",
    },
    // --- numeric options ---
    {
      name: "exec --timeout 0",
      args: ["exec", "-i", "{inv}", "--timeout", "0", "--", "true"],
      expect:
        "--timeout expects a duration above 0 and at most 7 days (604800 s): seconds (30) or with a unit (30s, 5m, 1h, 1h30m), got '0'",
    },
    {
      name: "exec --timeout of 25 days (would overflow the timer)",
      args: ["exec", "-i", "{inv}", "--timeout", "2160000", "--", "true"],
      expect:
        "--timeout expects a duration above 0 and at most 7 days (604800 s): seconds (30) or with a unit (30s, 5m, 1h, 1h30m), got '2160000'",
    },
    {
      name: "exec --timeout not a number",
      args: ["exec", "-i", "{inv}", "--timeout", "ten", "--", "true"],
      expect: "got 'ten'",
    },
    {
      name: "exec --concurrency 0",
      args: ["exec", "-i", "{inv}", "--concurrency", "0", "--", "true"],
      expect: "--concurrency expects a whole number from 1 to 1024, got '0'",
    },
    {
      name: "exec --concurrency 1025",
      args: ["exec", "-i", "{inv}", "--concurrency", "1025", "--", "true"],
      expect: "--concurrency expects a whole number from 1 to 1024, got '1025'",
    },
    {
      name: "exec --concurrency 1.5",
      args: ["exec", "-i", "{inv}", "--concurrency", "1.5", "--", "true"],
      expect: "--concurrency expects a whole number from 1 to 1024, got '1.5'",
    },
    {
      name: "doctor --timeout of 8 days",
      args: ["doctor", "-i", "{inv}", "--timeout", "691200"],
      expect:
        "--timeout expects a duration above 0 and at most 7 days (604800 s): seconds (30) or with a unit (30s, 5m, 1h, 1h30m), got '691200'",
    },
    {
      name: "run --duration below 1 s",
      args: ["run", "-i", "{inv}", "--duration", "0.5"],
      expect:
        "--duration expects a duration from 1 s to 7 days (604800 s): seconds (30) or with a unit (30s, 5m, 1h, 1h30m), got '0.5'",
    },
    {
      name: "run --duration of 25 days (would overflow the timer)",
      args: ["run", "-i", "{inv}", "--duration", "2160000"],
      expect:
        "--duration expects a duration from 1 s to 7 days (604800 s): seconds (30) or with a unit (30s, 5m, 1h, 1h30m), got '2160000'",
    },
    {
      name: "run --duration negative",
      args: ["run", "-i", "{inv}", "--duration=-5"],
      expect:
        "--duration expects a duration from 1 s to 7 days (604800 s): seconds (30) or with a unit (30s, 5m, 1h, 1h30m), got '-5'",
    },
    {
      name: "run --duration with an unknown unit",
      args: ["run", "-i", "{inv}", "--duration", "5min"],
      expect:
        "--duration expects a duration from 1 s to 7 days (604800 s): seconds (30) or with a unit (30s, 5m, 1h, 1h30m), got '5min'",
    },
    {
      name: "run --duration of 8 days written with a unit",
      args: ["run", "-i", "{inv}", "--duration", "8d"],
      expect: "got '8d'",
    },
    {
      name: "run --duration with units in the wrong order",
      args: ["run", "-i", "{inv}", "--duration", "30m1h"],
      expect: "got '30m1h'",
    },
    {
      name: "run --local with two nodes selected",
      args: ["run", "-i", "{inv}", "--local"],
      expect:
        "--local runs one node's commands on this machine, but 2 nodes are selected; select the node this is with --nodes",
    },
    {
      name: "run --concurrency 5000",
      args: ["run", "-i", "{inv}", "--concurrency", "5000"],
      expect: "--concurrency expects a whole number from 1 to 1024, got '5000'",
    },
    {
      name: "run --aggressors 0",
      args: ["run", "-i", "{inv}", "--suites", "isolation", "--aggressors", "0"],
      expect: "--aggressors expects a whole number 1 or more, got '0'",
    },
    {
      name: "run --aggressors 1.5",
      args: ["run", "-i", "{inv}", "--suites", "isolation", "--aggressors", "1.5"],
      expect: "--aggressors expects a whole number 1 or more, got '1.5'",
    },
    {
      name: "run --tolerance 0",
      args: ["run", "-i", "{inv}", "--suites", "isolation", "--tolerance", "0"],
      expect:
        "--tolerance expects a percentage above 0 and at most 100 (5 or 5% is five percent), got '0'",
    },
    {
      name: "run --tolerance 0.05 (a fraction, not percent)",
      args: ["run", "-i", "{inv}", "--suites", "isolation", "--tolerance", "0.05"],
      expect: "--tolerance is in percent: '0.05' would be 0.05 %; for 5 percent write 5",
    },
    {
      name: "run --tolerance 500",
      args: ["run", "-i", "{inv}", "--suites", "isolation", "--tolerance", "500"],
      expect: "--tolerance expects a percentage above 0 and at most 100",
    },
    {
      name: "diff --tolerance 0.05 (parsed as run's)",
      args: ["diff", "--before", "a", "--after", "b", "--tolerance", "0.05"],
      expect: "--tolerance is in percent: '0.05' would be 0.05 %; for 5 percent write 5",
    },
    {
      name: "run --suites unknown",
      args: ["run", "-i", "{inv}", "--suites", "stress,bogus"],
      expect: "--suites: unknown suite 'bogus'",
    },
    {
      name: "run --faults unknown",
      args: ["run", "-i", "{inv}", "--suites", "isolation", "--faults", "meteor"],
      expect: "--faults: unknown fault 'meteor'",
    },
    {
      name: "run --suites layout without --layout",
      args: ["run", "-i", "{inv}", "--suites", "layout"],
      expect:
        "--suites layout checks the layout a run applies, or each node's intended layout; give --layout FILE -c NAME too",
    },
    {
      name: "run -c without --layout",
      args: ["run", "-i", "{inv}", "-c", "x"],
      expect: "-c/--config names a config of a --layout file; give --layout too",
    },
    // --- output paths ---
    {
      name: "run --db naming a folder",
      args: ["run", "-i", "{inv}", "--db", "{dir}/a-folder", "--out", "{dir}/out"],
      expect: "a-folder: is a folder, not a database file",
    },
    {
      name: "run --db under a regular file",
      args: ["run", "-i", "{inv}", "--db", "{dir}/a-file/x.db", "--out", "{dir}/out"],
      expect: "a-file is a file, so nothing can be created under it",
    },
    {
      name: "run $SLICECHECK_DB naming a folder",
      args: ["run", "-i", "{inv}", "--out", "{dir}/out"],
      env: { SLICECHECK_DB: "{dir}/a-folder" },
      expect: "$SLICECHECK_DB {dir}/a-folder: is a folder, not a database file",
    },
    {
      name: "run --out naming a file",
      args: ["run", "-i", "{inv}", "--db", "{dir}/r.db", "--out", "{dir}/a-file"],
      expect: "--out {dir}/a-file: is a file, not a folder",
    },
    {
      name: "run --out under a regular file",
      args: ["run", "-i", "{inv}", "--db", "{dir}/r.db", "--out", "{dir}/a-file/run"],
      expect: "a-file is a file, so nothing can be created under it",
    },
    {
      name: "apply --journal-dir naming a file",
      args: ["apply", "-i", "{inv}", "{dir}/ok-layout.yaml", "--journal-dir", "{dir}/a-file"],
      expect: "--journal-dir {dir}/a-file: is a file, not a folder",
    },
    // --- layouts (file:line named) ---
    {
      name: "apply: layout alias bomb",
      args: ["apply", "-i", "{inv}", "{dir}/l.yaml"],
      files: { "l.yaml": () => `${layout("{}")}${BOMB}` },
      expect: "l.yaml:8: the YAML aliases expand to more than 100 copies",
    },
    {
      name: "run --layout: layout alias bomb",
      args: ["run", "-i", "{inv}", "--layout", "{dir}/l.yaml", "--db", "{dir}/r.db"],
      files: { "l.yaml": () => `${layout("{}")}${BOMB}` },
      expect: "l.yaml:8: the YAML aliases expand to more than 100 copies",
    },
    {
      name: "apply: a billion instances",
      args: ["apply", "-i", "{inv}", "{dir}/l.yaml"],
      files: { "l.yaml": () => layout('{"1g.10gb": 1000000000}') },
      expect:
        "l.yaml:6: config 'cfg', entry 1, mig-devices.1g.10gb: 1000000000 instances asked, but no catalogued GPU holds more than 7 MIG devices",
    },
    {
      name: "run --layout: a billion instances",
      args: ["run", "-i", "{inv}", "--layout", "{dir}/l.yaml", "--db", "{dir}/r.db"],
      files: { "l.yaml": () => layout('{"1g.10gb": 1000000000}') },
      expect: "l.yaml:6: config 'cfg', entry 1, mig-devices.1g.10gb: 1000000000 instances asked",
    },
    {
      name: "apply: eight compute instances of a 7-slice GPU",
      args: ["apply", "-i", "{inv}", "{dir}/l.yaml"],
      files: { "l.yaml": () => layout('{"1c.7g.80gb": 8}') },
      expect: "l.yaml:6: config 'cfg', entry 1, mig-devices.1c.7g.80gb: 8 instances asked",
    },
    {
      name: "apply: negative count",
      args: ["apply", "-i", "{inv}", "{dir}/l.yaml"],
      files: { "l.yaml": () => layout('{"1g.10gb": -1}') },
      expect:
        "l.yaml:6: config 'cfg', entry 1, mig-devices.1g.10gb: expected a whole number of instances",
    },
    {
      name: "apply: layout not valid YAML",
      args: ["apply", "-i", "{inv}", "{dir}/l.yaml"],
      files: { "l.yaml": () => layout('{"1g.10gb": 2}}') },
      expect: "l.yaml:6: not valid YAML: Unexpected flow-map-end token",
    },
    {
      name: "apply: layout file missing",
      args: ["apply", "-i", "{inv}", "{dir}/none.yaml"],
      expect: "none.yaml: cannot read the layout file (ENOENT)",
    },
    {
      name: "apply: unknown config",
      args: ["apply", "-i", "{inv}", "{dir}/ok-layout.yaml", "-c", "nope"],
      expect: "has no config 'nope'; it has: cfg",
    },
    {
      name: "cleanup: run id with shell characters",
      args: ["cleanup", "-i", "{inv}", "--run", "x;reboot"],
      expect: "--run expects a run id like sc-20261129T101500Z-1a2b3c, got 'x;reboot'",
    },
    {
      name: "sim up: spec alias bomb",
      args: ["sim", "up", "--spec", "{dir}/spec.yaml", "--inventory", "{dir}/other/sim.yaml"],
      files: { "spec.yaml": () => `nodes:\n  - gpu: H100-80GB\n${BOMB}` },
      expect: "spec.yaml:4: the YAML aliases expand to more than 100 copies",
    },
  ];

  it(`refuses ${rows.length} malformed inputs with exit 3 and their message, connecting to no node`, async () => {
    const sub = (s: string) => s.replaceAll("{inv}", good).replaceAll("{dir}", c.dir);
    // Control: a good command does show up in the sshd logs.
    const before = sshdConnections(c);
    const ok = await cli("exec", "-i", good, "--", "true");
    assert.equal(ok.code, 0, ok.stderr);
    assert.ok(sshdConnections(c) >= before + 2, "the log counts connections");

    const failures: string[] = [];
    for (const row of rows) {
      for (const [name, text] of Object.entries(row.files ?? {}))
        writeFileSync(join(c.dir, name), typeof text === "function" ? text() : text);
      const saved: Record<string, string | undefined> = {};
      for (const [k, v] of Object.entries(row.env ?? {})) {
        saved[k] = process.env[k];
        process.env[k] = sub(v);
      }
      const n0 = sshdConnections(c);
      let r: Awaited<ReturnType<typeof cli>>;
      try {
        r = await cli(...row.args.map(sub));
      } finally {
        for (const [k, v] of Object.entries(saved)) {
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
        }
      }
      const connected = sshdConnections(c) - n0;
      const expect = sub(row.expect);
      if (r.code !== 3) failures.push(`${row.name}: exit ${r.code}: ${r.stderr}`);
      else if (!r.stderr.includes(expect))
        failures.push(`${row.name}: expected '${expect}' in: ${r.stderr}`);
      else if (/^\s+at .+:\d+:\d+\)?$|internal error/m.test(r.stderr))
        failures.push(`${row.name}: a stack trace: ${r.stderr}`);
      if (connected !== 0) failures.push(`${row.name}: ${connected} connection(s) to the nodes`);
    }
    assert.deepEqual(failures, [], failures.join("\n"));
    assert.ok(rows.length >= 40);
  });
});
