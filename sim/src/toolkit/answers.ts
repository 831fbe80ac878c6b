// What the simulated toolkit CLIs print that only reads the node: `nvidia-ctk --version` and
// `nvidia-container-cli info`. Their entries (ctk.ts, container-cli.ts) print these, and so does
// the cluster's resident simulator (../resident/server.ts), which must answer exactly as they do.
import { COMPUTE_CAP } from "../nvsmi/fmt/query.js";
import type { SimState } from "../nvsmi/state.js";
import { viewOf } from "../nvsmi/view.js";

export const SIM_CTK_VERSION = "1.17.8";

/** RECONSTRUCTED: the toolkit's banner ("NVIDIA Container Toolkit CLI version X", "commit: …");
 * the commit is a placeholder. */
export const CTK_VERSION_TEXT = `NVIDIA Container Toolkit CLI version ${SIM_CTK_VERSION}\ncommit: 0000000\n`;

/** `nvidia-container-cli info`: the driver and the CUDA version it runs, then one block per GPU,
 * labels padded to 15 columns as libnvidia-container's src/cli/info.c prints them. */
export function containerCliInfo(state: SimState): string {
  const row = (k: string, v: string | number) => `${`${k}:`.padEnd(15)} ${v}`;
  const out = [row("NVRM version", state.driver), row("CUDA version", state.cuda)];
  for (const g of state.gpus) {
    if (g.lost) continue;
    const v = viewOf(state, g);
    const cc = v.architecture ? COMPUTE_CAP[v.architecture] : "8.9";
    out.push(
      "",
      row("Device Index", g.index),
      row("Device Minor", g.index),
      row("Model", v.smiName),
      row("Brand", "Nvidia"),
      row("GPU UUID", g.uuid),
      row("Bus Location", g.pciBusId),
      row("Architecture", cc),
    );
  }
  return `${out.join("\n")}\n`;
}
