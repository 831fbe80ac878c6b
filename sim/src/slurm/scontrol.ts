// The simulated `scontrol`, as far as a maintenance tool uses it: `show node NAME` (the block
// slurmctld prints, with the State= and Reason= fields read from slurm.json) and
// `update NodeName=NAME State=DRAIN|RESUME|IDLE|DOWN|UNDRAIN [Reason=…]`.

import { readSlurm, type SlurmNode, writeSlurm } from "./state.js";

export interface ScontrolIo {
  stateDir: string;
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

function showNode(name: string, n: SlurmNode): string[] {
  return [
    `NodeName=${name} Arch=x86_64 CoresPerSocket=32 `,
    "   CPUAlloc=0 CPUEfctv=64 CPUTot=64 CPULoad=0.01",
    "   AvailableFeatures=(null)",
    "   ActiveFeatures=(null)",
    "   Gres=gpu:8",
    `   NodeAddr=${name} NodeHostName=${name} Version=23.11.4`,
    "   OS=Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01) ",
    "   RealMemory=1031000 AllocMem=0 FreeMem=1012345 Sockets=2 Boards=1",
    `   State=${n.state} ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A`,
    "   Partitions=gpu ",
    "   CfgTRES=cpu=64,mem=1031000M,billing=64,gres/gpu=8",
    "   AllocTRES=",
    "   CurrentWatts=0 AveWatts=0",
    ...(n.reason ? [`   Reason=${n.reason} [root@2026-01-05T09:00:00]`] : []),
    "",
  ];
}

/** `key=value` words, keys case-insensitive as scontrol takes them. */
function keyValues(words: readonly string[]): Map<string, string> {
  const kv = new Map<string, string>();
  for (const w of words) {
    const i = w.indexOf("=");
    if (i > 0) kv.set(w.slice(0, i).toLowerCase(), w.slice(i + 1));
  }
  return kv;
}

function update(words: readonly string[], io: ScontrolIo): number {
  const kv = keyValues(words);
  const name = kv.get("nodename");
  const state = kv.get("state")?.toUpperCase();
  const data = readSlurm(io.stateDir);
  const node = name === undefined ? undefined : data.nodes[name];
  if (!name || !node) {
    io.stderr(`scontrol: error: Invalid node name specified\n`);
    return 1;
  }
  const base = node.state.split("+")[0] ?? "IDLE";
  const reason = kv.get("reason") ?? null;
  if (state === "DRAIN") {
    if (!reason) {
      io.stderr("You must specify a reason when DOWNING or DRAINING a node. Request denied\n");
      return 1;
    }
    node.state = `${base}+DRAIN`;
    node.reason = reason;
  } else if (state === "DOWN") {
    node.state = "DOWN";
    node.reason = reason;
  } else if (state === "RESUME" || state === "UNDRAIN" || state === "IDLE") {
    node.state = base === "DOWN" ? "IDLE" : base;
    node.reason = null;
  } else {
    io.stderr(`scontrol: error: Invalid node state specified\n`);
    return 1;
  }
  writeSlurm(io.stateDir, data);
  return 0;
}

export function scontrolMain(argv: readonly string[], io: ScontrolIo): number {
  const [verb, ...rest] = argv;
  if (verb === "show" && (rest[0] === "node" || rest[0] === "nodes")) {
    const data = readSlurm(io.stateDir);
    const names = rest[1] === undefined ? Object.keys(data.nodes) : [rest[1]];
    for (const name of names) {
      const n = data.nodes[name];
      if (!n) {
        io.stdout(`Node ${name} not found\n`);
        return 1;
      }
      io.stdout(`${showNode(name, n).join("\n")}\n`);
    }
    return 0;
  }
  if (verb === "update") return update(rest, io);
  io.stderr(`invalid keyword: ${verb ?? ""}\n`);
  return 1;
}
