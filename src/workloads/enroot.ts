// enroot under the containers suite (issue 23), the pure part: the argv of each enroot step and
// the reading of what they print. enroot differs from podman and docker in three ways that shape
// the suite (NVIDIA/enroot doc/cmd/*.md):
// - `enroot start NAME|IMAGE [COMMAND]` starts a container made by `enroot create [--name NAME]
//   IMAGE` from a squashfs image (create.md, start.md); the .sqsh comes from `enroot import
//   docker://…` (import.md), which pulls from a registry: a run never does that, so a `docker://`
//   image is refused with the command that imports it.
// - There is no `image inspect`: the image's CUDA is read from inside a started container (its
//   CUDA_VERSION env, which import carries over into /etc/environment, else the CUDA toolkit's
//   /usr/local/cuda/version.json), with no GPU given, so nothing of the GPU is touched yet.
// - The GPU is given by NVIDIA_VISIBLE_DEVICES to the 98-nvidia.sh hook (standard-hooks.md). The
//   hook reads NVIDIA_* from the container's environment only where the variable is not already
//   set in its own (`[ -v "${key}" ] || export`, conf/hooks/98-nvidia.sh), so a value set on the
//   host would win over `--env`: the suite sets it in both. `void` (or unset) skips the hook:
//   no GPU at all.
// Containers are removed with `enroot remove -f NAME` (remove.md: --force does not prompt).
import { COMPAT_SCRIPT, withoutCompat } from "./compat.js";

/** Why enroot cannot take this image on its own, or null: it takes a .sqsh on the node. */
export function enrootImageProblem(image: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(image))
    return `enroot takes a squashfs image on the node, and a run never pulls one: import ${image} first (\`enroot import -o /path/to/image.sqsh '${image}'\`) and name that .sqsh under containers:`;
  if (!image.endsWith(".sqsh"))
    return `enroot takes a squashfs image file on the node (a path ending .sqsh, as \`enroot import -o FILE docker://…\` writes it), got ${image}`;
  return null;
}

/** This run's name for its n-th enroot container: `sc-<run id>-<n>` (the run id's own `sc-`
 * prefix is not doubled), characters other than letters, digits, `.`, `_`, `-` replaced. */
export function enrootName(runId: string, n: number): string {
  const id = runId.replace(/^sc-/, "").replace(/[^A-Za-z0-9._-]/g, "_");
  return `sc-${id}-${n}`;
}

export const createArgv = (name: string, image: string): string[] => [
  "enroot",
  "create",
  "--name",
  name,
  image,
];

export const removeArgv = (name: string): string[] => ["enroot", "remove", "-f", name];

/** `enroot start` of container `name` given `visible` (a MIG UUID, or `void` for no GPU), with
 * host folders bind-mounted read-only at the same path (fstab fields colon-separated, start.md;
 * x-create=dir makes the mount point, image-format.md). */
export function startArgv(
  name: string,
  visible: string,
  command: readonly string[],
  mounts: readonly string[] = [],
): string[] {
  return [
    "env",
    `NVIDIA_VISIBLE_DEVICES=${visible}`,
    "enroot",
    "start",
    "--env",
    `NVIDIA_VISIBLE_DEVICES=${visible}`,
    ...mounts.flatMap((m) => ["--mount", `${m}:${m}:none:x-create=dir,bind,ro`]),
    name,
    ...command,
  ];
}

/** What reads the image's CUDA inside its container: CUDA_VERSION, else version.json; then, in
 * the same start, the forward-compatibility libraries it carries (./compat.ts). */
export const CUDA_READ = [
  "sh",
  "-c",
  `if [ -n "\${CUDA_VERSION:-}" ]; then echo "CUDA_VERSION=\${CUDA_VERSION}"; else cat /usr/local/cuda/version.json 2>/dev/null; echo; fi; ${COMPAT_SCRIPT}`,
];

/** The image's CUDA from CUDA_READ's output: the CUDA_VERSION line, else version.json's
 * `cuda.version` (`{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, …}`); null if neither. */
export function enrootImageCuda(read: string): string | null {
  const stdout = withoutCompat(read);
  const env = /^CUDA_VERSION=(\d+\.\d+(?:\.\d+)?)\s*$/m.exec(stdout)?.[1];
  if (env) return env;
  try {
    const v = (JSON.parse(stdout) as { cuda?: { version?: unknown } }).cuda?.version;
    return typeof v === "string" && /^\d+\.\d+/.test(v) ? v : null;
  } catch {
    return null;
  }
}

/** The container names `enroot list` printed (one per line; `--fancy`'s header and its
 * process lines, which start with blanks, dropped). */
export function listedNames(stdout: string): string[] {
  return stdout
    .split("\n")
    .filter((l) => /^\S/.test(l))
    .map((l) => l.split(/\s+/)[0]!)
    .filter((n) => n !== "NAME");
}
