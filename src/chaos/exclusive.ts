// A whole-card instance (one GI over the whole GPU) has no neighbour to fault: what it promises
// is exclusivity. While its tenant (a stress) runs, the GPU must hold exactly one GPU instance
// and no compute process but that tenant's; half-way through, from another channel, the driver
// is asked what is on the GPU.
import type { Transport } from "../transport/types.js";
import type { Instance } from "../workloads/instances.js";
import type { InstanceOutcome } from "../workloads/launcher.js";
import { stressSpec, type WorkloadSpec } from "../workloads/specs.js";
import { victimGraceS } from "./faults.js";
import type { ChaosEvent, EventData, EventOp, ScenarioRef } from "./history.js";
import { errText, HarnessLost, type PlanEntry } from "./plan.js";
import { readExclusivity } from "./probes.js";

export interface ExclusiveDeps {
  durationS: number;
  transport: Transport;
  signal?: AbortSignal;
  step: (
    insts: Instance[],
    spec: WorkloadSpec,
    op: EventOp,
    process: ChaosEvent["process"],
    scenario: string,
    extra: { graceS: number },
  ) => Promise<InstanceOutcome[]>;
  event: (gpu: number, op: EventOp, type: ChaosEvent["type"], data: EventData) => void;
}

export async function exclusiveCheck(p: PlanEntry, ref: ScenarioRef, d: ExclusiveDeps) {
  const D = d.durationS;
  const tenant = d.step([p.aggressor], stressSpec(D), "load", "victim", ref.scenario, {
    graceS: victimGraceS(D),
  });
  await new Promise((r) => setTimeout(r, (D * 1000) / 2));
  d.event(p.gpu, "exclusivity", "invoke", { scenario: ref.scenario });
  try {
    const x = await readExclusivity(d.transport, p.gpu, d.signal);
    d.event(p.gpu, "exclusivity", x.lgiExit === 0 && x.appsExit === 0 ? "ok" : "fail", {
      scenario: ref.scenario,
      exclusivity: { gpuUuid: p.aggressor.gpuUuid, ...x },
    });
  } catch (e) {
    await tenant.catch(() => []);
    throw new HarnessLost(errText(e));
  }
  await tenant;
}
