// Forward compatibility in a container image (issue 23), the pure part: whether an image whose
// CUDA is newer than the driver's carries NVIDIA's forward-compatibility libraries (the
// cuda-compat-<major>-<minor> package: a newer libcuda in /usr/local/cuda/compat,
// docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html), and whether the
// toolkit would use them with this driver. libnvidia-container mounts the image's compat
// libcuda only when its driver major is above the host driver's (src/cli/compat_mode.c,
// filter_by_major_version): an older or equal one is dropped, and the image stays too new.
// The folder is read in a container given no GPU (NVIDIA_VISIBLE_DEVICES=void: the toolkit's
// hook does nothing), so its requirement check cannot refuse the read itself.

export const COMPAT_DIR = "/usr/local/cuda/compat";

/** The end mark: printed after the listing, so that an image without the folder (nothing
 * listed, the mark printed) differs from a container that never ran the script. */
export const COMPAT_DONE = "compat-read=done";

/** A POSIX sh script that lists the image's compat libcuda files, one `compat=PATH` a line. */
export const COMPAT_SCRIPT = `for f in ${COMPAT_DIR}/libcuda.so.*; do [ -e "$f" ] && echo "compat=$f"; done; echo ${COMPAT_DONE}`;

/** docker or podman: one GPU-less container of the image running COMPAT_SCRIPT (its own
 * entrypoint bypassed: nvidia/cuda's prints a banner, and a site's may run anything). */
export function compatArgv(runtime: "docker" | "podman", image: string): string[] {
  return [
    runtime,
    "run",
    "--rm",
    "--entrypoint",
    "/bin/sh",
    "-e",
    "NVIDIA_VISIBLE_DEVICES=void",
    image,
    "-c",
    COMPAT_SCRIPT,
  ];
}

export interface CompatRead {
  /** The libcuda files in the compat folder (none: the image carries no compat libraries). */
  files: string[];
  /** The driver version of its versioned libcuda (`libcuda.so.580.65.06`), or null. */
  driver: string | null;
}

const VERSIONED = /\/libcuda\.so\.(\d+\.\d+(?:\.\d+)?)$/;

const parts = (v: string) => v.split(".").map(Number);

function newer(a: string, b: string): boolean {
  const [x, y] = [parts(a), parts(b)];
  for (let k = 0; k < Math.max(x.length, y.length); k++)
    if ((x[k] ?? 0) !== (y[k] ?? 0)) return (x[k] ?? 0) > (y[k] ?? 0);
  return false;
}

/** COMPAT_SCRIPT's output read; null when its end mark is missing (the script did not run to
 * the end: whether the image carries the libraries is unknown). */
export function compatOf(stdout: string): CompatRead | null {
  const lines = stdout.split("\n").map((l) => l.trim());
  if (!lines.includes(COMPAT_DONE)) return null;
  const files = lines.filter((l) => l.startsWith("compat=")).map((l) => l.slice(7));
  let driver: string | null = null;
  for (const f of files) {
    const v = VERSIONED.exec(f)?.[1];
    if (v && (driver === null || newer(v, driver))) driver = v;
  }
  return { files, driver };
}

/** The compat libcuda the toolkit would put in the container on this driver, or null with why
 * not (none carried, its version unknown, or not newer in major than the host driver's). */
export function compatUsed(
  compat: CompatRead,
  hostDriver: string | null,
): { libcuda: string; driver: string } | { why: string } {
  if (compat.files.length === 0) return { why: `it carries none in ${COMPAT_DIR}` };
  const lib = compat.files.find((f) => f.endsWith(`.so.${compat.driver}`));
  if (!compat.driver || !lib)
    return { why: `its ${COMPAT_DIR} holds no versioned libcuda (${compat.files.join(", ")})` };
  const major = (v: string) => Number(v.split(".")[0]);
  if (!hostDriver || !/^\d+/.test(hostDriver))
    return {
      why: `the node's driver version is unknown, so its compat libcuda ${compat.driver} cannot be judged`,
    };
  if (major(compat.driver) <= major(hostDriver))
    return {
      why: `its compat libcuda (driver ${compat.driver}) is not of a newer branch than the node's driver ${hostDriver}, so the toolkit does not use it`,
    };
  return { libcuda: lib, driver: compat.driver };
}

/** The CUDA read (enroot's, ./enroot.ts) with the compat lines and the end mark taken out. */
export const withoutCompat = (stdout: string): string =>
  stdout
    .split("\n")
    .filter((l) => !l.startsWith("compat=") && l.trim() !== COMPAT_DONE)
    .join("\n");
