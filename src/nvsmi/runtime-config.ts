// The container runtimes' configuration as the NVIDIA Container Toolkit needs it, parsed (pure):
// what `docker info` says of its runtimes and CDI, which folders podman reads CDI specs from
// (containers.conf), and containerd's CRI plugin (`containerd config dump`).
//
// Shapes, from each tool's own documentation (read through the search tool):
// - `docker info --format '{{json .Runtimes}}'`: an object of runtime name → `{"path": …}`
//   (Engine API SystemInfo.Runtimes). `sudo nvidia-ctk runtime configure --runtime=docker`
//   writes `"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}}` into
//   /etc/docker/daemon.json (NVIDIA Container Toolkit install guide, "Configuring Docker"),
//   and docker lists it there after a restart.
// - `docker info --format '{{json .CDISpecDirs}}'`: the folders docker reads CDI specs from;
//   "an empty list indicates that CDI device injection is disabled" (Engine API SystemInfo,
//   v1.44+, docker 25). It is enabled by `"features": {"cdi": true}` in daemon.json (dockerd
//   reference, "Enable CDI devices"), defaults /etc/cdi and /var/run/cdi.
// - containers.conf (podman, containers-common): `[engine]` `cdi_spec_dirs = ["/etc/cdi",
//   "/var/run/cdi"]` (those are the defaults when unset); podman >= 4.1 resolves
//   `--device nvidia.com/gpu=…` through CDI itself, no runtime hook.
// - `containerd config dump`: TOML. containerd 1.7 (config version 2): the CRI plugin is
//   `[plugins."io.containerd.grpc.v1.cri"]` with `enable_cdi` (default false) and
//   `cdi_spec_dirs`; runtimes under `[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.
//   NAME]` with `[… .options] BinaryName`. containerd 2.x (config version 3):
//   `[plugins."io.containerd.cri.v1.runtime"]`, `enable_cdi` on by default. `nvidia-ctk runtime
//   configure --runtime=containerd` adds the `nvidia` runtime (BinaryName
//   /usr/bin/nvidia-container-runtime).

/** One TOML table: its dotted path (quotes removed) and its scalar and array values. */
export interface TomlTable {
  path: string[];
  values: Record<string, unknown>;
}

/** `a."b.c".d` → ["a", "b.c", "d"]. */
function splitKey(s: string): string[] {
  const out: string[] = [];
  const re = /\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*(?:\.|$)/gy;
  while (re.lastIndex < s.length) {
    const m = re.exec(s);
    if (!m) break;
    out.push(m[1] ?? m[2] ?? m[3]!);
  }
  return out;
}

function tomlValue(v: string): unknown {
  const t = v.trim();
  if (t === "true" || t === "false") return t === "true";
  if (/^[+-]?\d+$/.test(t)) return Number(t);
  if (t.startsWith("[")) {
    const items = t
      .slice(1, t.lastIndexOf("]"))
      .split(/,(?=(?:[^"']|"[^"]*"|'[^']*')*$)/)
      .map((x) => x.trim())
      .filter(Boolean);
    return items.map(tomlValue);
  }
  const q = /^"((?:[^"\\]|\\.)*)"|^'([^']*)'/.exec(t);
  return q ? (q[1] ?? q[2]) : t;
}

/** Drops a `#` comment that is not inside a string. */
function uncomment(line: string): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote && line[i - 1] !== "\\") quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "#") return line.slice(0, i);
  }
  return line;
}

/**
 * The tables of a TOML document, as far as these configurations use TOML: `[table]` headers
 * with quoted parts, `key = value` with strings, booleans, integers and arrays (an array may
 * span lines). Inline tables and multi-line strings are kept as raw text (not read here).
 */
export function parseTomlTables(text: string): TomlTable[] {
  const tables: TomlTable[] = [{ path: [], values: {} }];
  let pending: { key: string; text: string } | null = null;
  for (const raw of text.split("\n")) {
    const line = uncomment(raw).trim();
    if (pending) {
      pending.text += ` ${line}`;
      if (balanced(pending.text)) {
        tables.at(-1)!.values[pending.key] = tomlValue(pending.text);
        pending = null;
      }
      continue;
    }
    if (!line) continue;
    const header = /^\[\[?(.*?)\]\]?$/.exec(line);
    if (header) {
      tables.push({ path: splitKey(header[1]!), values: {} });
      continue;
    }
    const eq =
      /^((?:"[^"]*"|'[^']*'|[A-Za-z0-9_.-]+)(?:\s*\.\s*(?:"[^"]*"|'[^']*'|[A-Za-z0-9_-]+))*)\s*=\s*(.*)$/.exec(
        line,
      );
    if (!eq) continue;
    const key = splitKey(eq[1]!).join(".");
    if (eq[2]!.startsWith("[") && !balanced(eq[2]!)) pending = { key, text: eq[2]! };
    else tables.at(-1)!.values[key] = tomlValue(eq[2]!);
  }
  return tables;
}

