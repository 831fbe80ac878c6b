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

/** A vGPU host GPU's active vGPUs as `nvidia-smi vgpu -q` lists them: by bus id, the count and
 * each vGPU's type and VM (`NVIDIA H100-40C on vm-3`), so that a refusal can name them. */
export interface VgpuHost {
  pciBusId: string;
  active: number;
  vgpus: { id: string; name: string | null; vm: string | null }[];
}

export function parseVgpuHosts(vgpuQ: string): VgpuHost[] {
  return [...blocks(vgpuQ)].map(([pciBusId, lines]) => {
    const vgpus: VgpuHost["vgpus"] = [];
    for (const l of lines) {
      const m = /^\s+([^:]+?)\s*:\s*(.*?)\s*$/.exec(l);
      if (!m) continue;
      const [k, v] = [m[1]!, m[2]!];
      if (/^vGPU ID$/i.test(k)) vgpus.push({ id: v, name: null, vm: null });
      else if (/^vGPU Name$/i.test(k) && vgpus.length) vgpus[vgpus.length - 1]!.name = v;
      else if (/^VM Name$/i.test(k) && vgpus.length) vgpus[vgpus.length - 1]!.vm = v;
    }
    const active = value(lines, /^Active vGPUs$/i);
    return {
      pciBusId,
      active: active !== null && /^\d+$/.test(active) ? Number(active) : vgpus.length,
      vgpus,
    };
  });
}
