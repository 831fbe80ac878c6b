// The workloads bench's floor: the node-side work of `slicecheck run --suites stress`, done with
// no harness at all. One OpenSSH `ssh` per node (the client's own start, no Node) runs
// discovery's reads, the catalogue's reads and the build probe side by side (the product's own
// lists, from dist/), then the stress of every MIG instance the listing shows, all at once, and
// waits. Each workload's span is taken around it with bash's EPOCHREALTIME, as the recorder
// takes it, and the floor's figure is the measure: wall time less the longest span.
// No lock, no deadline or recorder per workload, no sampler, no records or reports: what is
// left is the simulated nodes' own sshd, tools and workloads, which share this machine's cores
// with whatever drives them. No controller here can go below it.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import YAML from "yaml";

const execFileAsync = promisify(execFile);

async function productLists(root) {
  const load = (rel) => import(pathToFileURL(join(root, "dist", rel)).href);
  const { DISCOVERY_READS } = await load("workloads/instances.js");
  const { TOPOLOGY_READS } = await load("store/topology.js");
  const { buildProbe } = await load("workloads/node-run.js");
  const { stressSpec } = await load("workloads/specs.js");
  const { quote, quoteArgv } = await load("util/shell.js");
  return { DISCOVERY_READS, TOPOLOGY_READS, buildProbe, stressSpec, quote, quoteArgv };
}

/** The script one node runs: bash, for EPOCHREALTIME (the simulated nodes' login shell). */
function nodeScript(p, durationS) {
  const [listing, ...others] = p.DISCOVERY_READS;
  const quiet = (text) => `${text} >/dev/null 2>&1 </dev/null &`;
  const stress = p.stressSpec(durationS);
  return [
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion, on the node
    '[ -n "${EPOCHREALTIME:-}" ] || { echo "the floor needs bash 5 as the login shell" >&2; exit 97; }',
    ...[...others, ...p.TOPOLOGY_READS].map((argv) => quiet(p.quoteArgv(argv))),
    quiet(`sh -c ${p.quote(p.buildProbe().shell)}`),
    `l=$(${p.quoteArgv(listing)} 2>/dev/null); wait`,
    'for u in $(printf "%s\\n" "$l" | sed -n "s/.*(UUID: \\(MIG-[^)]*\\)).*/\\1/p"); do',
    `  ( s=$EPOCHREALTIME; CUDA_VISIBLE_DEVICES=$u ${p.quoteArgv([stress.program, ...stress.args])} >/dev/null 2>&1; e=$EPOCHREALTIME; echo "span $s $e" ) &`,
    "done; wait",
  ].join("\n");
}

/** `ssh`'s arguments for one node of a simulated cluster's inventory (its own key and
 * known_hosts, relative to the inventory's folder); no user or system ssh_config. */
function sshArgs(inv, defaults, node) {
  const d = { ...defaults, ...node };
  const rel = (f) => (isAbsolute(f) ? f : join(dirname(inv), f));
  return [
    ...["-F", "/dev/null", "-i", rel(d.identity_file)],
    ...["-o", `UserKnownHostsFile=${rel(d.known_hosts)}`, "-o", "StrictHostKeyChecking=yes"],
    ...["-o", "BatchMode=yes", "-p", String(d.port), `${d.user}@${d.host}`],
  ];
}

/** The node's output; a failed ssh rejects with its exit status and stderr. */
async function sshRun(args, script) {
  return (await execFileAsync("ssh", [...args, script])).stdout;
}

/**
 * One floor run on the inventory's nodes named in `sel` ("all" or one name): its wall time, the
 * longest workload span, and how many workloads ran (the caller compares it with the harness's).
 */
export async function measureFloor(root, inv, sel, durationS) {
  const p = await productLists(root);
  const doc = YAML.parse(readFileSync(inv, "utf8"));
  const names = sel === "all" ? Object.keys(doc.nodes) : [sel];
  const script = nodeScript(p, durationS);
  const t = process.hrtime.bigint();
  const outs = await Promise.all(
    names.map((n) => sshRun(sshArgs(inv, doc.defaults ?? {}, doc.nodes[n]), script)),
  );
  const wall = Number(process.hrtime.bigint() - t) / 1e9;
  const spans = outs
    .join("")
    .split("\n")
    .filter((l) => l.startsWith("span "))
    .map((l) => {
      const [, s, e] = l.split(" ").map(Number);
      return e - s;
    });
  if (!spans.length) throw new Error(`floor on ${sel}: no workload ran`);
  return { wall, longest: Math.max(...spans), workloads: spans.length };
}
