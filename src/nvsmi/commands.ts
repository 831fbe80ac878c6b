// Builders of every nvidia-smi command slicecheck sends. They return argv arrays, never shell
// strings, and refuse arguments that could not have come from a layout or inventory (a
// selector with spaces, a profile that is no profile), so nothing odd reaches a node.

import { SlicecheckError } from "../errors.js";

export type Argv = readonly string[];

/** A GPU as nvidia-smi `-i` takes it: index, PCI bus id or `GPU-<uuid>`. */
export type GpuSelector = number | string;

/** A GPU-instance or compute-instance profile: its ID (19) or name (`1g.10gb`, `MIG 3g.40gb`). */
export type ProfileRef = number | string;

/** A GPU instance to create, optionally at a fixed placement start (`-cgi 19:3`). */
export interface GiRequest {
  readonly profile: ProfileRef;
  readonly start?: number;
}

const NVSMI = "nvidia-smi";

const GPU_UUID = /^GPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$/;
const BUS_ID = /^(?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$/;
const PROFILE_NAME = /^(?:\d+c\.)?\d+g\.\d+gb(?:[+-][a-z]+(?:\.[a-z]+)?)?$/;
const FIELD = /^[a-z][a-z0-9_.]*$/;

/** Fields the MIG layer reads per GPU; order matters only for the noheader form. */
export const DEFAULT_GPU_FIELDS: readonly string[] = [
  "index",
  "uuid",
  "name",
  "pci.bus_id",
  "driver_version",
  "mig.mode.current",
  "mig.mode.pending",
  "memory.total",
  "memory.used",
];

/** Fields the harness reads per compute process (foreign-process interlock, isolation). */
export const DEFAULT_APP_FIELDS: readonly string[] = [
  "gpu_uuid",
  "pid",
  "process_name",
  "used_memory",
];

function usage(message: string, context: Record<string, unknown>): SlicecheckError {
  return new SlicecheckError("USAGE", message, context);
}

function isId(n: number): boolean {
  return Number.isInteger(n) && n >= 0 && n < 1_000_000;
}

function gpuArg(gpu: GpuSelector | readonly GpuSelector[]): string {
  const list: readonly GpuSelector[] = Array.isArray(gpu) ? gpu : [gpu as GpuSelector];
  if (list.length === 0) throw usage("an empty GPU list selects nothing", { gpu });
  return list
    .map((g) => {
      if (typeof g === "number") {
        if (!isId(g)) throw usage(`GPU index ${g} is not a non-negative integer`, { gpu: g });
        return String(g);
      }
      if (/^\d+$/.test(g) || GPU_UUID.test(g) || BUS_ID.test(g)) return g;
      throw usage(`'${g}' is not a GPU index, PCI bus id or GPU-<uuid>; use one of those`, {
        gpu: g,
      });
    })
    .join(",");
}

function withGpu(argv: string[], gpu: GpuSelector | readonly GpuSelector[] | undefined): Argv {
  return gpu === undefined ? argv : [...argv, "-i", gpuArg(gpu)];
}

function idList(ids: readonly number[], what: string): string {
  if (ids.length === 0) throw usage(`an empty ${what} list selects nothing`, { ids });
  for (const id of ids) {
    if (!isId(id)) throw usage(`${what} ${id} is not a non-negative integer`, { id });
  }
  return ids.join(",");
}

function profileArg(p: ProfileRef): string {
  if (typeof p === "number") {
    if (!isId(p)) throw usage(`profile ID ${p} is not a non-negative integer`, { profile: p });
    return String(p);
  }
  const name = p.startsWith("MIG ") ? p.slice(4) : p;
  if (/^\d+$/.test(name) || PROFILE_NAME.test(name)) return name;
  throw usage(`'${p}' is not a MIG profile ID or name such as 19 or 1g.10gb`, { profile: p });
}

function giArg(r: ProfileRef | GiRequest): string {
  if (typeof r === "number" || typeof r === "string") return profileArg(r);
  const profile = profileArg(r.profile);
  if (r.start === undefined) return profile;
  if (!isId(r.start)) throw usage(`placement start ${r.start} is not a slice index`, { ...r });
  return `${profile}:${r.start}`;
}

function fieldList(fields: readonly string[]): string {
  if (fields.length === 0) throw usage("a query needs at least one field", {});
  for (const f of fields) {
    if (!FIELD.test(f)) throw usage(`'${f}' is not an nvidia-smi query field name`, { field: f });
  }
  return fields.join(",");
}

export interface CsvOptions {
  readonly gpu?: GpuSelector | readonly GpuSelector[];
  /** Print the header line (default true: the parser then reads the field names from it). */
  readonly header?: boolean;
  /** Print units after values (default false: numbers come bare). */
  readonly units?: boolean;
}

function csvFormat(o: CsvOptions): string {
  return ["csv", ...(o.header === false ? ["noheader"] : []), ...(o.units ? [] : ["nounits"])].join(
    ",",
  );
}

export const listGpus = (): Argv => [NVSMI, "-L"];

export const defaultTable = (gpu?: GpuSelector | readonly GpuSelector[]): Argv =>
  withGpu([NVSMI], gpu);

export const queryFull = (gpu?: GpuSelector | readonly GpuSelector[]): Argv =>
  withGpu([NVSMI, "-q"], gpu);

export const queryGpu = (fields: readonly string[] = DEFAULT_GPU_FIELDS, o: CsvOptions = {}) =>
  withGpu([NVSMI, `--query-gpu=${fieldList(fields)}`, `--format=${csvFormat(o)}`], o.gpu);

export const queryComputeApps = (
  fields: readonly string[] = DEFAULT_APP_FIELDS,
  o: CsvOptions = {},
): Argv =>
  withGpu([NVSMI, `--query-compute-apps=${fieldList(fields)}`, `--format=${csvFormat(o)}`], o.gpu);

export const listGpuInstanceProfiles = (gpu?: GpuSelector): Argv =>
  withGpu([NVSMI, "mig", "-lgip"], gpu);

export const listGpuInstancePlacements = (gpu?: GpuSelector): Argv =>
  withGpu([NVSMI, "mig", "-lgipp"], gpu);

export const listGpuInstances = (gpu?: GpuSelector): Argv => withGpu([NVSMI, "mig", "-lgi"], gpu);

export function listComputeInstances(gpu?: GpuSelector, gpuInstance?: number): Argv {
  const argv = withGpu([NVSMI, "mig", "-lci"], gpu);
  return gpuInstance === undefined ? argv : [...argv, "-gi", idList([gpuInstance], "GI")];
}

export function listComputeInstanceProfiles(gpu?: GpuSelector, gpuInstance?: number): Argv {
  const argv = withGpu([NVSMI, "mig", "-lcip"], gpu);
  return gpuInstance === undefined ? argv : [...argv, "-gi", idList([gpuInstance], "GI")];
}

/**
 * `nvidia-smi mig -cgi 9,19:3 -C -i 0`. With `defaultComputeInstance` (the default) each GI
 * gets its default CI in the same call; without it the GIs are bare until `-cci`.
 */
export function createGpuInstances(
  gpu: GpuSelector,
  requests: readonly (ProfileRef | GiRequest)[],
  o: { defaultComputeInstance?: boolean } = {},
): Argv {
  if (requests.length === 0) throw usage("no GPU instance to create", { gpu });
  const argv = [NVSMI, "mig", "-cgi", requests.map(giArg).join(",")];
  if (o.defaultComputeInstance !== false) argv.push("-C");
  return withGpu(argv, gpu);
}

/** `nvidia-smi mig -cci 0,0 -gi 1 -i 0`; no profiles means the GI's default (`*`) profile. */
export function createComputeInstances(
  gpu: GpuSelector,
  gpuInstance: number,
  profiles: readonly ProfileRef[] = [],
): Argv {
  const argv = [NVSMI, "mig", "-cci"];
  if (profiles.length > 0) argv.push(profiles.map(profileArg).join(","));
  argv.push("-gi", idList([gpuInstance], "GI"));
  return withGpu(argv, gpu);
}

/** `nvidia-smi mig -dci -gi 1 -ci 0,1 -i 0`; omitted ids mean all of them. */
export function destroyComputeInstances(
  gpu: GpuSelector,
  gpuInstances?: readonly number[],
  computeInstances?: readonly number[],
): Argv {
  const argv = [NVSMI, "mig", "-dci"];
  if (gpuInstances !== undefined) argv.push("-gi", idList(gpuInstances, "GI"));
  if (computeInstances !== undefined) argv.push("-ci", idList(computeInstances, "CI"));
  return withGpu(argv, gpu);
}

/** `nvidia-smi mig -dgi -gi 1,2 -i 0`; omitted ids mean every GI of the GPU. */
export function destroyGpuInstances(gpu: GpuSelector, gpuInstances?: readonly number[]): Argv {
  const argv = [NVSMI, "mig", "-dgi"];
  if (gpuInstances !== undefined) argv.push("-gi", idList(gpuInstances, "GI"));
  return withGpu(argv, gpu);
}

/** `nvidia-smi -mig 1 -i 0`. Without a GPU it applies to every GPU of the node. */
export const setMigMode = (enabled: boolean, gpu?: GpuSelector | readonly GpuSelector[]): Argv =>
  withGpu([NVSMI, "-mig", enabled ? "1" : "0"], gpu);

/** `nvidia-smi --gpu-reset -i 0`. A GPU is required: a bare reset would hit every GPU. */
export const resetGpu = (gpu: GpuSelector | readonly GpuSelector[]): Argv =>
  withGpu([NVSMI, "--gpu-reset"], gpu);

/** The kernel log with wall-clock ISO stamps, which parseXid reads. */
export const readKernelLog = (): Argv => ["dmesg", "--time-format=iso"];
