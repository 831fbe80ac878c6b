// The containers suite's enroot steps on a node (their argv and readings: src/workloads/enroot.ts):
// one container per image per run (`enroot create --name sc-<run id>-<n> FILE.sqsh`; instances of
// one image start it side by side, as list.md's example shows one container with two processes,
// its root filesystem read-only unless --rw, start.md), the image's
// CUDA read inside it with no GPU given, and at the end every container the run asked for
// removed, whatever happened in between (the suite's `after`, which mocha runs after failed
// tests and after an interrupt too: the run's first interrupt stops workloads, not the suite).
import { containers, enroot, type SuiteNode } from "slicecheck/suite";

export interface EnrootImage {
  /** The image's CUDA as read inside its container; null when it printed none. */
  cuda: string | null;
  /** Why no container of it can run (a docker:// image, a failed create or read), or null. */
  problem: string | null;
  /** The container made of it: what `enroot start` is given. */
  container: string | null;
  /** Seconds `enroot create` took (unpacking the image: once per image, not per start). */
  createS: number | null;
  /** Its forward-compatibility libraries, listed in the same GPU-less start; null: unread. */
  compat: containers.CompatRead | null;
  compatProblem?: string | null;
}

/** The run's enroot containers: named once (unique across the run's nodes, in case they share an
 * ENROOT_DATA_PATH on a shared home), recorded before the create is asked for. */
export class EnrootLedger {
  private n = 0;
  private readonly byNode = new Map<string, string[]>();
  constructor(private readonly runId: string) {}

  next(node: string): string {
    const name = enroot.enrootName(this.runId, ++this.n);
    this.byNode.set(node, [...(this.byNode.get(node) ?? []), name]);
    return name;
  }

  /** Removes the node's containers: how many the run asked for, and what `enroot list` still
   * shows of them and why (null: none). */
  async removeAll(node: SuiteNode): Promise<{ created: number; left: string | null }> {
    const names = this.byNode.get(node.name) ?? [];
    this.byNode.delete(node.name);
    return { created: names.length, left: names.length ? await removeNames(node, names) : null };
  }
}

async function removeNames(node: SuiteNode, names: string[]): Promise<string | null> {
  const errors: string[] = [];
  // One call per name: enroot stops at the first name it cannot remove.
  for (const name of names) {
    const r = await node.exec(enroot.removeArgv(name), { timeoutS: 300 });
    if (r.exitCode !== 0) errors.push(`${name}: ${r.stderr.trim() || `exit ${r.exitCode}`}`);
  }
  // A name whose create failed is not there to remove: only what `list` still shows counts.
  const list = await node.exec(["enroot", "list"]);
  if (list.exitCode !== 0) return `${node.name}: enroot list: ${list.stderr.trim()}`;
  const left = enroot.listedNames(list.stdout).filter((n) => names.includes(n));
  return left.length
    ? `${node.name}: enroot containers left behind: ${left.join(", ")} (${errors.join("; ")}); remove them with \`enroot remove -f ${left.join(" ")}\``
    : null;
}

async function createAndRead(
  node: SuiteNode,
  ledger: EnrootLedger,
  image: string,
): Promise<EnrootImage> {
  const none = { cuda: null, container: null, createS: null, compat: null };
  const problem = enroot.enrootImageProblem(image);
  if (problem) return { ...none, problem };
  const name = ledger.next(node.name);
  const t0 = Date.now();
  const c = await node.exec(enroot.createArgv(name, image), { timeoutS: 600 });
  const createS = (Date.now() - t0) / 1000;
  if (c.exitCode !== 0)
    return {
      ...none,
      problem: `enroot create --name ${name} ${image}: ${c.stderr.trim() || `exit ${c.exitCode}`}`,
    };
  // No GPU for the read (NVIDIA_VISIBLE_DEVICES=void: the hook does nothing): an image too new
  // for the driver is judged by the suite before any container of it is given a GPU.
  const r = await node.exec(enroot.startArgv(name, "void", enroot.CUDA_READ));
  if (r.exitCode !== 0)
    return {
      ...none,
      createS,
      problem: `enroot start ${name} (reading its CUDA): ${r.stderr.trim() || `exit ${r.exitCode}`}`,
    };
  const compat = containers.compatOf(r.stdout);
  return {
    cuda: enroot.enrootImageCuda(r.stdout),
    problem: null,
    container: name,
    createS,
    compat,
    compatProblem: compat ? null : `enroot start ${name}: no listing of ${containers.COMPAT_DIR}`,
  };
}

/** Each distinct image's container and CUDA, one image after the other. */
export async function enrootImages(
  node: SuiteNode,
  ledger: EnrootLedger,
  images: Set<string>,
): Promise<Map<string, EnrootImage>> {
  const out = new Map<string, EnrootImage>();
  for (const image of images) out.set(image, await createAndRead(node, ledger, image));
  return out;
}
