// What the simulated node's `lsmod` and `pgrep` answer, as functions of the node's state folder:
// the tools' own entries (lsmod.ts, pgrep.ts) print them, and so does the cluster's resident
// simulator (../resident/server.ts), which must answer exactly as they do.
import { DAEMON_CLIENTS, fakePid, MODULE_CLIENTS, nodeClients } from "./clients.js";

/** `lsmod`: the NVIDIA driver's modules, with nvidia_drm only while a GPU "holds" it (state
 * `holders`), in lsmod's column layout. */
export function lsmodText(stateDir: string | undefined): string {
  const drm = stateDir ? nodeClients(stateDir).includes("nvidia_drm") : false;
  const rows: [string, number, string][] = [
    ...(drm ? ([["nvidia_drm", 94208, "0"]] as [string, number, string][]) : []),
    ["nvidia_modeset", 1556480, drm ? "1 nvidia_drm" : "0"],
    ["nvidia_uvm", 6619136, "0"],
    ["nvidia", 56213504, "2 nvidia_uvm,nvidia_modeset"],
  ];
  const lines = ["Module                  Size  Used by"];
  for (const [m, size, used] of rows)
    lines.push(`${m.padEnd(19)}${String(size).padStart(9)}  ${used}`);
  return `${lines.join("\n")}\n`;
}

/**
 * `pgrep ARGS` for a GPU daemon the node simulates (clients.ts): its exit code and stdout from the
 * state. null for every other pattern, which goes to the host's real pgrep unchanged.
 */
export function simulatedPgrep(
  args: string[],
  stateDir: string | undefined,
): { code: number; stdout: string } | null {
  const pattern = [...args].reverse().find((a) => !a.startsWith("-"));
  if (!stateDir || pattern === undefined) return null;
  const exact = args.includes("-x");
  const list = args.includes("-l") || args.includes("-a");
  const matches = (d: string) => (exact ? d === pattern : d.includes(pattern));
  const held = nodeClients(stateDir);
  if (![...DAEMON_CLIENTS, ...held].some(matches)) return null;
  const hits = held.filter((h) => !MODULE_CLIENTS.includes(h) && matches(h));
  const stdout = hits.map((h) => (list ? `${fakePid(h)} ${h}\n` : `${fakePid(h)}\n`)).join("");
  return { code: hits.length > 0 ? 0 : 1, stdout };
}
