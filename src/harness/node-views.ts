// The nodes as suite files see them (`run.nodes`), built from each session's discovery: GPUs
// with their instances and titles, and GPUs lost at discovery still named, so their tests fail.

import type { Instance } from "../workloads/instances.js";
import { instanceLabel } from "../workloads/node-run.js";
import type { SuiteGpu, SuiteInstance, SuiteNode } from "./api-types.js";
import type { NodeSession } from "./session.js";

export function instanceTitle(
  i: Pick<Instance, "profile" | "placement" | "gpuInstanceId">,
): string {
  if (i.gpuInstanceId === null) return "whole GPU";
  return `${i.profile} at ${i.placement ?? "?"}`;
}

/** The nodes as suites see them, built from each session's discovery. */
export function nodeViews(sessions: readonly NodeSession[]): Map<string, SuiteNode> {
  const out = new Map<string, SuiteNode>();
  for (const s of sessions) {
    const inv = s.discovered;
    const gpus = new Map<number, SuiteGpu>();
    const instances: SuiteInstance[] = [];
    for (const i of inv?.instances ?? []) {
      let g = gpus.get(i.gpu);
      if (!g) {
        g = {
          node: s.node.name,
          index: i.gpu,
          name: i.gpuName,
          uuid: i.gpuUuid,
          migEnabled: i.gpuInstanceId !== null,
          instances: [],
          title: `GPU ${i.gpu} (${i.gpuName})`,
        };
        gpus.set(i.gpu, g);
      }
      let title = instanceTitle(i);
      // Two compute instances of one profile in one GPU instance share profile and placement.
      const same = g.instances.filter((x) => x.title === title || x.title.startsWith(`${title} #`));
      if (same.length > 0) title = `${title} #${same.length + 1}`;
      const view: SuiteInstance = { ...i, label: instanceLabel(i), title };
      g.instances.push(view);
      instances.push(view);
    }
    // A GPU in MIG mode without instances runs no workload, but is a GPU of the node all the
    // same: the layout suite must say it is not in its layout, health must read it.
    for (const e of inv?.empty ?? []) {
      if (gpus.has(e.index)) continue;
      gpus.set(e.index, {
        node: s.node.name,
        index: e.index,
        name: e.name,
        uuid: e.uuid,
        migEnabled: true,
        instances: [],
        title: `GPU ${e.index} (${e.name})`,
      });
    }
    // A GPU lost at discovery still has its tests (the health suite fails it by name); the
    // GPUs still on the bus are tested as usual.
    for (const l of inv?.lost ?? []) {
      if (l.index === null || gpus.has(l.index)) continue;
      gpus.set(l.index, {
        node: s.node.name,
        index: l.index,
        name: "lost",
        uuid: "",
        migEnabled: false,
        instances: [],
        title: `GPU ${l.index} (lost, ${l.pciBusId})`,
        lost: { pciBusId: l.pciBusId, line: l.line },
      });
    }
    out.set(s.node.name, {
      name: s.node.name,
      driver: inv?.driver ?? null,
      cuda: inv?.cuda ?? null,
      gpus: [...gpus.values()].sort((a, b) => a.index - b.index),
      instances,
      slurmNode: s.node.slurmNode,
      containers: { images: s.node.containers ?? {}, runtime: s.node.containerRuntime ?? null },
      error: s.error ? `[${s.error.code}] ${s.error.message}` : null,
      refusal: null,
      exec: async (command, o = {}) => {
        const r = await s.exec("shell" in command ? { shell: command.shell } : { argv: command }, {
          timeoutMs: (o.timeoutS ?? 120) * 1000,
          env: o.env,
          privileged: o.privileged,
        });
        return { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr };
      },
    });
  }
  return out;
}
