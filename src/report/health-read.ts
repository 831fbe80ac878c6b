// The `health` suite's reader: dmesg at the run's start, and at its end nvidia-smi's health
// query and dmesg again, on every node at once. The verdicts are src/verdicts/health.ts.
import type { NodeSpec } from "../inventory/types.js";
import { fanOut } from "../transport/open.js";
import type { Transport } from "../transport/types.js";
import { HEALTH_QUERY } from "../verdicts/health.js";

async function dmesg(t: Transport): Promise<string[] | null> {
  const r = await t.exec({ argv: ["dmesg"] }, { timeoutMs: 30_000 });
  return r.exitCode === 0 ? r.stdout.split("\n").filter(Boolean) : null;
}

/** dmesg of every node; null for a node whose kernel log could not be read. */
export async function readDmesgAll(
  nodes: readonly NodeSpec[],
  runId: string,
): Promise<Map<string, string[] | null>> {
  const res = await fanOut(nodes, { runId }, dmesg);
  return new Map(res.map((r) => [r.node.name, r.value ?? null]));
}

export interface HealthRead {
  smiExit: number | null;
  smiOutput: string;
  dmesg: string[] | null;
}

export async function readHealthAll(
  nodes: readonly NodeSpec[],
  runId: string,
): Promise<Map<string, HealthRead>> {
  const res = await fanOut(nodes, { runId }, async (t): Promise<HealthRead> => {
    const smi = await t.exec(
      { argv: ["nvidia-smi", `--query-gpu=${HEALTH_QUERY}`, "--format=csv,noheader,nounits"] },
      { timeoutMs: 60_000 },
    );
    return {
      smiExit: smi.exitCode,
      smiOutput: smi.exitCode === 0 ? smi.stdout : `${smi.stdout}${smi.stderr}`,
      dmesg: await dmesg(t),
    };
  });
  return new Map(
    res.map((r) => [
      r.node.name,
      r.value ?? { smiExit: null, smiOutput: String(r.error), dmesg: null },
    ]),
  );
}
