// The NVIDIA Container Toolkit's outputs, parsed (pure): `nvidia-ctk --version`, `nvidia-ctk cdi
// list`, `nvidia-container-cli info`, and the CDI spec `nvidia-ctk cdi generate` writes.
//
// Shapes, from NVIDIA's own documentation and sources (read through the search tool):
// - `nvidia-ctk --version`: "NVIDIA Container Toolkit CLI version 1.17.8" then "commit: <sha>"
//   (docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html).
// - `nvidia-ctk cdi list`: a logrus line "INFO[0000] Found 9 CDI devices" (on stderr), then one
//   fully-qualified name a line, `nvidia.com/gpu=0`, `nvidia.com/gpu=GPU-<uuid>`,
//   `nvidia.com/gpu=all` (container-toolkit/latest/cdi-support.html).
// - `nvidia-container-cli info` (libnvidia-container src/cli/info.c): "NVRM version:", "CUDA
//   version:", then per GPU a blank line and "Device Index:", "Device Minor:", "Model:",
//   "Brand:", "GPU UUID:", "Bus Location:", "Architecture:" (labels padded to 15 columns).
// - The CDI spec (cdi-support.html; NVIDIA/nvidia-container-toolkit pkg/nvcdi): YAML with
//   `cdiVersion`, `kind: nvidia.com/gpu`, `devices:` each with a `name` and `containerEdits`
//   (a MIG device's `deviceNodes` include its /dev/nvidia-caps/nvidia-capN), top-level
//   `containerEdits`. Device names follow `--device-name-strategy` (pkg/nvcdi/namer.go): `index`
//   names a GPU `0` and a MIG device `<gpu>:<mig>` (`0:1`, the MIG device index nvidia-smi -L
//   prints), `uuid` names them `GPU-…` and `MIG-…`; the default since v1.14 writes both, plus
//   `all`.

import { parse as parseYaml } from "yaml";
import { parseError, significantLines } from "./text.js";

/** `1.17.8` from `nvidia-ctk --version` (the first line), or null when it is not there. */
export function parseCtkVersion(text: string): string | null {
  const m = /NVIDIA Container Toolkit CLI version\s+v?(\d+\.\d+\.\d+\S*)/.exec(text);
  return m ? m[1]! : null;
}

/** The fully-qualified CDI device names `nvidia-ctk cdi list` printed (its log lines dropped). */
export function parseCdiList(text: string): string[] {
  const names: string[] = [];
  for (const line of significantLines(text)) {
    const t = line.text.trim();
    // logrus' text format: `INFO[0000] Found 9 CDI devices`, `WARN[0000] …`.
    if (/^[A-Z]{4,5}\[\d+\]/.test(t)) continue;
    if (!/^[a-z0-9.-]+\/[a-z0-9._-]+=\S+$/i.test(t))
      throw parseError("cdi-list", line.no, "'vendor/class=name' (nvidia.com/gpu=0)", t);
    names.push(t);
  }
  return names;
}

export interface ContainerCliGpu {
  index: string;
  model: string | null;
  uuid: string | null;
  busId: string | null;
  arch: string | null;
}

export interface ContainerCliInfo {
  /** The kernel module's version (`NVRM version:`), the driver. */
  nvrm: string | null;
  /** The CUDA version the driver runs (`CUDA version:`). */
  cuda: string | null;
  gpus: ContainerCliGpu[];
}

const INFO_KEYS: Record<string, keyof ContainerCliGpu> = {
  Model: "model",
  "GPU UUID": "uuid",
  "Bus Location": "busId",
  Architecture: "arch",
};

/** `nvidia-container-cli info`: the driver, its CUDA, and one entry per `Device Index:` block. */
export function parseContainerCliInfo(text: string): ContainerCliInfo {
  const info: ContainerCliInfo = { nvrm: null, cuda: null, gpus: [] };
  for (const line of significantLines(text)) {
    const m = /^([A-Za-z][A-Za-z ]*?):\s+(.*?)\s*$/.exec(line.text);
    if (!m) throw parseError("container-cli-info", line.no, "'Label: value'", line.text);
    const [, key, value] = m as unknown as [string, string, string];
    if (key === "NVRM version") info.nvrm = value;
    else if (key === "CUDA version") info.cuda = value;
    else if (key === "Device Index")
      info.gpus.push({ index: value, model: null, uuid: null, busId: null, arch: null });
    else {
      const field = INFO_KEYS[key];
      const gpu = info.gpus.at(-1);
      if (field && gpu) gpu[field] = value;
    }
  }
  return info;
}

export interface CdiDevice {
  name: string;
  /** The device nodes its containerEdits inject (`/dev/nvidia0`, `/dev/nvidia-caps/nvidia-cap21`). */
  deviceNodes: string[];
}

export interface CdiSpec {
  cdiVersion: string;
  kind: string;
  devices: CdiDevice[];
}

/** A CDI spec file (YAML, or JSON, which YAML reads too); `file` names it in errors. */
export function parseCdiSpec(text: string, file = "CDI spec"): CdiSpec {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw parseError("cdi-spec", 1, `a YAML document (${file})`, (e as Error).message);
  }
  const d = doc as { cdiVersion?: unknown; kind?: unknown; devices?: unknown } | null;
  if (!d || typeof d !== "object" || typeof d.kind !== "string" || !Array.isArray(d.devices))
    throw parseError(
      "cdi-spec",
      1,
      `cdiVersion, kind and devices (${file})`,
      String(text.slice(0, 80)),
    );
  const devices = d.devices.map((x, i) => {
    const dev = x as { name?: unknown; containerEdits?: { deviceNodes?: unknown } } | null;
    if (!dev || (typeof dev.name !== "string" && typeof dev.name !== "number"))
      throw parseError("cdi-spec", 1, `a name for devices[${i}] (${file})`, JSON.stringify(x));
    const nodes = Array.isArray(dev.containerEdits?.deviceNodes)
      ? (dev.containerEdits.deviceNodes as { path?: unknown }[])
          .map((n) => n?.path)
          .filter((p): p is string => typeof p === "string")
      : [];
    return { name: String(dev.name), deviceNodes: nodes };
  });
  return { cdiVersion: String(d.cdiVersion ?? ""), kind: d.kind, devices };
}
