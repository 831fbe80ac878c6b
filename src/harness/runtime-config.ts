// The node's container runtime configuration, read in two round trips: which runtime (the
// inventory's, else the first of podman, docker, containerd, enroot on the PATH) and what it
// reads (docker info's Runtimes and CDISpecDirs, podman's containers.conf files, `containerd
// config dump`), then the CDI specs in those folders with their kind. Judged by
// verdicts/runtime-config.ts. Used by doctor (its transport) and by the containers suite (its
// node's exec), hence an `exec` function rather than a transport.

import {
  type DockerRuntimeInfo,
  parseContainerdDump,
  parseDockerInfo,
  podmanCdiDirs,
} from "../nvsmi/runtime-config.js";
import { quote } from "../util/shell.js";
import { CDI_SPEC_DIRS } from "../verdicts/cdi.js";
import {
  judgeRuntimeConfig,
  type RuntimeConfigVerdict,
  type RuntimeInput,
  type SpecFile,
} from "../verdicts/runtime-config.js";

export type ShellExec = (shell: string) => Promise<{ exitCode: number | null; stdout: string }>;

/** Detected in this order when the inventory names none (the containers suite's order, then
 * containerd, which a Kubernetes node has without either). */
export const PROBED_RUNTIMES = ["podman", "docker", "containerd", "enroot"] as const;

/** SLICECHECK_CDI_DIRS and SLICECHECK_CONTAINERS_CONF stand for /etc/cdi /var/run/cdi and the
 * containers.conf files on a simulated node (as SLICECHECK_PROC stands for /proc). */
export function runtimeProbe(named: string | null): string {
  const pick = named
    ? `command -v ${quote(named)} >/dev/null 2>&1 && rt=${quote(named)}`
    : `for r in ${PROBED_RUNTIMES.join(" ")}; do command -v "$r" >/dev/null 2>&1 && { rt=$r; break; }; done`;
  const out = (k: string, cmd: string) =>
    `v=$(${cmd} 2>&1); echo "${k}_rc=$?"; printf '%s\\n' "$v" | sed 's/^/${k}=/'`;
  return [
    `rt=; ${pick}`,
    'echo "runtime=$rt"',
    `echo "cdi_default=\${SLICECHECK_CDI_DIRS:-${CDI_SPEC_DIRS.join(" ")}}"`,
    'case "$rt" in',
    `docker) ${out("runtimes", "docker info --format '{{json .Runtimes}}'")}; ${out("cdidirs", "docker info --format '{{json .CDISpecDirs}}'")}; echo "hook=$(command -v nvidia-container-runtime-hook)";;`,
    `podman) for f in \${SLICECHECK_CONTAINERS_CONF:-/usr/share/containers/containers.conf /etc/containers/containers.conf /etc/containers/containers.conf.d/*.conf $HOME/.config/containers/containers.conf}; do [ -f "$f" ] && { echo "conf_file=$f"; sed 's/^/conf=/' "$f"; }; done;;`,
    `containerd) ${out("dump", "containerd config dump")};;`,
    "esac",
  ].join("\n");
}

/** Each spec file in `dirs` with its `kind` (YAML `kind: …` or JSON `"kind": "…"`). */
export function specKindsProbe(dirs: readonly string[]): string {
  return `for d in ${dirs.map(quote).join(" ")}; do for f in "$d"/*.yaml "$d"/*.yml "$d"/*.json; do [ -f "$f" ] || continue; k=$(grep -o '"\\{0,1\\}kind"\\{0,1\\}[[:space:]]*:[[:space:]]*"\\{0,1\\}[A-Za-z0-9./_-]*' "$f" | head -n 1 | sed 's/.*:[[:space:]]*"\\{0,1\\}//'); echo "spec=$f $k"; done; done`;
}

function lines(out: string): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const line of out.split("\n")) {
    const i = line.indexOf("=");
    if (i <= 0) continue;
    const k = line.slice(0, i);
    m.set(k, [...(m.get(k) ?? []), line.slice(i + 1)]);
  }
  return m;
}

export function parseSpecKinds(out: string): SpecFile[] {
  return (lines(out).get("spec") ?? []).map((l) => {
    const sp = l.lastIndexOf(" ");
    return { file: l.slice(0, sp), kind: l.slice(sp + 1) };
  });
}

type Partial =
  | { input: RuntimeInput; dirs: null }
  | { dirs: string[]; make: (specs: SpecFile[]) => RuntimeInput };

/** The first probe's answers: the runtime's input to the judge, or the folders whose specs it
 * still needs. Throws where an answer cannot be read. */
export function interpretRuntimeProbe(out: string): Partial {
  const m = lines(out);
  const text = (k: string) => (m.get(k) ?? []).join("\n");
  const rt = text("runtime");
  const defaults = text("cdi_default").split(/\s+/).filter(Boolean);
  if (rt === "") return { input: { runtime: null }, dirs: null };
  if (rt === "enroot") return { input: { runtime: "enroot" }, dirs: null };
  if (rt === "docker") {
    if (text("runtimes_rc") !== "0")
      throw new Error(
        `docker info failed (exit ${text("runtimes_rc")}): ${text("runtimes").slice(0, 200)}`,
      );
    const info: DockerRuntimeInfo = parseDockerInfo(
      text("runtimes"),
      text("cdidirs_rc") === "0" ? text("cdidirs") : null,
    );
    const dirs = [...new Set([...(info.cdiSpecDirs ?? []), ...defaults])];
    const hook = text("hook") || null;
    return { dirs, make: (specs) => ({ runtime: "docker", info, hook, specs }) };
  }
  if (rt === "podman") {
    const confs: string[] = [];
    for (const line of out.split("\n")) {
      if (line.startsWith("conf_file=")) confs.push("");
      else if (line.startsWith("conf=") && confs.length)
        confs[confs.length - 1] += `${line.slice(5)}\n`;
    }
    const pd = podmanCdiDirs(confs, defaults);
    return {
      dirs: [...new Set([...pd, ...defaults])],
      make: (specs) => ({ runtime: "podman", dirs: pd, specs }),
    };
  }
  if (rt === "containerd") {
    if (text("dump_rc") !== "0")
      throw new Error(
        `containerd config dump failed (exit ${text("dump_rc")}): ${text("dump").slice(0, 200)}`,
      );
    const cri = parseContainerdDump(text("dump"), defaults);
    return {
      dirs: [...new Set([...cri.cdiSpecDirs, ...defaults])],
      make: (specs) => ({ runtime: "containerd", cri, specs }),
    };
  }
  throw new Error(`the runtime ${rt} is not one this check reads`);
}

/** The node's runtime configuration judged; a probe that fails is `unread`, with why. */
export async function readRuntimeConfig(
  exec: ShellExec,
  named: string | null,
): Promise<RuntimeConfigVerdict> {
  try {
    const first = await exec(runtimeProbe(named));
    const p = interpretRuntimeProbe(first.stdout);
    if (p.dirs === null) return judgeRuntimeConfig(p.input);
    const specs = parseSpecKinds((await exec(specKindsProbe(p.dirs))).stdout);
    return judgeRuntimeConfig(p.make(specs));
  } catch (e) {
    return {
      runtime: named,
      status: "unread",
      paths: [],
      message: `the container runtime's configuration could not be read: ${e instanceof Error ? e.message : String(e)}`,
      fix: null,
    };
  }
}
