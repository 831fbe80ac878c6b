// Result types of the nvidia-smi parsers. They are part of the public interface: the CLI prints
// them as JSON, the simulator renders from them, and the MIG layer reasons over them. Profile
// names never carry the `MIG ` prefix. `null` means the output did not say.

/**
 * A line the driver printed instead of (or next to) a listing: MIG off, nothing created, or an
 * error. Present only when such a line was seen, so ordinary listings keep their plain shape.
 */
export interface ListingNotice {
  kind: "mig-disabled" | "none" | "error";
  /** The driver's words after the colon (`Not Found`, `Insufficient Permissions`), if any. */
  reason: string | null;
  message: string;
}

// ---- nvidia-smi mig -lgip -------------------------------------------------------------------

export interface GpuInstanceProfile {
  name: string;
  id: number;
  free: number;
  total: number;
  memoryGiB: number;
  p2p: boolean;
  sm: number;
  dec: number;
  enc: number;
  ce: number;
  jpeg: number;
  ofa: number;
}

export interface LgipResult {
  gpus: { index: number; profiles: GpuInstanceProfile[] }[];
  notices?: ListingNotice[];
}

// ---- nvidia-smi mig -lgipp ------------------------------------------------------------------

export interface GpuInstancePlacements {
  profileId: number;
  /** Start memory slices the driver allows for this profile. */
  starts: number[];
  /** Memory slices one instance occupies. */
  size: number;
  /** Only when the driver's line names the profile. */
  name?: string;
}

export interface LgippResult {
  gpus: { index: number; placements: GpuInstancePlacements[] }[];
  notices?: ListingNotice[];
}

// ---- nvidia-smi mig -lgi --------------------------------------------------------------------

export interface GpuInstance {
  gpu: number;
  name: string;
  profileId: number;
  id: number;
  start: number;
  size: number;
}

export interface LgiResult {
  gpuInstances: GpuInstance[];
  notices?: ListingNotice[];
}

// ---- nvidia-smi mig -lci --------------------------------------------------------------------

export interface ComputeInstance {
  gpu: number;
  gpuInstanceId: number;
  name: string;
  profileId: number;
  id: number;
  /** null on drivers whose layout has no Placement column (R450 era). */
  start: number | null;
  size: number | null;
}

export interface LciResult {
  computeInstances: ComputeInstance[];
  notices?: ListingNotice[];
}

// ---- nvidia-smi mig -lcip -------------------------------------------------------------------

export interface ComputeInstanceProfile {
  gpu: number;
  gpuInstanceId: number;
  name: string;
  id: number;
  /** Marked `*` by the driver: the profile `-cci` uses when none is given. */
  isDefault: boolean;
  free: number;
  total: number;
  sm: number;
  dec: number;
  enc: number;
  ofa: number;
  ce: number;
  jpeg: number;
}

export interface LcipResult {
  profiles: ComputeInstanceProfile[];
  notices?: ListingNotice[];
}

// ---- nvidia-smi -L --------------------------------------------------------------------------

export interface MigDeviceListing {
  name: string;
  index: number;
  uuid: string;
  /** Known only from the pre-R470 `MIG-GPU-<uuid>/<gi>/<ci>` form. */
  gpuInstanceId: number | null;
  computeInstanceId: number | null;
}

export interface GpuListing {
  index: number;
  name: string;
  uuid: string;
  migDevices: MigDeviceListing[];
}

export interface GpusResult {
  gpus: GpuListing[];
}

// ---- --query-gpu / --query-compute-apps -----------------------------------------------------

export type QueryValue = string | number | null;
export type QueryRow = Record<string, QueryValue>;

export interface QueryResult {
  rows: QueryRow[];
}

export interface AppsResult {
  apps: QueryRow[];
}

// ---- mig -cgi/-cci/-dci/-dgi, -mig 0|1, -r/--gpu-reset -------------------------------------

