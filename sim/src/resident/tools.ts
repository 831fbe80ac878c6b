// The node tools whose wrappers ask the resident simulator first (server.ts has their handlers):
// the read-only calls a relayout makes most (about 53 of the 57 tool calls of one relayout and
// stress on one node; the rest change the node or are its workloads), and dcgmi's refusal on a
// node without nv-hostengine, which the utilization sampler meets once per phase on every node.
export const RESIDENT_TOOLS: ReadonlySet<string> = new Set([
  "nvidia-smi",
  "dmesg",
  "lsmod",
  "pgrep",
  "nvidia-ctk",
  "dcgmi",
  "nvidia-container-cli",
]);

// The tools whose wrappers ask the resident simulator to run their program for a bash client
// (resident/workloads.ts; programs.ts has the programs, a unit test that the two lists agree).
// nvidia-smi's wrapper asks for its one-shot answer first.
export const RESIDENT_PROGRAM_TOOLS: ReadonlySet<string> = new Set([
  "slicecheck-stress",
  "slicecheck-memhog",
  "slicecheck-crasher",
  "slicecheck-serve",
  "nvidia-smi",
]);
