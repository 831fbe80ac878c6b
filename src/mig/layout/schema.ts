// The mig-parted v1 config schema (api/spec/v1 in NVIDIA/mig-parted) in zod, with the checks
// mig-parted makes while unmarshalling: `devices` is "all" or a list of indices, `mig-devices`
// is required when MIG is on and must be empty when it is off, counts are not negative, keys
// are MIG profiles. `placements` is slicecheck's only addition. Every message says what is
// expected, because it is shown next to the file and line.

import { z } from "zod";
import { normaliseDeviceId, parseProfileKey } from "./keys.js";

const count = z.int({ error: "expected a whole number of instances (0 or more)" }).min(0, {
  error: "expected a whole number of instances (0 or more)",
});

const start = z
  .int({ error: "expected a start memory slice (0, 1, 2, …)" })
  .min(0, { error: "expected a start memory slice (0, 1, 2, …)" });

export const ENTRY_FIELDS = [
  "device-filter",
  "devices",
  "mig-enabled",
  "mig-devices",
  "placements",
];

/** The highest GPU index a layout may name: nvidia-smi numbers GPUs from 0, and no server
 * holds more than 16 (HGX boards have 8; a few chassis 16). 63 leaves room and still catches
 * a typo such as 99. */
export const MAX_GPU_INDEX = 63;

const entryShape = z.strictObject(
  {
    "device-filter": z
      .union([z.string(), z.array(z.string())], {
        error: 'expected a PCI device id such as "0x233010DE" or a list of them',
      })
      .optional(),
    devices: z.union([z.literal("all"), z.array(z.int().min(0))], {
      error: 'expected "all" or a list of GPU indices such as [0, 1]',
    }),
    "mig-enabled": z.boolean({ error: "expected true or false" }),
    "mig-devices": z
      .record(z.string(), count, {
        error: 'expected a mapping of MIG profiles to counts, such as {"3g.40gb": 2}',
      })
      .optional(),
    placements: z
      .record(
        z.string(),
        z.array(start, { error: "expected a list of start slices, such as [0, 4]" }),
        {
          error:
            'expected a mapping of GPU-instance profiles to start slices, such as {"3g.40gb": [4]}',
        },
      )
      .optional(),
  },
  { error: "expected an entry: a mapping with devices, mig-enabled and mig-devices" },
);

type Entry = z.infer<typeof entryShape>;
type Ctx = z.RefinementCtx;

/** The checks mig-parted makes on an entry beyond its shape, each naming what is expected. */
export const entrySchema = entryShape.superRefine((e, ctx) => {
  checkDeviceFilter(e, ctx);
  checkDevices(e, ctx);
  checkPlacements(e, checkMigDevices(e, ctx), ctx);
});

function checkDeviceFilter(e: Entry, ctx: Ctx): void {
  const one = typeof e["device-filter"] === "string";
  const filters =
    e["device-filter"] === undefined
      ? []
      : typeof e["device-filter"] === "string"
        ? [e["device-filter"]]
        : e["device-filter"];
  filters.forEach((f, i) => {
    const path = one ? ["device-filter"] : ["device-filter", i];
    if (f === "")
      ctx.addIssue({
        code: "custom",
        path,
        message:
          'an empty device-filter matches no GPU; give a PCI device id such as "0x233010DE", or leave device-filter out for every GPU',
      });
    else if (normaliseDeviceId(f) === null)
      ctx.addIssue({
        code: "custom",
        path,
        message: `'${f}' is not a PCI device id; expected the form 0x<device><vendor>, such as "0x233010DE"`,
      });
  });
}

/** A GPU index listed twice, or one no node has: the entry would silently apply to fewer GPUs
 * than written. Indices a node lacks below MAX_GPU_INDEX are only known at discovery. */
function checkDevices(e: Entry, ctx: Ctx): void {
  if (!Array.isArray(e.devices)) return;
  const seen = new Set<number>();
  e.devices.forEach((d, i) => {
    if (seen.has(d))
      ctx.addIssue({
        code: "custom",
        path: ["devices", i],
        message: `GPU index ${d} is listed twice; list each GPU once`,
      });
    else if (d > MAX_GPU_INDEX)
      ctx.addIssue({
        code: "custom",
        path: ["devices", i],
        message: `GPU index ${d}: no node holds more than ${MAX_GPU_INDEX + 1} GPUs (indices 0-${MAX_GPU_INDEX})`,
      });
    seen.add(d);
  });
}

type GiCounts = Map<string, { whole: number; split: boolean }>;

/** mig-devices against mig-enabled, and each key a MIG profile; returns, per GPU-instance
 * profile, how many whole instances it asks for and whether any is split into CIs. */
function checkMigDevices(e: Entry, ctx: Ctx): GiCounts {
  const devices = e["mig-devices"];
  if (e["mig-enabled"] && devices === undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["mig-devices"],
      message: "mig-devices is required when mig-enabled is true (use {} for no instances)",
    });
  }
  const nonZero = Object.entries(devices ?? {}).filter(([, n]) => n > 0);
  if (!e["mig-enabled"] && nonZero.length > 0) {
    ctx.addIssue({
      code: "custom",
      path: ["mig-devices"],
      message:
        "MIG devices are listed while mig-enabled is false; remove them or set mig-enabled: true",
    });
  }
  const gis: GiCounts = new Map();
  for (const [key, n] of Object.entries(devices ?? {})) {
    const parsed = parseProfileKey(key);
    if (!parsed) {
      ctx.addIssue({
        code: "custom",
        path: ["mig-devices", key],
        message: `'${key}' is not a MIG profile; expected <G>g.<GB>gb such as 3g.40gb, 1g.10gb+me, or a compute-instance split such as 1c.3g.40gb`,
      });
      continue;
    }
    const g = gis.get(parsed.gi) ?? { whole: 0, split: false };
    if (parsed.ciSlices === null) g.whole += n;
    else if (n > 0) g.split = true;
    gis.set(parsed.gi, g);
  }
  return gis;
}

function checkPlacements(e: Entry, gis: GiCounts, ctx: Ctx): void {
  for (const [gi, starts] of Object.entries(e.placements ?? {})) {
    const g = gis.get(gi);
    if (!g || (g.whole === 0 && !g.split)) {
      ctx.addIssue({
        code: "custom",
        path: ["placements", gi],
        message: `placements names ${gi}, which mig-devices does not ask for; placements are keyed by a GPU-instance profile of mig-devices`,
      });
      continue;
    }
    if (new Set(starts).size !== starts.length) {
      ctx.addIssue({
        code: "custom",
        path: ["placements", gi],
        message: `placements for ${gi} repeats a start; two GPU instances cannot share one`,
      });
    }
    if (!g.split && starts.length > g.whole) {
      ctx.addIssue({
        code: "custom",
        path: ["placements", gi],
        message: `placements gives ${starts.length} starts for ${gi}, but mig-devices asks for ${g.whole}`,
      });
    }
  }
}

export const fileSchema = z.strictObject(
  {
    version: z.literal("v1", {
      error: "expected `version: v1`, the only mig-parted config version",
    }),
    "mig-configs": z.record(
      z.string(),
      z
        .array(entrySchema, { error: "expected a list of entries (`- devices: all …`)" })
        .min(1, { error: "expected at least one entry" }),
      { error: "expected a mapping of config names to lists of entries" },
    ),
  },
  { error: "expected a mig-parted config: a mapping with version and mig-configs" },
);

export type RawEntry = z.infer<typeof entrySchema>;
export type RawFile = z.infer<typeof fileSchema>;
