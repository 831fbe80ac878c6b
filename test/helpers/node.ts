import type { NodeSpec } from "../../src/inventory/types.js";

/** A node as the inventory loader would produce it, for tests that need no real inventory. */
export function nodeSpec(name: string, over: Partial<NodeSpec> = {}): NodeSpec {
  return {
    name,
    host: name,
    port: 22,
    user: "u",
    identityFile: null,
    identityPassphraseEnv: null,
    knownHosts: "/dev/null",
    hostKeyPolicy: "strict",
    become: null,
    jump: [],
    tags: [],
    slurmNode: null,
    connectTimeoutS: 10,
    ...over,
  };
}
