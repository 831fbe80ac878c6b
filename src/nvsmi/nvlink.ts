// `nvidia-smi nvlink -s` (each GPU's links: `Link 3: 26.562 GB/s` or `Link 3: <inactive>`) and
// `nvidia-smi nvlink -e` (per link: `Link 0: Replay Errors: 0`, `Recovery Errors`, `CRC
// Errors`, a blank line between links). The GPU line is `GPU 0: NAME (UUID: GPU-…)`; the link
// lines are indented with a tab and a space. Lines a person put in a pasted excerpt (`...`,
// `[...]`) are skipped; any other line is an error.

import { parseError, significantLines } from "./text.js";

const GPU = /^GPU (\d+): (.+?)(?: \(UUID: ([^)]*)\))?\s*$/;
const STATUS = /^\s*Link (\d+): (?:(\d+(?:\.\d+)?) GB\/s|(<inactive>))\s*$/;
const COUNTER = /^\s*Link (\d+): ([A-Za-z][A-Za-z ]*?): (\d+|N\/A)\s*$/;
const ELLIPSIS = /^\s*(?:\.{3,}|\[\.\.\.\])\s*$/;
// Printed for a GPU none of whose links is up (Azure/azurehpc-health-checks#132 matches it).
const ALL_INACTIVE = /all links are inactive/i;

export interface NvlinkStatusGpu {
  index: number;
  name: string;
  uuid: string | null;
  /** Each link and its speed in GB/s; null where it is `<inactive>`. */
  links: { link: number; gbs: number | null }[];
  /** nvidia-smi said that none of this GPU's links is active. */
  allInactive: boolean;
}

export interface NvlinkStatusResult {
  gpus: NvlinkStatusGpu[];
}

export interface NvlinkErrorsGpu {
  index: number;
  name: string;
  uuid: string | null;
  /** Link → counter name (`Replay Errors`) → count; null where nvidia-smi printed N/A. */
  links: Record<number, Record<string, number | null>>;
}

export interface NvlinkErrorsResult {
  gpus: NvlinkErrorsGpu[];
}

function gpuOf(text: string) {
  const m = GPU.exec(text);
  return m ? { index: Number(m[1]), name: m[2]!, uuid: m[3] ?? null } : null;
}

export function parseNvlinkStatus(text: string): NvlinkStatusResult {
  const gpus: NvlinkStatusGpu[] = [];
  for (const l of significantLines(text)) {
    if (ELLIPSIS.test(l.text)) continue;
    const g = gpuOf(l.text);
    if (g) {
      gpus.push({ ...g, links: [], allInactive: false });
      continue;
    }
    const cur = gpus.at(-1);
    const s = STATUS.exec(l.text);
    if (cur && s) cur.links.push({ link: Number(s[1]), gbs: s[3] ? null : Number(s[2]) });
    else if (cur && ALL_INACTIVE.test(l.text)) cur.allInactive = true;
    else throw parseError("nvlink-status", l.no, "GPU N: NAME or Link N: X GB/s", l.text);
  }
  return { gpus };
}

export function parseNvlinkErrors(text: string): NvlinkErrorsResult {
  const gpus: NvlinkErrorsGpu[] = [];
  for (const l of significantLines(text)) {
    if (ELLIPSIS.test(l.text)) continue;
    const g = gpuOf(l.text);
    if (g) {
      gpus.push({ ...g, links: {} });
      continue;
    }
    const cur = gpus.at(-1);
    const c = COUNTER.exec(l.text);
    if (!cur || !c)
      throw parseError("nvlink-errors", l.no, "GPU N: NAME or Link N: COUNTER: VALUE", l.text);
    const link = Number(c[1]);
    cur.links[link] ??= {};
    cur.links[link][c[2]!] = c[3] === "N/A" ? null : Number(c[3]);
  }
  return { gpus };
}
