// `slicecheck doctor`: can we test this node? Reachability, host key, login, sudo, driver, MIG
// capability per GPU and the tools the suites need, gathered in one round trip per node.
import { isSlicecheckError } from "../../errors.js";
import type { NodeSpec } from "../../inventory/types.js";
import { type Blocker, readReadiness } from "../../mig/apply/index.js";
import { intendedGroups } from "../../mig/apply/intended.js";
import { fanOut, newRunId } from "../../transport/open.js";
import type { Transport } from "../../transport/types.js";
import { loadSelected, type NodeOptions, type Out, table } from "../context.js";
import { type DoctorLayout, intendedState, layoutWarnings } from "./doctor-layout.js";
import {
  type DoctorToolkit,
  toolkitColumns,
  toolkitState,
  toolkitWarnings,
} from "./doctor-toolkit.js";

/** The probe, in one round trip. nvidia-smi runs under its own `timeout` (when the node has
 * one), so that a hung driver is reported as that, and the rest of the probe still runs. */
const probe = (smiTimeoutS: number) => `
echo "user=$(id -un)"; echo "uid=$(id -u)"
if command -v sudo >/dev/null 2>&1; then if sudo -n true 2>/dev/null; then echo sudo=ok; else echo sudo=denied; fi; else echo sudo=absent; fi
if command -v timeout >/dev/null 2>&1; then deadline="timeout -k 2 ${smiTimeoutS}"; else deadline=""; fi
if command -v nvidia-smi >/dev/null 2>&1; then
  q=$($deadline nvidia-smi --query-gpu=index,name,uuid,driver_version,mig.mode.current,mig.mode.pending --format=csv,noheader 2>&1); rc=$?
  echo "nvsmi_rc=$rc"; printf '%s\\n' "$q" | sed 's/^/gpu=/'
  # The banner only after the query answered: a hung driver would hang it too, doubling the wait.
  if [ "$rc" -eq 0 ]; then echo "cuda=$($deadline nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\\([0-9][0-9.]*\\).*/\\1/p' | head -n 1)"; fi
else echo nvsmi_rc=missing; fi
p=$(command -v nvcc 2>/dev/null || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })
if [ -n "$p" ]; then echo "nvcc=$("$p" --version 2>/dev/null | sed -n 's/.*release \\([0-9.]*\\).*/\\1/p')"; else echo nvcc=missing; fi
# Forward compatibility (cuda-compat-<major>-<minor>) puts its libcuda in the toolkit's compat/
# folder (docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html).
if [ -n "$p" ]; then for f in "$(dirname "$(dirname "$p")")"/compat/libcuda.so.*; do [ -e "$f" ] && { echo "compat=$f"; break; }; done; fi
for t in gpu_burn all_reduce_perf timeout; do if command -v "$t" >/dev/null 2>&1; then echo "$t=yes"; else echo "$t=missing"; fi; done
if dmesg >/dev/null 2>&1; then echo dmesg=ok; elif sudo -n dmesg >/dev/null 2>&1; then echo dmesg=sudo; else echo dmesg=denied; fi
`;

export interface DoctorGpu {
  index: number;
  name: string;
  uuid: string;
  migCurrent: string;
  migPending: string;
  migCapable: boolean;
}

export interface DoctorNode {
  name: string;
  host: string;
  port: number;
  reachable: boolean;
  connectMs: number | null;
  /** How long the node's login shell takes before a command starts (profiles, modules…). */
  loginMs: number | null;
  hostKey: "ok" | "unknown" | "changed" | "revoked" | null;
  user: string | null;
  sudo: "ok" | "denied" | "absent" | "not-needed" | null;
  driver: string | null;
  /** The highest CUDA version the driver runs (nvidia-smi's banner, `CUDA Version: 12.2`). */
  driverCuda: string | null;
  gpus: DoctorGpu[];
  nvcc: string | null;
  gpuBurn: boolean;
  allReducePerf: boolean;
  dmesg: "ok" | "sudo" | "denied" | null;
  problems: string[];
  warnings: string[];
  /** Whether apply and the isolation suite would go ahead on this node now: no problem above
   * and no interlock refusing (the same judgement on the same reads as theirs). */
  ready: boolean;
  /** What would refuse, and why. */
  notReady: Blocker[];
  /** The node's intended layout (inventory mig_config) and whether its GPUs are in it. */
  layout: DoctorLayout | null;
  /** The container toolkit and whether its CDI spec follows the live MIG layout. */
  toolkit: DoctorToolkit | null;
}