function balanced(s: string): boolean {
  const stripped = s.replace(/"(?:[^"\\]|\\.)*"|'[^']*'/g, "");
  return (stripped.match(/\[/g) ?? []).length === (stripped.match(/\]/g) ?? []).length;
}

const same = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((x, i) => x === b[i]);
const startsWith = (a: readonly string[], b: readonly string[]) =>
  a.length >= b.length && b.every((x, i) => x === a[i]);

/** What `docker info` says: its runtimes by name (with their paths) and its CDI folders. */
export interface DockerRuntimeInfo {
  runtimes: Record<string, string>;
  /** Empty: CDI disabled; null: this docker does not report them (before docker 25). */
  cdiSpecDirs: string[] | null;
}

/** `docker info --format '{{json .Runtimes}}'` and `'{{json .CDISpecDirs}}'` (the latter's text
 * null or `<no value>` on a docker that has no such field). */
export function parseDockerInfo(runtimesJson: string, cdiJson: string | null): DockerRuntimeInfo {
  const data = JSON.parse(runtimesJson.trim()) as unknown;
  if (!data || typeof data !== "object" || Array.isArray(data))
    throw new Error(`docker info .Runtimes: expected a JSON object, got ${runtimesJson.trim()}`);
  const runtimes: Record<string, string> = {};
  for (const [name, v] of Object.entries(data as Record<string, unknown>))
    runtimes[name] = String((v as { path?: unknown } | null)?.path ?? "");
  let cdiSpecDirs: string[] | null = null;
  const c = cdiJson?.trim();
  if (c && c !== "<no value>") {
    const dirs = JSON.parse(c) as unknown;
    cdiSpecDirs = Array.isArray(dirs) ? dirs.map(String) : [];
  }
  return { runtimes, cdiSpecDirs };
}

/** The CDI spec folders podman reads: the last containers.conf (in the order given, as
 * containers-common reads them: system, /etc, conf.d, user) that sets `[engine]
 * cdi_spec_dirs`, else `defaults`. */
export function podmanCdiDirs(confs: readonly string[], defaults: readonly string[]): string[] {
  let dirs: string[] | null = null;
  for (const text of confs) {
    const engine = parseTomlTables(text).find((t) => same(t.path, ["engine"]));
    const v = engine?.values.cdi_spec_dirs;
    if (Array.isArray(v)) dirs = v.map(String);
  }
  return dirs ?? [...defaults];
}

export interface ContainerdCri {
  /** The CRI plugin's table as found (`io.containerd.grpc.v1.cri`, `io.containerd.cri.v1.runtime`);
   * null: no CRI plugin in the dump. */
  plugin: string | null;
  cdiEnabled: boolean;
  cdiSpecDirs: string[];
  /** Runtimes that run NVIDIA's runtime: named nvidia, or whose BinaryName is it. */
  nvidiaRuntimes: string[];
  defaultRuntime: string | null;
}

const CRI_PLUGINS = [
  // containerd 2.x (config version 3): CDI on by default.
  { name: "io.containerd.cri.v1.runtime", cdiDefault: true },
  // containerd 1.x (config version 2): CDI off by default.
  { name: "io.containerd.grpc.v1.cri", cdiDefault: false },
  // config version 1.
  { name: "cri", cdiDefault: false },
] as const;

/** `containerd config dump`'s CRI plugin: CDI, its folders, the runtimes that are NVIDIA's. */
export function parseContainerdDump(text: string, defaultDirs: readonly string[]): ContainerdCri {
  const tables = parseTomlTables(text);
  for (const p of CRI_PLUGINS) {
    const base = ["plugins", p.name];
    const cri = tables.find((t) => same(t.path, base));
    if (!cri) continue;
    const runtimesAt = [...base, "containerd", "runtimes"];
    const names = new Set<string>();
    for (const t of tables) {
      if (!startsWith(t.path, runtimesAt) || t.path.length < runtimesAt.length + 1) continue;
      const name = t.path[runtimesAt.length]!;
      const bin = String(t.values.BinaryName ?? t.values["options.BinaryName"] ?? "");
      if (name === "nvidia" || /nvidia-container-runtime/.test(bin)) names.add(name);
    }
    const ctr = tables.find((t) => same(t.path, [...base, "containerd"]));
    const dirs = cri.values.cdi_spec_dirs;
    return {
      plugin: p.name,
      cdiEnabled: typeof cri.values.enable_cdi === "boolean" ? cri.values.enable_cdi : p.cdiDefault,
      cdiSpecDirs: Array.isArray(dirs) ? dirs.map(String) : [...defaultDirs],
      nvidiaRuntimes: [...names],
      defaultRuntime:
        typeof ctr?.values.default_runtime_name === "string"
          ? ctr.values.default_runtime_name
          : null,
    };
  }
  return {
    plugin: null,
    cdiEnabled: false,
    cdiSpecDirs: [],
    nvidiaRuntimes: [],
    defaultRuntime: null,
  };
}
