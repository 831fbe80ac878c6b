// The simulated `enroot start [options] [--] NAME [COMMAND] [ARG...]` (NVIDIA/enroot
// doc/cmd/start.md): options -e/--env KEY[=VAL], -m/--mount FSTAB (colon-separated fstab fields),
// -w/--rw, -r/--root; the GPU given by the 98-nvidia.sh hook (conf/hooks/98-nvidia.sh) as it
// reads NVIDIA_VISIBLE_DEVICES and NVIDIA_REQUIRE_*; the command runs as a process of the node
// with the container's environment, fenced to the devices the hook gave (./runtime.ts exec).
import { existsSync } from "node:fs";
import { readState, type SimState } from "../nvsmi/state.js";
import { allDevices, resolveDevice } from "./devices.js";
import { dataPath, fail, type Io } from "./enroot-common.js";
import { inspectOf, readContainers, recordStart, type SimImage } from "./images.js";
import { requirementError, unsatisfied } from "./require.js";
import { exec, SIM_FACTS, START_COST_S } from "./runtime.js";

interface StartArgs {
  env: Record<string, string>;
  mounts: string[];
  name: string;
  command: string[];
}

/** --conf and --rc run scripts of the host and of the container: not simulated. */
const REFUSED = new Set(["-c", "--conf", "--rc"]);

function parseStart(args: string[]): StartArgs | string {
  const r: StartArgs = { env: {}, mounts: [], name: "", command: [] };
  let k = 0;
  for (; k < args.length; k++) {
    const a = args[k]!;
    if (a === "--") {
      k++;
      break;
    }
    if (!a.startsWith("-")) break;
    if (a === "-w" || a === "--rw" || a === "-r" || a === "--root") continue;
    const eq = a.startsWith("--") ? a.indexOf("=") : -1;
    const flag = eq > 0 ? a.slice(0, eq) : a;
    if (REFUSED.has(flag)) return `${flag} is not simulated`;
    if (!["-e", "--env", "-m", "--mount"].includes(flag)) return `Invalid option: ${a}`;
    const v = eq > 0 ? a.slice(eq + 1) : args[++k];
    if (v === undefined) return `Invalid argument: ${flag} needs a value`;
    if (flag === "-m" || flag === "--mount") r.mounts.push(v);
    else {
      // `--env KEY` alone exports the host's value (start.md: KEY[=VAL]).
      const i = v.indexOf("=");
      const key = i > 0 ? v.slice(0, i) : v;
      const val = i > 0 ? v.slice(i + 1) : process.env[v];
      if (val !== undefined) r.env[key] = val;
    }
  }
  r.name = args[k] ?? "";
  r.command = args.slice(k + 1);
  return r.name ? r : "Usage: enroot start [options] [--] NAME|IMAGE [COMMAND] [ARG...]";
}

/** The image's environment (what import writes to /etc/environment), then --env's. */
function containerEnv(image: SimImage, env: Record<string, string>): Record<string, string> {
  const own = (inspectOf(image) as { Config: { Env: string[] } }).Config.Env;
  const out: Record<string, string> = {};
  for (const e of own) out[e.slice(0, e.indexOf("="))] = e.slice(e.indexOf("=") + 1);
  delete out.PATH;
  return { ...out, ...env };
}

/** The devices 98-nvidia.sh gives, or its refusal. A NVIDIA_* variable set in the hook's own
 * environment (the host's) wins over the container's (`[ -v "${key}" ] || export`). */
function hookDevices(
  state: SimState,
  env: Record<string, string>,
  seesAll: boolean,
): string[] | { refused: string } {
  const nv = (key: string) => process.env[key] ?? env[key];
  const visible = nv("NVIDIA_VISIBLE_DEVICES");
  if (visible === undefined || visible === "void") return []; // the hook exits: no GPU
  if (state.noToolkit)
    return {
      refused:
        "Command not found: nvidia-container-cli, see https://github.com/NVIDIA/libnvidia-container",
    };
  const fence: string[] = [];
  for (const d of visible === "none" ? [] : visible.split(",")) {
    const hit = resolveDevice(state, d.trim());
    if (!hit) return { refused: `nvidia-container-cli: device error: ${d}: unknown device` };
    fence.push(...hit);
  }
  const first = nv("NVIDIA_DISABLE_REQUIRE")
    ? null
    : unsatisfied(nv("NVIDIA_REQUIRE_CUDA") ?? "", SIM_FACTS(state));
  if (first) return { refused: requirementError(first) };
  return seesAll ? allDevices(state) : [...new Set(fence)];
}

/** A mount whose source is missing fails the start, unless its options say nofail (fstab(5)). */
function badMount(m: string): string | null {
  const [src, dst, , opts] = m.split(":");
  if (!src || !dst) return `Invalid argument: --mount ${m}`;
  if (existsSync(src) || /(^|,)nofail(,|$)/.test(opts ?? "")) return null;
  return `Failed to mount: ${src} on ${dst}: No such file or directory`;
}

export async function enrootStart(stateDir: string, args: string[], io: Io): Promise<number> {
  const parsed = parseStart(args);
  if (typeof parsed === "string") return fail(io, parsed);
  const c = readContainers(stateDir);
  // Starting a .sqsh directly needs fuse-overlayfs and squashfuse on the host (start.md); the
  // simulated node has neither, so only containers made by `enroot create` start.
  const made = (c.enroot ?? []).find((x) => x.name === parsed.name);
  const image = made ? c.images.find((i) => i.name === made.image) : undefined;
  if (!image) return fail(io, `No such file or directory: ${dataPath(parsed.name)}`);
  const env = containerEnv(image, parsed.env);
  const state = readState(stateDir);
  const refuse = (reason: string, devices: string[]) => {
    recordStart(stateDir, {
      runtime: "enroot",
      image: image.name,
      devices,
      outcome: "refused",
      reason,
      atMs: Date.now(),
    });
    return fail(io, reason);
  };
  const mount = parsed.mounts.map(badMount).find((x) => x !== null);
  if (mount) return refuse(mount, []);
  const given = hookDevices(state, env, c.seesAll === true);
  if (!Array.isArray(given)) return refuse(given.refused, []);
  await new Promise((r) => setTimeout(r, START_COST_S * 1000));
  recordStart(stateDir, {
    runtime: "enroot",
    image: image.name,
    devices: given,
    outcome: "started",
    atMs: Date.now(),
  });
  // NVIDIA_VISIBLE_DEVICES inside is what the hook gave (the image's `all` would mislead).
  const inner = given.length ? { ...env, NVIDIA_VISIBLE_DEVICES: given.join(",") } : env;
  return exec(
    { devices: [], env: inner, image: image.name, command: parsed.command },
    image,
    stateDir,
    given,
  );
}
