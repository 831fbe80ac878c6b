// The words nvidia-smi prints for MIG operations and their failures, verbatim from the captures
// in mig-reference.md §4, §7 and §8. Where a message is built by analogy (no capture of that
// exact case), the function says so.

/** `%2d` as nvidia-smi pads GPU, GI, CI and profile IDs in these messages. */
export function d2(n: number): string {
  return String(n).padStart(2);
}

/** nvidia-smi(1) RETURN VALUE; NVML errors without their own code exit 255. */
export const EXIT = {
  ok: 0,
  invalidArgument: 2,
  notSupported: 3,
  noPermission: 4,
  notFound: 6,
  driverNotLoaded: 9,
  /** nvidia-smi(1) RETURN VALUE 15: "The GPU has fallen off the bus or has otherwise become
   * inaccessible." */
  gpuLost: 15,
  other: 255,
} as const;

export type NvmlError =
  | "Insufficient Resources"
  | "In use by another client"
  | "Insufficient Permissions"
  | "Invalid Argument"
  | "Not Found"
  | "Not Supported";

export function exitFor(err: NvmlError): number {
  switch (err) {
    case "Insufficient Permissions":
      return EXIT.noPermission;
    case "Invalid Argument":
      return EXIT.invalidArgument;
    case "Not Found":
      return EXIT.notFound;
    case "Not Supported":
      return EXIT.notSupported;
    default:
      return EXIT.other;
  }
}

export const MSG = {
  createdGi: (gi: number, gpu: number, name: string, profileId: number) =>
    `Successfully created GPU instance ID ${d2(gi)} on GPU ${d2(gpu)} using profile MIG ${name} (ID ${d2(profileId)})`,
  createdCi: (ci: number | null, gpu: number, gi: number, name: string, profileId: number) =>
    ci === null
      ? `Successfully created compute instance on GPU ${d2(gpu)} GPU instance ID ${d2(gi)} using profile MIG ${name} (ID ${d2(profileId)})`
      : `Successfully created compute instance ID ${d2(ci)} on GPU ${d2(gpu)} GPU instance ID ${d2(gi)} using profile MIG ${name} (ID ${d2(profileId)})`,
  destroyedCi: (ci: number, gpu: number, gi: number) =>
    `Successfully destroyed compute instance ID ${d2(ci)} from GPU ${d2(gpu)} GPU instance ID ${d2(gi)}`,
  destroyedGi: (gi: number, gpu: number) =>
    `Successfully destroyed GPU instance ID ${d2(gi)} from GPU ${d2(gpu)}`,
  /** The profile as the user typed it (`profile 9`, `profile 7g.40gb`). */
  cannotCreateGi: (gpu: number, typed: string, err: NvmlError) =>
    `Unable to create a GPU instance on GPU ${d2(gpu)} using profile ${typed}: ${err}`,
  failedCreateGis: (err: NvmlError) => `Failed to create GPU instances: ${err}`,
  /** By analogy with the GI message (no capture of a failed -cci). */
  cannotCreateCi: (gpu: number, gi: number, typed: string, err: NvmlError) =>
    `Unable to create a compute instance on GPU ${d2(gpu)} GPU instance ID ${d2(gi)} using profile ${typed}: ${err}`,
  failedCreateCis: (err: NvmlError) => `Failed to create compute instances: ${err}`,
  cannotDestroyCi: (ci: number, gpu: number, gi: number, err: NvmlError) =>
    `Unable to destroy compute instance ID ${d2(ci)} from GPU ${d2(gpu)} GPU instance ID ${d2(gi)}: ${err}`,
  failedDestroyCis: (err: NvmlError) => `Failed to destroy compute instances: ${err}`,
  cannotDestroyGi: (gi: number, gpu: number, err: NvmlError) =>
    `Unable to destroy GPU instance ID ${d2(gi)} from GPU ${d2(gpu)}: ${err}`,
  failedDestroyGis: (err: NvmlError) => `Failed to destroy GPU instances: ${err}`,
  noMigDevices: "No MIG-enabled devices found.",
  noGis: (err: NvmlError) => `No GPU instances found: ${err}`,
  /** By analogy with `No GPU instances found: Not Found`. */
  noCis: (err: NvmlError) => `No compute instances found: ${err}`,
  failedDisplayGis: (err: NvmlError) => `Failed to display GPU instances: ${err}`,
  failedDisplayCis: (err: NvmlError) => `Failed to display compute instances: ${err}`,
  failedDisplayProfiles: (err: NvmlError) => `Failed to display GPU instance profiles: ${err}`,
  failedDisplayCiProfiles: (err: NvmlError) =>
    `Failed to display compute instance profiles: ${err}`,

  modeSet: (enable: boolean, bus: string) =>
    `${enable ? "Enabled" : "Disabled"} MIG Mode for GPU ${bus}`,
  modeRefused: (enable: boolean, bus: string, err: NvmlError) =>
    `Unable to ${enable ? "enable" : "disable"} MIG Mode for GPU ${bus}: ${err}`,
  terminating: "Terminating early due to previous errors.",
  pendingInUse: (enable: boolean, bus: string) => [
    `Warning: MIG mode is in pending ${enable ? "enable" : "disable"} state for GPU ${bus}:In use by another client`,
    `${bus} is currently being used by one or more other processes (e.g. CUDA application or a monitoring application such as another instance of nvidia-smi). Please first kill all processes using the device and retry the command or reboot the system to make MIG mode effective.`,
  ],
  pendingNoReset: (enable: boolean, bus: string) => [
    `Warning: MIG mode is in pending ${enable ? "enable" : "disable"} state for GPU ${bus}:Not Supported`,
    `Reboot the system or try nvidia-smi --gpu-reset to make MIG mode effective on GPU ${bus}`,
  ],
  persistenceOff: (bus: string) => [
    "",
    `Warning: persistence mode is disabled on device ${bus}. See the Known Issues section of the nvidia-smi(1) man page for more information. Run with [--help | -h] switch to get more information on how to enable persistence mode.`,
  ],
  allDone: "All done.",

  resetOk: (bus: string) => `GPU ${bus} was successfully reset.`,
  resetNotSupported: (bus: string) => `Resetting GPU ${bus} is not supported.`,
  resetFailed: (fails: { bus: string; err: NvmlError }[]) => {
    const lines = ["The following GPUs could not be reset:"];
    for (const f of fails) lines.push(`  GPU ${f.bus}: ${f.err}`);
    lines.push("");
    if (fails.some((f) => f.err === "In use by another client")) {
      const n = fails.length;
      lines.push(
        `${n} ${n === 1 ? "device is" : "devices are"} currently being used by one or more other processes (e.g., Fabric Manager, CUDA application, graphics application such as an X server, or a monitoring application such as another instance of nvidia-smi). Please first kill all processes using this device and all compute applications running in the system.`,
      );
    }
    return lines;
  },

  invalidArgs: (sub: "" | "mig") =>
    `Invalid combination of input arguments. Please run 'nvidia-smi${sub ? ` ${sub}` : ""} -h' for help.`,
  noDevices: "No devices were found",
  badField: (field: string) => `Field "${field}" is not a valid field to query.`,
  noDriver:
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.",
} as const;
