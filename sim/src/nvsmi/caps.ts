// The MIG capability device minors of a simulated node: `/proc/driver/nvidia-caps/mig-minors`
// as the driver publishes it, one line per `gpu<G>/gi<GI>[/ci<CI>]/access` and its minor under
// /dev/nvidia-caps (mig-reference.md: "GI/CI IDs are also the keys in
// /proc/driver/nvidia-caps/mig-minors"). A real site's gres.conf names MIG instances by those
// device files (`File=/dev/nvidia-caps/nvidia-cap22`), so the slurm suite's probe maps a File
// back to its GI/CI through this file, on a real node and on a simulated one alike.
//
// The references hold no capture of the file, so the numbering here is this simulation's
// choice: `config 1`, `monitor 2`, then per GPU 0..31 and GI 0..14 the GI's own access followed
// by its CIs 0..7. The probe reads the file and never computes a minor itself, so nothing
// depends on that order being the driver's.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const GPUS = 32;
const GIS = 15;
const CIS = 8;

/** The minor of `gpu<gpu>/gi<gi>/ci<ci>/access` (or the GI's own access when ci is null). */
export function migMinor(gpu: number, gi: number, ci: number | null): number {
  return 3 + gpu * GIS * (1 + CIS) + gi * (1 + CIS) + (ci === null ? 0 : 1 + ci);
}

export function migMinorsText(): string {
  const lines = ["config 1", "monitor 2"];
  for (let g = 0; g < GPUS; g++)
    for (let i = 0; i < GIS; i++) {
      lines.push(`gpu${g}/gi${i}/access ${migMinor(g, i, null)}`);
      for (let c = 0; c < CIS; c++) lines.push(`gpu${g}/gi${i}/ci${c}/access ${migMinor(g, i, c)}`);
    }
  return `${lines.join("\n")}\n`;
}

/** The node's proc root (what SLICECHECK_PROC points a session at): its mig-minors written. */
export function writeProcRoot(nodeDir: string): string {
  const root = join(nodeDir, "proc");
  const dir = join(root, "driver", "nvidia-caps");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "mig-minors"), migMinorsText());
  return root;
}