export type MigOp =
  | {
      op: "create-gi";
      gpu: number;
      gpuInstanceId: number;
      profileName: string;
      profileId: number;
    }
  | {
      op: "create-ci";
      gpu: number;
      gpuInstanceId: number;
      /** null on R450-era drivers, whose message did not name the new CI. */
      computeInstanceId: number | null;
      profileName: string;
      profileId: number;
    }
  | { op: "destroy-ci"; gpu: number; gpuInstanceId: number; computeInstanceId: number }
  | { op: "destroy-gi"; gpu: number; gpuInstanceId: number }
  | { op: "mig-mode"; pci: string; enabled: boolean }
  | { op: "pending"; pci: string; mode: "enable" | "disable"; reason: string }
  | { op: "reset"; pci: string }
  | { op: "warning"; pci: string; message: string }
  | {
      op: "error";
      gpu?: number;
      pci?: string;
      gpuInstanceId?: number;
      computeInstanceId?: number;
      /** The profile as the user typed it (`9`, `7g.40gb`): the driver echoes the argument. */
      profile?: string;
      /** The driver's words: `Insufficient Resources`, `In use by another client`, … */
      reason: string;
      message: string;
    };

export interface MigOpResult {
  ops: MigOp[];
}

// ---- default nvidia-smi table ---------------------------------------------------------------

export interface TableGpu {
  index: number;
  name: string;
  busId: string;
  /** The driver's word: `On` or `Off`. */
  persistence: string | null;
  /** The driver's word: `Enabled`, `Disabled`; null for `N/A` or a layout without the cell. */
  migMode: string | null;
  memoryUsedMiB: number | null;
  memoryTotalMiB: number | null;
}

export interface TableMigDevice {
  gpu: number;
  gpuInstanceId: number;
  computeInstanceId: number;
  device: number;
  /** CIs of one GI share the GI's memory cell; each of them reports the GI's figures. */
  memoryUsedMiB: number | null;
  memoryTotalMiB: number | null;
  sm: number;
}

export interface TableProcess {
  gpu: number;
  gpuInstanceId: number | null;
  computeInstanceId: number | null;
  pid: number;
  type: string;
  name: string;
  memoryMiB: number | null;
}

export interface TableResult {
  driverVersion: string | null;
  cudaVersion: string | null;
  gpus: TableGpu[];
  migDevices: TableMigDevice[];
  processes: TableProcess[];
}

// ---- Xid lines of a kernel log --------------------------------------------------------------

export interface XidEvent {
  /** The line's own timestamp as printed (`14328.198496`, `Fri Aug 30 11:43:09 2024`, ISO). */
  time: string | null;
  /** `0000:3b:00` as in `PCI:0000:3b:00`. */
  pci: string;
  xid: number;
  pid: number | null;
  name: string | null;
  gpuInstanceId: number | null;
  computeInstanceId: number | null;
  /** Xid 45 names the Xid that caused it (`caused by previous Xid 31`). */
  causedBy: number | null;
  /** Everything after `pid=…, name=…,`, verbatim. */
  message: string;
}

/** `NVRM: GPU 0000:09:00.0: GPU has fallen off the bus.`: the driver lost the GPU, with or
 * without an Xid 79 line next to it. */
export interface FallenOffBusEvent {
  time: string | null;
  /** `0000:09:00` (the Xid form, without the PCI function), or null when the line names none. */
  pci: string | null;
  message: string;
}

export interface XidResult {
  events: XidEvent[];
  fallenOffBus: FallenOffBusEvent[];
}

// ---- nvidia-smi -q, MIG Mode block only -----------------------------------------------------

export interface QMigGpu {
  pci: string;
  productName: string | null;
  uuid: string | null;
  migModeCurrent: string | null;
  migModePending: string | null;
}

export interface QMigResult {
  driverVersion: string | null;
  cudaVersion: string | null;
  gpus: QMigGpu[];
}
