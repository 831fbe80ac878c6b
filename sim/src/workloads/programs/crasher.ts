// The simulated `slicecheck-crasher` (workloads/crasher.cu): the device header, a wait of
// --after S (default 0, 1 for sigkill), `SLICECHECK crasher mode=<mode> armed`, then the fault:
//   illegal-address  Xid 31 in the kernel log, attributed to this process and its GI/CI, then
//                    "CUDA error: an illegal memory access was encountered (...)", exit 2.
//                    Xid 31 because an access to an unmapped address is an MMU fault, which is
//                    what Xid 31 (ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT) reports on Ampere and
//                    later; the app-scoped class of reference workloads.md 4.5 (13/31/43/45)
//                    stays inside the instance, so one line against this GI/CI is the model.
//   trap             Xid 13 (graphics exception: the SM raised it) and "unspecified launch
//                    failure" (719), exit 2.
//   hang             never finishes; only a signal ends it.
//   sigkill          SIGKILL to itself: the process-list entry is left to the guardian.
// Under MPS the fault also dooms every other client of the same device (mps.ts). No signal
// handler, as in crasher.cu: SIGTERM kills it.

import {
  CRASHER_MODES,
  formatCrasherArmedLine,
} from "../../../../src/workloads/parsers/builtin.js";
import { logXid, mmuFaultMessage, smExceptionMessages } from "../../klog/xid.js";
import { updateState } from "../../nvsmi/state.js";
import { CONTEXT_MIB } from "../admit.js";
import { readChaos, recordChaosEvent } from "../chaos.js";
import type { ProgramCtx } from "../ctx.js";
import { CUDA, type CudaError, cudaErrorByCode, SITES } from "../cuda.js";
import { currentGpu, type SimDevice } from "../device.js";
import { eachOption, parseDouble, usageError } from "../flags.js";
import { doomPeers } from "../mps.js";
import {
  dieOfCuda,
  doomed,
  joinDevice,
  openDevice,
  openSession,
  type Session,
  sleepWatching,
} from "../session.js";

const PROGRAM = "crasher";
const USAGE =
  "usage: crasher --mode illegal-address|trap|hang|sigkill [--after S]\n" +
  "  --mode M    the fault to cause (see the comment at the top of crasher.cu)\n" +
  "  --after S   seconds to wait before acting (default 0; sigkill: 1, with a kernel running)\n";

type Mode = (typeof CRASHER_MODES)[number];

function options(ctx: ProgramCtx): { mode: Mode; afterS: number | undefined } {
  let modeArg: string | undefined;
  let afterS: number | undefined;
  eachOption(ctx, PROGRAM, USAGE, (name, next) => {
    if (name === "--mode") {
      modeArg = next();
      if (!CRASHER_MODES.some((m) => m === modeArg))
        usageError(ctx, PROGRAM, USAGE, "unknown mode", modeArg);
    } else if (name === "--after") {
      const raw = next();
      const v = parseDouble(raw);
      if (v === undefined || v < 0)
        usageError(ctx, PROGRAM, USAGE, "--after needs seconds >= 0, got", raw);
      afterS = v;
    } else {
      usageError(ctx, PROGRAM, USAGE, "unknown argument", name);
    }
  });
  const mode = CRASHER_MODES.find((m) => m === modeArg);
  if (mode === undefined) return usageError(ctx, PROGRAM, USAGE, "--mode is required");
  return { mode, afterS };
}

/** The driver logs the Xid, MPS dooms the peers, then the runtime reports the error. */
async function fault(s: Session, dev: SimDevice, e: CudaError, xid: number, messages: string[]) {
  const unit = { gi: dev.gi?.id ?? null, ci: dev.ci?.id ?? null };
  await logXid(s.stateDir, {
    gpu: dev.gpu,
    pci: dev.pci,
    xid,
    pid: s.pid,
    name: s.processName,
    ...(readChaos(s.stateDir).xidMisattributed ? misattributed(dev, unit) : unit),
    messages,
  });
  await updateState(s.stateDir, (state) => {
    const gpu = currentGpu(state, dev);
    const peers = gpu ? doomPeers(gpu, s.pid, unit, e.code) : [];
    return { changed: peers.length > 0, result: peers };
  });
  return dieOfCuda(s, e, SITES.crasherArmed);
}

/** Planted xid-misattributed: the line names another GI of the GPU (or the next id). */
function misattributed(dev: SimDevice, unit: { gi: number | null; ci: number | null }) {
  const other = dev.gpu.gis.map((g) => g.id).find((id) => id !== unit.gi);
  return { gi: other ?? (unit.gi ?? 0) + 1, ci: 0 };
}

export async function crasher(ctx: ProgramCtx): Promise<void> {
  const { mode, afterS } = options(ctx);
  const s = openSession(ctx, PROGRAM, false);
  const dev = await openDevice(s);
  await joinDevice(s, dev, CONTEXT_MIB);
  // The wait makes no CUDA call: an MPS fault elsewhere shows up at the armed kernel.
  const wait = afterS ?? (mode === "sigkill" ? 1 : 0);
  const end = Date.now() + wait * 1000;
  while (Date.now() < end) await ctx.sleep(Math.min(50, end - Date.now()));

  s.out(formatCrasherArmedLine(mode));
  await recordChaosEvent(s.stateDir, {
    gpu: dev.gpu.index,
    gi: dev.gi?.id ?? null,
    ci: dev.ci?.id ?? null,
    kind: mode === "sigkill" ? "kill" : mode === "hang" ? "hang" : "crash",
  });
  const doom = doomed(s, dev);
  if (doom !== null) await dieOfCuda(s, cudaErrorByCode(doom), SITES.crasherArmed);
  switch (mode) {
    case "sigkill":
      ctx.raise("SIGKILL");
      break;
    case "illegal-address":
      await fault(s, dev, CUDA.illegalAddress, 31, [mmuFaultMessage(s.pid)]);
      break;
    case "trap":
      await fault(s, dev, CUDA.launchFailure, 13, smExceptionMessages());
      break;
    case "hang":
      for (;;) await sleepWatching(s, 3_600_000, dev, SITES.crasherArmed);
  }
}