export function interpretProbe(
  node: NodeSpec,
  out: string,
  smiTimeoutS: number | null = null,
): Omit<
  DoctorNode,
  | "name"
  | "host"
  | "port"
  | "reachable"
  | "connectMs"
  | "loginMs"
  | "hostKey"
  | "ready"
  | "notReady"
  | "layout"
  | "toolkit"
> {
  const kv = probeFields(out);
  const one = (k: string) => kv.get(k)?.[0] ?? null;
  const problems: string[] = [];
  const warnings: string[] = [];
  const uid = one("uid");
  const sudoRaw = one("sudo") as DoctorNode["sudo"];
  const sudo = uid === "0" ? "not-needed" : sudoRaw;
  if (node.become === "sudo" && sudo !== "ok" && sudo !== "not-needed") {
    problems.push(
      `inventory says become: sudo, but \`sudo -n true\` ${sudo === "absent" ? "finds no sudo" : "asks for a password"}: allow NOPASSWD for ${one("user")}`,
    );
  }
  if (uid !== "0" && node.become !== "sudo")
    warnings.push(
      "not root and no `become: sudo`: MIG changes will be refused (Insufficient Permissions)",
    );
  const { gpus, driver } = smiGpus(kv, smiTimeoutS, problems);
  const nvcc = one("nvcc");
  if (nvcc === "missing")
    warnings.push("nvcc not found: the built-in workloads cannot be built on this node");
  const driverCuda = one("cuda") || null;
  const toolkit = nvcc && nvcc !== "missing" ? cudaMismatch(nvcc, driverCuda, one("compat")) : null;
  if (toolkit?.blocks) problems.push(toolkit.message);
  else if (toolkit) warnings.push(toolkit.message);
  if (one("gpu_burn") !== "yes")
    warnings.push("gpu_burn not on PATH: the gpu-burn workload is unavailable");
  if (one("all_reduce_perf") !== "yes")
    warnings.push("all_reduce_perf not on PATH: the nccl suite is unavailable");
  if (one("timeout") === "missing")
    problems.push("coreutils `timeout` is missing: remote deadlines cannot be enforced");
  const dmesg = one("dmesg") as DoctorNode["dmesg"];
  if (dmesg === "denied")
    warnings.push("the kernel log is not readable (dmesg): Xid attribution is unavailable");
  return {
    user: one("user"),
    sudo,
    driver,
    driverCuda,
    gpus,
    nvcc: nvcc === "missing" ? null : nvcc,
    gpuBurn: one("gpu_burn") === "yes",
    allReducePerf: one("all_reduce_perf") === "yes",
    dmesg,
    problems,
    warnings,
  };
}

/** The probe's `key=value` lines, each key with all its values in order (`gpu=` repeats). */
function probeFields(out: string): Map<string, string[]> {
  const kv = new Map<string, string[]>();
  for (const line of out.split("\n")) {
    const i = line.indexOf("=");
    if (i > 0) kv.set(line.slice(0, i), [...(kv.get(line.slice(0, i)) ?? []), line.slice(i + 1)]);
  }
  return kv;
}

