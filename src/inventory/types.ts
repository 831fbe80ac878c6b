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
  /** ssh's ProxyCommand with its tokens expanded: started locally, SSH spoken over its
   * stdin/stdout (only for the first hop). Absent or null: a direct TCP connection. */
  proxyCommand?: string | null;
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
  /** `local` runs commands on this machine (Ansible's `ansible_connection: local`); absent
   * means ssh, except for `host: localhost` without jump hosts. */
  transport?: "ssh" | "local";
  /** Set when this process runs inside a Slurm job on the node (a `run --via slurm` task with
   * `--local`): the job, and the reservation meant to keep other jobs off the node. */
  slurmJob?: { jobId: string; reservation: string | null };
  /** The MIG layout the node should be in (inventory `mig_config` + `mig_layout`): `run`
   * without `--layout` checks it, `run --layout` ends in it, `apply --intended` converges to it. */
  intended?: IntendedLayout | null;
  /** Inventory `regenerate_cdi: true`: `run --layout` runs `nvidia-ctk cdi generate` after the
   * apply and after the restore, as the GPU Operator does (`--regenerate-cdi` for every node). */
  regenerateCdi?: boolean;
  /** issue 23: the inventory's `containers:` (profile or `gpuN:START:SIZE` → image) and its
   * `container_runtime`; absent: none named (the config file's images, a detected runtime). */
  containers?: Record<string, string>;
  containerRuntime?: "docker" | "podman" | "enroot" | null;
  /** Where each resolved value came from (`file:line (ansible_port)`, `… (ssh_config Port)`,
   * `default`), for `slicecheck inventory`. */
  origins?: Record<string, string>;
}

/** One config of a mig-parted file, named by the inventory. */
export interface IntendedLayout {
  /** Absolute path of the layout file. */
  file: string;
  config: string;
  /** `file:line (mig_config)` of the inventory, for errors about it. */
  origin: string;
}

export interface Inventory {
  /** Absolute path of the file it was read from. */
  file: string;
  format: "native" | "ansible";
  nodes: NodeSpec[];
  groups: Record<string, string[]>;
  /** Things the inventory asks for that slicecheck does not do, each naming file:line. */
  warnings?: string[];
  /** Every file read: the inventory, group_vars/host_vars files, ssh_config files. */
  files?: string[];
}

/** How an inventory file is read (load.ts loadInventory); here because resolve-nodes.ts reads
 * them too and load.ts imports it. */
export interface LoadOptions {
  /** Overrides `defaults.ssh_config`; null disables ~/.ssh/config lookup (tests). */
  sshConfig?: string | null;
  /** Where relative ssh_config Include paths start (default ~/.ssh; tests). */
  sshDir?: string;
  /** The most hosts the inventory may name (default MAX_HOSTS; tests). */
  maxHosts?: number;
}
