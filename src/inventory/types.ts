export type HostKeyPolicy = "strict" | "accept-new";

/** A hop on the way to a node: another inventory node, or a plain `user@host:port` target. */
export interface JumpHost {
  name: string;
  host: string;
  port: number;
  user: string;
  identityFile: string | null;
  identityPassphraseEnv: string | null;
  knownHosts: string;
  hostKeyPolicy: HostKeyPolicy;
}

export interface NodeSpec {
  name: string;
  host: string;
  port: number;
  user: string;
  identityFile: string | null;
  /** Name of the environment variable that holds the key's passphrase (never the passphrase). */
  identityPassphraseEnv: string | null;
  knownHosts: string;
  hostKeyPolicy: HostKeyPolicy;
  become: "sudo" | null;
  jump: JumpHost[];
  tags: string[];
  slurmNode: string | null;
  connectTimeoutS: number;
}

export interface Inventory {
  /** Absolute path of the file it was read from. */
  file: string;
  format: "native" | "ansible";
  nodes: NodeSpec[];
  groups: Record<string, string[]>;
}