/** The GPUs nvidia-smi listed, and its driver version; what went wrong in `problems`. */
function smiGpus(
  kv: Map<string, string[]>,
  smiTimeoutS: number | null,
  problems: string[],
): { gpus: DoctorGpu[]; driver: string | null } {
  const gpus: DoctorGpu[] = [];
  let driver: string | null = null;
  const rc = kv.get("nvsmi_rc")?.[0] ?? null;
  if (rc === null) {
    // The probe itself was cut off before it got there (reported by the caller).
  } else if (rc === "missing")
    problems.push("nvidia-smi is not on PATH: is the NVIDIA driver installed?");
  else if ((rc === "124" || rc === "137") && smiTimeoutS !== null)
    problems.push(
      `nvidia-smi --query-gpu did not answer within ${smiTimeoutS} s and was killed: a hung driver or GPU? Check nvidia-smi and the kernel log on the node [COMMAND_TIMEOUT]`,
    );
  else if (rc !== "0")
    problems.push(
      `nvidia-smi failed (exit ${rc}): ${(kv.get("gpu") ?? []).join(" ").slice(0, 200)}`,
    );
  else {
    for (const g of kv.get("gpu") ?? []) {
      const f = g.split(",").map((s) => s.trim());
      if (f.length < 6 || !/^\d+$/.test(f[0]!)) continue;
      driver = f[3]!;
      const migCapable = f[4] !== "[N/A]" && f[4] !== "[Not Supported]";
      gpus.push({
        index: Number(f[0]),
        name: f[1]!,
        uuid: f[2]!,
        migCurrent: f[4]!,
        migPending: f[5]!,
        migCapable,
      });
    }
    if (gpus.length === 0) problems.push("nvidia-smi lists no GPU");
  }
  return { gpus, driver };
}

const majorMinor = (v: string): [number, number] | null => {
  const m = /^(\d+)\.(\d+)/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2])] : null;
};

/**
 * The nvcc the workloads would be built with against the driver's CUDA. A newer major version
 * cannot run at all on the driver ("CUDA driver version is insufficient for CUDA runtime
 * version"): not ready, with the fix. A newer minor of the same major runs through CUDA's minor
 * version compatibility, since the build emits SASS for the node's own GPUs (no PTX to JIT):
 * a warning. An unknown driver CUDA is a warning too (nothing to compare). A newer major with
 * the forward-compatibility libcuda in that toolkit's compat/ folder (`compat`, the cuda-compat
 * package; data-center GPUs only) runs through it: reported as a warning, not blocking. Pure.
 */
export function cudaMismatch(
  nvcc: string,
  driverCuda: string | null,
  compat: string | null = null,
): { blocks: boolean; message: string } | null {
  const n = majorMinor(nvcc);
  if (!n) return null;
  const d = driverCuda ? majorMinor(driverCuda) : null;
  if (!d)
    return {
      blocks: false,
      message: `nvcc ${nvcc}: the driver's CUDA version could not be read (nvidia-smi's banner), so whether its builds run here is unknown`,
    };
  const fix = `install a CUDA toolkit of release ${d[0]}.${d[1]} or older with its nvcc first on the node's PATH (the build takes PATH's nvcc, then $CUDA_HOME/bin, /usr/local/cuda/bin), or NVIDIA's forward-compatibility package cuda-compat-${n[0]}-${n[1]} (data-center GPUs), or a driver whose CUDA is ${nvcc} or newer`;
  if (n[0] > d[0] && compat)
    return {
      blocks: false,
      message: `nvcc ${nvcc} is newer than the driver's CUDA ${driverCuda}: its builds run through the forward-compatibility libraries in ${compat} (data-center GPUs only; they must be on LD_LIBRARY_PATH or in the loader's cache)`,
    };
  if (n[0] > d[0])
    return {
      blocks: true,
      message: `nvcc ${nvcc} builds for CUDA ${nvcc}, but the driver runs CUDA ${driverCuda} at most: the built-in workloads built with it cannot start here ("CUDA driver version is insufficient for CUDA runtime version"); ${fix}`,
    };
  if (n[0] === d[0] && n[1] > d[1])
    return {
      blocks: false,
      message: `nvcc ${nvcc} is newer than the driver's CUDA ${driverCuda}: the workloads run through CUDA's minor version compatibility (they are built for this node's GPUs, no PTX JIT), but newer CUDA APIs would fail; to be safe, ${fix}`,
    };
  return null;
}

