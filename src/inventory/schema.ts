// zod schemas of the two inventory formats. Field names follow the YAML (snake_case); the
// loader turns them into NodeSpec.
import { isIPv4, isIPv6 } from "node:net";
import { z } from "zod";
import { durationSeconds } from "../util/duration.js";

// Node names reach shells, file names and report labels: keep them to a safe alphabet.
export const NODE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
// A host is a DNS name, an IPv4 address or an IPv6 address; never something starting with '-'.
const DNS_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const HOST_HELP = "expected a host name or address (letters, digits, '.', '-', ':')";

/** What is wrong with `host` as an address to connect to, or null. */
export function hostProblem(host: string): string | null {
  if (host.includes(":") || host.startsWith("[")) {
    if (isIPv6(host.replace(/^\[(.*)\]$/, "$1"))) return null;
    const hp = /^([^:]*):(\d+)$/.exec(host);
    if (hp)
      return `'${host}' is host:port; give the host alone and the port apart (port: ${hp[2]})`;
    return `${HOST_HELP}; '${host}' is not an IPv6 address`;
  }
  if (/^[\d.]+$/.test(host))
    return isIPv4(host) ? null : `'${host}' is not an IPv4 address (four numbers 0-255)`;
  if (!DNS_NAME.test(host)) return HOST_HELP;
  if (host.length > 253) return `a DNS name has at most 253 characters, this one ${host.length}`;
  const label = host.split(".").find((l) => l.length > 63);
  if (label)
    return `a DNS name's labels have at most 63 characters, '${label.slice(0, 16)}…' has ${label.length}`;
  return null;
}

// A `containers:` key: a MIG profile (`1g.10gb`, `1g.10gb+me`) or one instance by its GPU and
// placement (`gpu0:0:4`, the start and size nvidia-smi shows).
// `aggressor`: the image the isolation suite's aggressor faults in (issue 23).
export const CONTAINER_KEY = /^(?:\d+g\.\d+gb(?:\+[a-z]+)?|gpu\d+:\d+:\d+|aggressor)$/;
export const CONTAINER_KEY_HELP =
  "expected a MIG profile (1g.10gb) or an instance as gpuN:START:SIZE (gpu0:0:4), or aggressor (the isolation suite's aggressor)";
// OCI references reach argv only (never a shell), but keep them to the reference alphabet.
// An OCI reference, or enroot's squashfs image by its path on the node (`/opt/enroot/x.sqsh`,
// `+` as `enroot import` names them); never an option (`-v …`) nor a shell word.
export const IMAGE_NAME = /^(?:\/|[A-Za-z0-9])[A-Za-z0-9._/:@+-]*$/;
export const IMAGE_HELP =
  "expected an image reference (nvidia/cuda:12.4.1-base-ubuntu22.04) or, for enroot, the path of a .sqsh on the node";
export const CONTAINER_RUNTIMES = ["docker", "podman", "enroot"] as const;
export type ContainerRuntime = (typeof CONTAINER_RUNTIMES)[number];

const port = z
  .number({ error: "expected a port number (integer 1-65535)" })
  .int("expected a port number (integer 1-65535)")
  .min(1, "expected a port number (integer 1-65535)")
  .max(65535, "expected a port number (integer 1-65535)");

