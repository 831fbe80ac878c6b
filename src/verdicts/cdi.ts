// The container toolkit's view of the GPUs against the live ones (pure). The CDI spec is a file
// `nvidia-ctk cdi generate` writes once: it names each MIG device by its UUID (`MIG-…`) and by
// `<gpu>:<mig>` (NVIDIA/nvidia-container-toolkit pkg/nvcdi/namer.go), and nothing rewrites it
// when the layout changes (before toolkit 1.18's nvidia-cdi-refresh, which follows driver
// events, not MIG changes). After a relayout a container asking for a MIG device by the old
// UUID fails to start, and one asking by index gets the device edits (the /dev/nvidia-caps
// files) of an instance that is no longer there.
import type { CdiSpec } from "../nvsmi/ctk.js";
import type { GpuListing } from "../nvsmi/types.js";

/** Where NVIDIA's documentation has the spec written (cdi-support.html): /etc/cdi persists,
 * /var/run/cdi is cleared at boot; both are where CDI-enabled engines look. */
export const CDI_SPEC_DIRS = ["/etc/cdi", "/var/run/cdi"] as const;
export const CDI_KIND = "nvidia.com/gpu";

export interface CdiVerdict {
  status: "fresh" | "stale" | "absent";
  /** The spec judged (the first of its kind with a stale entry, else the first found). */
  file: string | null;
  /** Live MIG devices the spec does not name. */
  missing: string[];
  /** Names in the spec of MIG devices that no longer exist. */
  gone: string[];
  /** The command that brings it back in line (stale only). */
  fix: string | null;
  message: string;
}

const MIG_INDEX_NAME = /^\d+:\d+$/;

/** The names a freshly generated spec would give the live MIG devices, per naming strategy. */
function liveNames(live: readonly GpuListing[]): { uuid: Set<string>; index: Set<string> } {
  const uuid = new Set<string>();
  const index = new Set<string>();
  for (const g of live)
    for (const m of g.migDevices) {
      uuid.add(m.uuid);
      index.add(`${g.index}:${m.index}`);
    }
  return { uuid, index };
}

/** One spec file against the live listing: which MIG devices it lacks and which it names that are
 * gone. Only the strategies the spec itself uses are held against it (a spec written with
 * `--device-name-strategy=uuid` has no `0:1` names to miss). */
function judgeOne(
  spec: CdiSpec,
  live: readonly GpuListing[],
): { missing: string[]; gone: string[] } {
  const names = new Set(spec.devices.map((d) => d.name));
  const want = liveNames(live);
  const specUuids = [...names].filter((n) => n.startsWith("MIG-"));
  const specIndex = [...names].filter((n) => MIG_INDEX_NAME.test(n));
  const usesUuid = [...names].some((n) => n.startsWith("GPU-") || n.startsWith("MIG-"));
  const usesIndex = [...names].some((n) => /^\d+(:\d+)?$/.test(n));
  const missing: string[] = [];
  if (usesUuid) missing.push(...[...want.uuid].filter((u) => !names.has(u)));
  if (usesIndex) missing.push(...[...want.index].filter((u) => !names.has(u)));
  const gone = [
    ...specUuids.filter((n) => !want.uuid.has(n)),
    ...specIndex.filter((n) => !want.index.has(n)),
  ];
  return { missing, gone };
}

/**
 * The CDI specs of kind nvidia.com/gpu found on the node, each with its file, against the MIG
 * devices nvidia-smi -L lists now. No spec: `absent` (containers use the legacy runtime hook, or
 * none run here; not a failure by itself). A spec missing a live device or naming one that is
 * gone: `stale`, with the command that regenerates it.
 */
export function judgeCdi(
  specs: readonly { file: string; spec: CdiSpec }[],
  live: readonly GpuListing[],
): CdiVerdict {
  const ours = specs.filter((s) => s.spec.kind === CDI_KIND);
  if (ours.length === 0)
    return {
      status: "absent",
      file: null,
      missing: [],
      gone: [],
      fix: null,
      message: `no CDI spec of kind ${CDI_KIND} in ${CDI_SPEC_DIRS.join(" or ")}`,
    };
  for (const s of ours) {
    const { missing, gone } = judgeOne(s.spec, live);
    if (missing.length === 0 && gone.length === 0) continue;
    const fix = `nvidia-ctk cdi generate --output=${s.file}`;
    const parts = [
      missing.length ? `live MIG devices it does not name: ${missing.join(", ")}` : "",
      gone.length ? `devices it names that no longer exist: ${gone.join(", ")}` : "",
    ].filter(Boolean);
    return {
      status: "stale",
      file: s.file,
      missing,
      gone,
      fix,
      message: `the CDI spec ${s.file} does not follow the MIG layout (${parts.join("; ")}): containers given these devices fail to start or get another instance's device files; fix: ${fix} [CDI_STALE]`,
    };
  }
  const n = live.reduce((a, g) => a + g.migDevices.length, 0);
  return {
    status: "fresh",
    file: ours[0]!.file,
    missing: [],
    gone: [],
    fix: null,
    message: `the CDI spec ${ours.map((s) => s.file).join(", ")} names every MIG device (${n}) and none that is gone`,
  };
}

const majorMinor = (v: string): [number, number] | null => {
  const m = /^(\d+)\.(\d+)/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2])] : null;
};

export interface ImageCudaVerdict {
  verdict: "ok" | "forward-compat" | "refused" | "unknown";
  message: string;
}

/**
 * A container image's CUDA (its CUDA_VERSION, or /usr/local/cuda/version.json) against the
 * driver's (nvidia-smi's banner). The NVIDIA container runtime holds an image to its
 * NVIDIA_REQUIRE_CUDA ("cuda>=12.4"): newer than the driver's, in major or minor, and the
 * container does not start ("requirement error: unsatisfied condition: cuda>=12.4"), unless the
 * image carries the forward-compatibility libraries (cuda-compat-<major>-<minor>, in
 * /usr/local/cuda/compat; NVIDIA data-center GPUs only, docs.nvidia.com/deploy/cuda-compatibility/
 * forward-compatibility.html), which the toolkit puts first (its enable-cuda-compat hook). Pure.
 */
export function judgeImageCuda(
  driverCuda: string | null,
  imageCuda: string | null,
  hasCompat: boolean,
): ImageCudaVerdict {
  const d = driverCuda ? majorMinor(driverCuda) : null;
  const i = imageCuda ? majorMinor(imageCuda) : null;
  if (!d || !i)
    return {
      verdict: "unknown",
      message: `the ${d ? "image's" : "driver's"} CUDA version is unknown (${d ? imageCuda : driverCuda}): whether the image runs here cannot be judged`,
    };
  const newer = i[0] > d[0] || (i[0] === d[0] && i[1] > d[1]);
  if (!newer)
    return {
      verdict: "ok",
      message: `image CUDA ${imageCuda} runs on the driver's CUDA ${driverCuda}`,
    };
  if (hasCompat)
    return {
      verdict: "forward-compat",
      message: `image CUDA ${imageCuda} is newer than the driver's CUDA ${driverCuda}: it runs through the forward-compatibility libraries it carries (/usr/local/cuda/compat; data-center GPUs only)`,
    };
  return {
    verdict: "refused",
    message: `image CUDA ${imageCuda} is newer than the driver's CUDA ${driverCuda}: the container runtime refuses to start it ("unsatisfied condition: cuda>=${i[0]}.${i[1]}"); use an image of CUDA ${driverCuda} or older, add cuda-compat-${i[0]}-${i[1]} to the image (data-center GPUs), or upgrade the driver`,
  };
}