export async function doctorCommand(
  o: NodeOptions & { json?: boolean; timeout: number },
  io: Out,
): Promise<number> {
  const { nodes } = loadSelected(o);
  const groups = intendedGroups(nodes, false);
  const runId = newRunId();
  // nvidia-smi gets half of the node's time, so that the rest of the probe still reports.
  const smiTimeoutS = Math.max(1, Math.floor(o.timeout / 2));
  const results = await fanOut(nodes, { runId, attempts: 1 }, async (t) => {
    const started = Date.now();
    const probe = await probeNode(t, o.timeout, smiTimeoutS);
    // A node whose nvidia-smi did not answer has no layout to read.
    if (probe.timedOut)
      return { ...probe, blockers: null, readError: null, layout: null, toolkit: null };
    // The rest side by side: each read is a login, which a site's shell start-up files (modules,
    // conda, quota messages) make cost seconds, and none of them needs another's answer.
    const [ready, layout, toolkit] = await Promise.all([
      readinessOf(t, probe.out, o.timeout * 1000 - (Date.now() - started)),
      intendedState(t, groups),
      toolkitState(t, o.timeout * 1000),
    ]);
    return { ...probe, ...ready, layout, toolkit };
  });
  const report: DoctorNode[] = results.map((r) => {
    const base = { name: r.node.name, host: r.node.host, port: r.node.port };
    if (r.error !== undefined) return unreachable(base, r.error);
    const v = r.value!;
    const probed = withProbeTimeout(
      interpretProbe(r.node, v.out, smiTimeoutS),
      v.timedOut,
      o.timeout,
    );
    if (v.readError)
      probed.problems.push(`the interlocks' reads failed, so readiness is unknown: ${v.readError}`);
    const notReady = v.blockers ?? [];
    probed.warnings.push(...layoutWarnings(r.node.name, v.layout));
    probed.warnings.push(...toolkitWarnings(v.toolkit, probed.driverCuda));
    return {
      ...base,
      reachable: true,
      connectMs: r.connectMs ?? null,
      loginMs: v.loginMs,
      hostKey: "ok",
      ...probed,
      layout: v.layout,
      toolkit: v.toolkit,
      ready: v.blockers !== null && probed.problems.length === 0 && notReady.length === 0,
      notReady,
    };
  });
  if (o.json) io.out(JSON.stringify({ nodes: report }, null, 2));
  else printDoctor(report, io);
  return report.some((n) => !n.ready) ? 2 : 0;
}

/** One node's probe: the driver, the tools, the login's own time. */
async function probeNode(t: Transport, timeoutS: number, smiTimeoutS: number) {
  const r = await t.exec({ shell: probe(smiTimeoutS) }, { timeoutMs: timeoutS * 1000 });
  return { out: r.stdout, timedOut: r.timedOut, loginMs: r.loginMs ?? null };
}

/** Where nvidia-smi answered, the interlocks' own reads (a hung driver is reported by the probe
 * already), within what is left of the node's deadline. */
async function readinessOf(t: Transport, probeOut: string, leftMs: number) {
  let blockers: Blocker[] | null = null;
  let readError: string | null = null;
  if (/^nvsmi_rc=0$/m.test(probeOut) && leftMs > 0) {
    try {
      blockers = await readReadiness(t, t.node, leftMs);
    } catch (e) {
      readError = describeError(e);
    }
  }
  return { blockers, readError };
}

