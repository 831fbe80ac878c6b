// A tenant of the node (`sim fault NODE tenant --gpu N --name PCT[@giG]`): a CUDA process of
// someone else that keeps PCT % of its GPU's (or its GPU instance's) SMs busy on average and
// holds memory, as a real user's job does. The simulated dcgmi reports its SM activity per GPU
// and GPU instance, nvidia-smi its utilization.gpu on a whole GPU and its memory everywhere
// (nvsmi/tenant.ts draws each reading). `slicecheck observe` measures it; `--clear` removes it.
import { type FaultKind, gpuOf, gpuOfRecord, usage } from "./fault-kind.js";

/** What a tenant holds: its context and working set (fits even the smallest GI, 1g.5gb). */
export const TENANT_MEMORY_MIB = 3072;

const SPEC = /^(\d{1,3})%?(?:@gi(\d+))?$/;

export const tenant: FaultKind = {
  usage:
    "tenant --gpu N --name PCT[@giG]: a tenant keeps PCT % of the GPU's (GI G's) SMs busy on average",
  plant({ state }, o) {
    const m = SPEC.exec(o.name ?? "");
    const pct = m ? Number(m[1]) : Number.NaN;
    if (!m || !(pct >= 0 && pct <= 100))
      throw usage(
        `tenant needs --name PCT[@giG], PCT a mean busy share 0-100 (e.g. --name 30, --name 75@gi2), got '${o.name ?? ""}'`,
      );
    const gpu = gpuOf(state, o);
    const giId = m[2] === undefined ? undefined : Number(m[2]);
    // Under MIG a CUDA process runs inside a GI: the named one, else the first.
    const gis = [...gpu.gis].sort((a, b) => a.id - b.id);
    const gi = gpu.mig.current
      ? giId === undefined
        ? gis[0]
        : gis.find((g) => g.id === giId)
      : undefined;
    if (giId !== undefined && !gi)
      throw usage(
        `GPU ${gpu.index} has no GPU instance ${giId}${gpu.mig.current ? `; it has GIs ${gis.map((g) => g.id).join(", ") || "none"}` : " (MIG is off)"}`,
      );
    if (gpu.mig.current && !gi)
      throw usage(`GPU ${gpu.index} is in MIG mode with no GPU instance: a tenant needs one`);
    const ci = gi ? [...gi.cis].sort((a, b) => a.id - b.id)[0] : undefined;
    const pids = state.gpus.flatMap((g) => g.processes.map((p) => p.pid));
    const pid = Math.max(32_000, ...pids.map((p) => p + 1));
    gpu.processes.push({
      pid,
      name: "python3",
      type: "C",
      gi: gi?.id ?? null,
      ci: ci?.id ?? null,
      usedMiB: TENANT_MEMORY_MIB,
      busyPct: pct,
      planted: true,
    });
    return {
      record: { kind: "tenant", gpu: gpu.index, pid },
      detail: `tenant ${pid} (python3, ${TENANT_MEMORY_MIB} MiB) keeps ${pct} % of GPU ${gpu.index}${gi ? ` GI ${gi.id}` : ""} busy on average`,
    };
  },
  undo({ state }, r) {
    if (r.kind !== "tenant") return;
    const gpu = gpuOfRecord(state, r.gpu);
    if (gpu) gpu.processes = gpu.processes.filter((p) => p.pid !== r.pid);
  },
};
