// The simulated enroot (issue 23): the CLI subset of NVIDIA/enroot doc/cmd/*.md that the
// containers suite and a site's scripts use: `version`, `import` (which needs a registry, and
// none is reachable from a simulated node), `create [--name NAME] IMAGE.sqsh`, `start`
// (./enroot-start.ts), `list [--fancy]`, `remove [--force] NAME…`. Squashfs images are the
// node's named .sqsh entries with their CUDA version (./images.ts); containers are names kept in
// the same containers.json, no root filesystem is unpacked. Errors as enroot prints them
// (`[ERROR] …`, exit 1).
import { basename, resolve } from "node:path";
import { dataPath, fail, type Io } from "./enroot-common.js";
import { enrootStart } from "./enroot-start.js";
import { isSqsh, readContainers, type SimImage, writeContainers } from "./images.js";

/** `enroot version` (version.md); the release is the one this model was read against. */
export const ENROOT_VERSION = "3.5.0";

/** Seconds `enroot create` takes to unpack an image. The references hold no measurement; 1 s is
 * a conservative figure for unsquashfs of a CUDA base image (~100 MB) on a local disk. */
export const CREATE_COST_S = 1;

export async function enrootMain(argv: string[], io: Io): Promise<number> {
  const stateDir = process.env.SLICECHECK_SIM_STATE;
  if (!stateDir) return fail(io, "enroot (simulated): SLICECHECK_SIM_STATE is not set");
  const [sub, ...rest] = argv;
  switch (sub) {
    case "version":
      io.out(`${ENROOT_VERSION}\n`);
      return 0;
    case "import":
      return importImage(rest, io);
    case "create":
      return create(stateDir, rest, io);
    case "start":
      return enrootStart(stateDir, rest, io);
    case "list":
      return list(stateDir, rest, io);
    case "remove":
      return remove(stateDir, rest, io);
    default:
      return fail(
        io,
        `Invalid argument: ${sub ?? "(none)"} (the simulated enroot knows version, import, create, start, list, remove)`,
      );
  }
}

/** A .sqsh of the node by its path (relative ones from the working directory, as a shell's). */
export function sqshOf(name: string): (i: SimImage) => boolean {
  const path = resolve(name);
  return (i) => isSqsh(i) && i.name === path;
}

/** import.md: docker:// pulls from a registry over HTTPS; a simulated node reaches none. */
function importImage(args: string[], io: Io): number {
  const uri = args.filter(
    (a, k) => !a.startsWith("-") && !["-o", "--output"].includes(args[k - 1] ?? ""),
  )[0];
  if (!uri?.startsWith("docker://")) return fail(io, `Invalid argument: ${uri ?? "(no URI)"}`);
  const ref = uri.slice("docker://".length).replace(/^[^@]*@/, "");
  const registry = ref.includes("#") ? ref.slice(0, ref.indexOf("#")) : "registry-1.docker.io";
  io.err(`[INFO] Querying registry for permission to pull repository ${ref.replace(/^.*#/, "")}\n`);
  io.err(`curl: (6) Could not resolve host: ${registry}\n`);
  return fail(io, `Could not reach ${registry}: the simulated node has no network`);
}

async function create(stateDir: string, args: string[], io: Io): Promise<number> {
  let name: string | null = null;
  const rest: string[] = [];
  for (let k = 0; k < args.length; k++) {
    const a = args[k]!;
    if (a === "-n" || a === "--name") name = args[++k] ?? "";
    else if (a.startsWith("--name=")) name = a.slice("--name=".length);
    else if (a === "--") {
      rest.push(...args.slice(k + 1));
      break;
    } else if (a.startsWith("-")) return fail(io, `Invalid option: ${a}`);
    else rest.push(a);
  }
  const file = rest[0];
  if (!file || rest.length > 1) return fail(io, "Usage: enroot create [options] [--] IMAGE");
  const c = readContainers(stateDir);
  const image = c.images.find(sqshOf(file));
  if (!image) return fail(io, `No such file or directory: ${file}`);
  const n = name ?? basename(file).replace(/\.sqsh$/, "");
  // create.md is silent on which names are valid; the conservative reading: a file name.
  if (!/^[A-Za-z0-9._+-]+$/.test(n)) return fail(io, `Invalid argument: ${n}`);
  if ((c.enroot ?? []).some((x) => x.name === n))
    return fail(io, `File already exists: ${dataPath(n)}`);
  await new Promise((r) => setTimeout(r, CREATE_COST_S * 1000));
  const now = readContainers(stateDir);
  writeContainers(stateDir, {
    ...now,
    enroot: [...(now.enroot ?? []), { name: n, image: image.name }],
  });
  return 0;
}

/** list.md: one name a line; --fancy a table (no process of a container is tracked: the
 * simulated start runs its command as a node process, so PID columns stay empty). */
function list(stateDir: string, args: string[], io: Io): number {
  const fancy = args.includes("-f") || args.includes("--fancy");
  const names = (readContainers(stateDir).enroot ?? []).map((x) => x.name);
  if (fancy)
    io.out(`${"NAME".padEnd(40)} SIZE  PID  STATE  STARTED  TIME  MNTNS  USERNS  COMMAND\n`);
  for (const n of names) io.out(fancy ? `${n.padEnd(40)} 120M\n` : `${n}\n`);
  return 0;
}

/** remove.md: without --force it asks for confirmation on the terminal; the simulated node has
 * none to answer, so nothing is removed without --force (the conservative reading). Names are
 * removed in order, stopping at the first that does not exist. remove.md is silent on a
 * container whose processes still run: not modelled (the suite removes after its workloads). */
function remove(stateDir: string, args: string[], io: Io): number {
  const force = args.includes("-f") || args.includes("--force");
  const names = args.filter((a) => !a.startsWith("-"));
  if (names.length === 0) return fail(io, "Usage: enroot remove [options] [--] NAME...");
  for (const n of names) {
    const c = readContainers(stateDir);
    if (!(c.enroot ?? []).some((x) => x.name === n))
      return fail(io, `No such file or directory: ${dataPath(n)}`);
    if (!force) {
      io.err(`Do you really want to delete ${dataPath(n)}? [y/N] \n`);
      continue;
    }
    writeContainers(stateDir, { ...c, enroot: (c.enroot ?? []).filter((x) => x.name !== n) });
  }
  return 0;
}