/** A node the doctor could not log in to: why, and its host key's state where that was it. */
function unreachable(base: Pick<DoctorNode, "name" | "host" | "port">, error: unknown): DoctorNode {
  const code = isSlicecheckError(error) ? error.code : "INTERNAL";
  const hostKey =
    code === "HOST_KEY_UNKNOWN"
      ? "unknown"
      : code === "HOST_KEY_CHANGED"
        ? "changed"
        : code === "HOST_KEY_REVOKED"
          ? "revoked"
          : null;
  return {
    ...base,
    reachable: false,
    connectMs: null,
    loginMs: null,
    hostKey: hostKey as DoctorNode["hostKey"],
    user: null,
    sudo: null,
    driver: null,
    driverCuda: null,
    gpus: [],
    nvcc: null,
    gpuBurn: false,
    allReducePerf: false,
    dmesg: null,
    problems: [describeError(error)],
    warnings: [],
    ready: false,
    notReady: [],
    layout: null,
    toolkit: null,
  } satisfies DoctorNode;
}

/** A probe killed at its deadline reported only what it had printed: say so, once. */
function withProbeTimeout<T extends { problems: string[] }>(p: T, timedOut: boolean, s: number): T {
  if (timedOut)
    p.problems.push(
      `the probe did not finish within ${s} s and was killed; what it had not reached is unknown (raise --timeout, or check the node for a hung command) [COMMAND_TIMEOUT]`,
    );
  return p;
}

/** A node's error as one line with its stable code, for people and for scripts alike. */
export function describeError(e: unknown): string {
  if (isSlicecheckError(e)) return `${e.message} [${e.code}]`;
  return e instanceof Error ? e.message : String(e);
}

const BLOCKS: Record<Blocker["blocks"], string> = {
  apply: "apply (a MIG layout)",
  isolation: "the isolation suite",
};

function printDoctor(report: DoctorNode[], io: Out): void {
  const rows = [
    [
      "NODE",
      "SSH",
      "LOGIN",
      "HOST KEY",
      "USER",
      "SUDO",
      "DRIVER",
      "GPUS",
      "MIG",
      "NVCC",
      "GPU_BURN",
      "NCCL",
      "DMESG",
      "LAYOUT",
      "CTK",
      "CDI",
      "RUNTIME",
      "STATUS",
      "READY",
    ],
  ];
  for (const n of report) {
    const mig = n.gpus.length
      ? `${n.gpus.filter((g) => g.migCurrent === "Enabled").length}/${n.gpus.length} on`
      : "-";
    const names = [...new Set(n.gpus.map((g) => g.name))].join("+");
    rows.push([
      n.name,
      n.reachable ? `ok ${n.connectMs ?? "?"} ms` : "FAIL",
      n.loginMs === null ? "-" : `${n.loginMs} ms`,
      n.hostKey ?? "-",
      n.user ?? "-",
      n.sudo ?? "-",
      n.driver ?? "-",
      n.gpus.length ? `${n.gpus.length}x ${names}` : "-",
      mig,
      n.nvcc ?? "-",
      n.gpuBurn ? "yes" : "-",
      n.allReducePerf ? "yes" : "-",
      n.dmesg ?? "-",
      n.layout ? n.layout.status : "-",
      ...toolkitColumns(n.toolkit),
      n.problems.length ? "PROBLEM" : n.warnings.length ? "warn" : "ok",
      n.ready ? "ready" : "NOT READY",
    ]);
  }
  io.out(table(rows));
  for (const n of report) {
    for (const p of n.problems) io.out(`  ${n.name}: problem: ${p}`);
    for (const w of n.warnings) io.out(`  ${n.name}: warning: ${w}`);
    for (const b of n.notReady)
      io.out(`  ${n.name}: not ready: ${BLOCKS[b.blocks]} would refuse: ${b.message}`);
    io.out(
      n.ready
        ? `${n.name}: ready`
        : `${n.name}: not ready${n.notReady.length ? `: ${[...new Set(n.notReady.map((b) => BLOCKS[b.blocks]))].join(" and ")} would refuse (above)` : n.problems.length ? ": see the problems above" : ""}`,
    );
  }
}
