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

// The workload programs whose wrappers ask the resident simulator to run them for a bash client
// (resident/workloads.ts; workloads/programs/index.ts has the programs, a unit test that the two
// lists agree).
export const RESIDENT_WORKLOADS: ReadonlySet<string> = new Set([
  "slicecheck-stress",
  "slicecheck-memhog",
  "slicecheck-crasher",
  "slicecheck-serve",
]);
