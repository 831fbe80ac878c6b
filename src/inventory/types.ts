export type HostKeyPolicy = "strict" | "accept-new";

/** How to reach and authenticate to one SSH server: a node or a hop on the way to it. */
export interface SshEndpoint {
  host: string;
  port: number;
  user: string;
  identityFile: string | null;
  /** Name of the environment variable that holds the key's passphrase (never the passphrase). */
  identityPassphraseEnv: string | null;
  knownHosts: string;
  hostKeyPolicy: HostKeyPolicy;
}

/** A hop on the way to a node: another inventory node, or a plain `user@host:port` target. */
export interface JumpHost extends SshEndpoint {
  name: string;
}

export interface NodeSpec extends SshEndpoint {
  name: string;
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
