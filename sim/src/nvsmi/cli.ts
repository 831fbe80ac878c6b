// The simulated `nvidia-smi`: parse argv, read the node's state, print what the node's driver
// generation prints, change the state under its lock. Everything goes to stdout, as the captures
// (terminal copies) interleave success and failure lines in one stream.

import { isSlicecheckError } from "../../../src/errors.js";
import { fenceOf } from "../fence.js";
import { type Command, type MigOp, parseArgs } from "./args.js";
import { formatLci, formatLcip, formatLgi } from "./fmt/instances.js";
import { formatList } from "./fmt/list.js";
import { formatLgip, formatLgipp } from "./fmt/profiles.js";
import { formatQuery, formatVgpuQuery } from "./fmt/q.js";
import { queryApps, queryGpus } from "./fmt/query.js";
import { formatTable } from "./fmt/table.js";
import { formatNvlinkErrors, formatNvlinkStatus, formatTopo } from "./fmt/topo.js";
import { type Layout, layoutFor } from "./layout.js";
import { EXIT, MSG } from "./messages.js";
import { createCis, createGis, destroyCis, destroyGis, type OpResult } from "./ops-instances.js";
import { resetGpus, setMigMode } from "./ops-mode.js";
import { readState, type SimGi, type SimState, updateState } from "./state.js";
import { type GpuView, selectGpus, viewOf } from "./view.js";

export interface NvidiaSmiIo {
  /** The node's state directory (gpus.json, lock). */
  stateDir: string;
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  /** Effective uid of the caller: MIG changes need root (or the mig/config capability). */
  uid: number;
  /** Clock for the table's timestamp line; tests pin it. */
  now?: () => Date;
  /** The caller's environment (its device fence); this process's own when not given. */
  env?: NodeJS.ProcessEnv;
}

interface Reply {
  lines: string[];
  code: number;
}

const reply = (lines: string[], code: number = EXIT.ok): Reply => ({ lines, code });

function views(state: SimState, ids: string | undefined): GpuView[] | undefined {
  return selectGpus(state, ids)?.map((g) => viewOf(state, g));
}

function caps(state: SimState, uid: number): { monitor: boolean; config: boolean } {
  if (uid === 0) return { monitor: true, config: true };
  return {
    monitor: state.nonRootCaps?.migMonitor ?? true,
    config: state.nonRootCaps?.migConfig ?? false,
  };
}

const LISTING_FAILURE = {
  lgip: MSG.failedDisplayProfiles,
  lgipp: MSG.failedDisplayProfiles,
  lgi: MSG.failedDisplayGis,
  lci: MSG.failedDisplayCis,
  lcip: MSG.failedDisplayCiProfiles,
} as const;

interface Caller {
  uid: number;
  now: Date;
  env: NodeJS.ProcessEnv;
}

function readOnly(state: SimState, ids: string | undefined, c: Command, who: Caller): Reply {
  const { uid, now } = who;
  const vs = views(state, ids);
  if (!vs) return reply([MSG.noDevices], EXIT.notFound);
  const layout = layoutFor(state.driver);
  switch (c.kind) {
    case "table":
      return reply(formatTable(state, vs, layout, now));
    case "list":
      return reply(formatList(vs, layout, fenceOf(who.env)));
    case "q":
      return reply(formatQuery(state, vs, layout, now));
    case "vgpu-q": {
      const r = formatVgpuQuery(vs);
      return reply(r.lines, r.code);
    }
    case "topo":
      return reply(formatTopo(state));
    case "nvlink-status":
      return reply(formatNvlinkStatus(vs));
    case "nvlink-errors":
      return reply(formatNvlinkErrors(vs));
    case "help":
      return reply([`NVIDIA System Management Interface -- v${state.driver}`, "", "(simulated)"]);
    case "query-gpu":
    case "query-apps": {
      const run = c.kind === "query-gpu" ? queryGpus : queryApps;
      const q = run(vs, c.fields, c.format, { state, layout, now });
      // Printed on stdout followed by an empty line; nvidia-smi exits non-zero.
      return q.ok ? reply(q.lines) : reply([MSG.badField(q.badField), ""], EXIT.invalidArgument);
    }
    case "mig": {
      const op = c.mig.op;
      if (!caps(state, uid).monitor && op in LISTING_FAILURE) {
        const fail = LISTING_FAILURE[op as keyof typeof LISTING_FAILURE];
        return reply([fail("Insufficient Permissions")], EXIT.noPermission);
      }
      return listMig(vs, c.mig, c.gi, layout);
    }
    default:
      return reply([MSG.invalidArgs("")], EXIT.invalidArgument);
  }
}

function listMig(vs: GpuView[], mig: MigOp, gi: number[] | null, layout: Layout): Reply {
  const enabled = vs.filter((v) => v.catalog && v.gpu.mig.current);
  const only = (g: SimGi) => gi === null || gi.includes(g.id);
  if (mig.op === "lgip" || mig.op === "lgipp") {
    const shown = layout.profilesWithMigDisabled ? vs.filter((v) => v.catalog) : enabled;
    if (shown.length === 0) return reply([MSG.noMigDevices], EXIT.notFound);
    return reply(mig.op === "lgip" ? formatLgip(shown, layout.lgipName) : formatLgipp(shown));
  }
  if (enabled.length === 0) return reply([MSG.noMigDevices], EXIT.notFound);
  const gis = enabled.flatMap((v) => v.gpu.gis.filter(only));
  if (gis.length === 0) return reply([MSG.noGis("Not Found")], EXIT.notFound);
  if (mig.op === "lgi") return reply(formatLgi(enabled, layout.lgiName));
  if (mig.op === "lcip") return reply(formatLcip(enabled, only));
  if (gis.every((g) => g.cis.length === 0)) return reply([MSG.noCis("Not Found")], EXIT.notFound);
  return reply(formatLci(enabled, layout.lciPlacement, only));
}

