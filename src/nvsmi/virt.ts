// The virtualization facts of `nvidia-smi -q` and `nvidia-smi vgpu -q`: per GPU (by bus id) its
// `Virtualization Mode` (NVML's names: None, Pass-Through, VGPU in a guest, Host VGPU on a host),
// the vGPU scheduler policy where one is shown, and a host's active vGPU count. The captures in
// the reference stop before the virtualization block (mig-reference.md §4: the `-q` layout past
// MIG Mode is a gap), so the reading is by key, wherever the line sits in the GPU's block.

export interface GpuVirtualization {
  pciBusId: string;
  /** null: the block was not printed (older drivers, or a cut output). */
  mode: string | null;
  scheduler: string | null;
  activeVgpus: number | null;
}

function blocks(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let cur: string[] | null = null;
  for (const line of text.split(/\r?\n/)) {
    const m = /^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$/.exec(line);
    if (m) {
      cur = [];
      out.set(m[1]!, cur);
    } else cur?.push(line);
  }
  return out;
}

const value = (lines: readonly string[], key: RegExp): string | null => {
  for (const l of lines) {
    const m = /^\s+([^:]+?)\s*:\s*(.*?)\s*$/.exec(l);
    if (m && key.test(m[1]!)) return m[2]!;
  }
  return null;
};

export function parseVirtualization(q: string, vgpuQ = ""): GpuVirtualization[] {
  const hosts = blocks(vgpuQ);
  return [...blocks(q)].map(([pciBusId, lines]) => {
    const active = value(hosts.get(pciBusId) ?? [], /^Active vGPUs$/i);
    return {
      pciBusId,
      mode: value(lines, /^Virtualization Mode$/i),
      scheduler: value(lines, /scheduler policy$/i),
      activeVgpus: active !== null && /^\d+$/.test(active) ? Number(active) : null,
    };
  });
}