export const nodeFields = z.strictObject({
  host: z
    .string({ error: "expected a host name or address" })
    .superRefine((v, ctx) => {
      const problem = hostProblem(v);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    })
    .optional(),
  port: port.optional(),
  user: z
    .string({ error: "expected a login user name" })
    .regex(/^[A-Za-z_][A-Za-z0-9_.-]*$/, "expected a login user name")
    .optional(),
  identity_file: z.string({ error: "expected the path of a private key file" }).min(1).optional(),
  identity_passphrase_env: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "expected the NAME of an environment variable")
    .optional(),
  known_hosts: z.string({ error: "expected the path of a known_hosts file" }).min(1).optional(),
  host_key_policy: z
    .enum(["strict", "accept-new"], { error: "expected 'strict' or 'accept-new'" })
    .optional(),
  become: z
    .union([z.literal("sudo"), z.literal("none"), z.boolean()], {
      error: "expected 'sudo', 'none', true or false",
    })
    .optional(),
  jump: z
    .union([z.string().min(1), z.array(z.string().min(1)).min(1)], {
      error: "expected a jump host ('name' or 'user@host:port') or a list of them",
    })
    .optional(),
  tags: z
    .array(
      z.string().regex(/^[A-Za-z0-9._-]+$/, "expected tags of letters, digits, '.', '_', '-'"),
      {
        error: "expected a list of tags",
      },
    )
    .optional(),
  slurm_node: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, "expected a Slurm node name")
    .optional(),
  // Bounded: it becomes a timer, and Node fires timers above 2^31-1 ms after 1 ms.
  // Seconds, or a duration with a unit as everywhere else (`30s`, `2m`).
  connect_timeout: z
    .preprocess(
      (v) => (typeof v === "string" ? durationSeconds(v) : v),
      z
        .number({ error: "expected a number of seconds or a duration (10, 30s, 2m; at most 1h)" })
        .positive("expected a number of seconds (above 0, at most 3600)")
        .max(3600, "expected a number of seconds (above 0, at most 3600)"),
    )
    .optional(),
  // ssh's ProxyCommand: started locally, SSH spoken over its stdin/stdout (%h %p %r %n expanded).
  proxy_command: z.string().min(1, "expected a command line").nullable().optional(),
  // `local` runs commands on this machine (Ansible's ansible_connection: local).
  connection: z.enum(["ssh", "local"], { error: "expected 'ssh' or 'local'" }).optional(),
  // The node's intended MIG layout: one config of a mig-parted file, as the GPU Operator's
  // nvidia.com/mig.config label names one config of its mig-parted ConfigMap.
  mig_config: z
    .string({ error: "expected the name of a config in the mig_layout file" })
    .regex(/^[A-Za-z0-9._-]+$/, "expected the name of a config in the mig_layout file")
    .optional(),
  mig_layout: z
    .string({ error: "expected the path of a mig-parted layout file" })
    .min(1, "expected the path of a mig-parted layout file")
    .optional(),
  // The CDI spec follows the layout: `nvidia-ctk cdi generate` after run --layout's apply and
  // restore (as the GPU Operator regenerates it after a MIG change).
  regenerate_cdi: z.boolean({ error: "expected true or false" }).optional(),
  // issue 23: the image each instance's container runs, by profile (`1g.10gb`) or by one
  // instance (`gpu0:0:4`, the GPU and its placement); and the runtime, else detected.
  containers: z
    .record(
      z.string().regex(CONTAINER_KEY, CONTAINER_KEY_HELP),
      z.string({ error: "expected an image name" }).regex(IMAGE_NAME, IMAGE_HELP),
      {
        error:
          "expected a mapping from a MIG profile (1g.10gb) or gpuN:START:SIZE (gpu0:0:4) to an image",
      },
    )
    .optional(),
  container_runtime: z
    .enum(CONTAINER_RUNTIMES, { error: `expected one of ${CONTAINER_RUNTIMES.join(", ")}` })
    .optional(),
});
export type NodeFields = z.infer<typeof nodeFields>;

export const defaultsFields = nodeFields.extend({
  ssh_config: z.string().min(1).optional(),
});

export const nativeInventory = z.strictObject({
  defaults: defaultsFields.optional(),
  nodes: z.record(
    z.string().regex(NODE_NAME, "node names use letters, digits, '.', '_', '-'"),
    nodeFields.nullable(),
    { error: "expected a mapping from node name to its fields" },
  ),
  groups: z
    .record(
      z.string().regex(NODE_NAME, "group names use letters, digits, '.', '_', '-'"),
      z.array(z.string(), { error: "expected a list of node names" }),
    )
    .optional(),
});
export type NativeInventory = z.infer<typeof nativeInventory>;

const ansibleVars = z.record(z.string(), z.unknown());
export type AnsibleGroup = {
  hosts?: Record<string, Record<string, unknown> | null> | null;
  vars?: Record<string, unknown> | null;
  children?: Record<string, AnsibleGroup | null> | null;
};
export const ansibleGroup: z.ZodType<AnsibleGroup> = z.lazy(() =>
  z.strictObject({
    hosts: z.record(z.string(), ansibleVars.nullable()).nullable().optional(),
    vars: ansibleVars.nullable().optional(),
    children: z.record(z.string(), ansibleGroup.nullable()).nullable().optional(),
  }),
);
export const ansibleInventory = z.record(z.string(), ansibleGroup.nullable());