function mutate(state: SimState, ids: string | undefined, c: Command, uid: number): OpResult {
  const vs = views(state, ids);
  const none = { changed: false };
  if (!vs) return { lines: [MSG.noDevices], code: EXIT.notFound, ...none };
  const layout = layoutFor(state.driver);
  if (c.kind === "mig-mode") return setMigMode(vs, c.enable, uid);
  if (c.kind === "reset") return resetGpus(vs, uid);
  if (c.kind !== "mig")
    return { lines: [MSG.invalidArgs("")], code: EXIT.invalidArgument, ...none };
  const enabled = vs.filter((v) => v.catalog && v.gpu.mig.current);
  if (enabled.length === 0) return { lines: [MSG.noMigDevices], code: EXIT.notFound, ...none };
  const m = c.mig;
  const allowed = caps(state, uid).config;
  switch (m.op) {
    case "cgi":
      return createGis(enabled, m.profiles, m.withDefaultCi, allowed);
    case "cci":
      return createCis(enabled, m.profiles, c.gi, allowed, layout);
    case "dci":
      return destroyCis(enabled, c.gi, c.ci, allowed);
    case "dgi":
      return destroyGis(enabled, c.gi, allowed);
    default:
      return { lines: [MSG.invalidArgs("mig")], code: EXIT.invalidArgument, ...none };
  }
}

/** Whether this argv changes the node (a MIG or mode change, a reset): the resident simulator
 * (../resident) answers only the calls that do not. */
export function isMutationArgv(argv: string[]): boolean {
  const parsed = parseArgs(argv);
  return !("error" in parsed) && isMutation(parsed.command);
}

function isMutation(c: Command): boolean {
  if (c.kind === "mig-mode" || c.kind === "reset") return true;
  return c.kind === "mig" && ["cgi", "cci", "dci", "dgi"].includes(c.mig.op);
}

/**
 * What nvidia-smi prints for a GPU that fell off the bus: NVML cannot get a handle for it
 * (NVML_ERROR_GPU_IS_LOST) and says so per GPU, then goes on with the others; the exit code is
 * 15. The references hold no capture of it: the wording is the one NVIDIA's forums and bug
 * reports quote (`Unable to determine the device handle for GPU0000:07:00.0: GPU is lost.
 * Reboot the system to recover this GPU`, no space after `GPU`). Conservative where unknown:
 * the line comes first, and nothing is changed on a node with a lost GPU among those selected.
 */
export function lostGpuLine(pciBusId: string): string {
  return `Unable to determine the device handle for GPU${pciBusId.replace(/^0000(?=[0-9a-f]{4}:)/i, "")}: GPU is lost.  Reboot the system to recover this GPU`;
}

function lostAmong(state: SimState, ids: string | undefined): { lost: string[]; all: boolean } {
  const sel = selectGpus(state, ids) ?? [];
  const lost = sel.filter((g) => g.lost).map((g) => lostGpuLine(g.pciBusId));
  return { lost, all: sel.length > 0 && lost.length === sel.length };
}

export async function nvidiaSmiMain(argv: string[], io: NvidiaSmiIo): Promise<number> {
  const parsed = parseArgs(argv);
  const emit = (r: Reply) => {
    if (r.lines.length > 0) io.stdout(`${r.lines.join("\n")}\n`);
    return r.code;
  };
  if ("error" in parsed) return emit(reply([MSG.invalidArgs(parsed.error)], EXIT.invalidArgument));
  const { ids, command } = parsed;
  try {
    if (isMutation(command)) {
      const r = await updateState(io.stateDir, (state) => {
        const gone = lostAmong(state, ids);
        if (gone.lost.length > 0) return { changed: false, result: reply(gone.lost, EXIT.gpuLost) };
        const res = mutate(state, ids, command, io.uid);
        return { changed: res.changed, result: res };
      });
      return emit(r);
    }
    const state = readState(io.stateDir);
    const gone = lostAmong(state, ids);
    const who = { uid: io.uid, now: io.now?.() ?? new Date(), env: io.env ?? process.env };
    if (gone.lost.length === 0) return emit(readOnly(state, ids, command, who));
    if (gone.all) return emit(reply(gone.lost, EXIT.gpuLost));
    // The GPUs still on the bus answer as usual, after the lost ones' lines.
    const reachable = { ...state, gpus: state.gpus.filter((g) => !g.lost) };
    const rest = readOnly(reachable, ids, command, who);
    return emit(
      reply([...gone.lost, ...rest.lines], rest.code === EXIT.ok ? EXIT.gpuLost : rest.code),
    );
  } catch (e) {
    if (isSlicecheckError(e, "SIM") && /no simulated GPU state/.test(e.message)) {
      // What a node without a loaded driver answers.
      return emit(reply([MSG.noDriver], EXIT.driverNotLoaded));
    }
    io.stderr(`nvidia-smi (simulated): ${(e as Error).message}\n`);
    return EXIT.other;
  }
}
