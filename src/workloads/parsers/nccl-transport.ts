// The transport NCCL says it uses between ranks, from its NCCL_DEBUG=INFO connection lines:
//
//   host:pid:tid [dev] NCCL INFO Channel 00 : 2[6] -> 3[7] via SHM/direct/direct
//   host:pid:tid [dev] NCCL INFO Channel 01/0 : 8[0] -> 15[7] via P2P/IPC/read
//   host:pid:tid [dev] NCCL INFO Channel 14/0 : 15[7] -> 0[0] [send] via NET/Socket/0
//
// ("Channel NN" or "Channel NN/M", the peer as rank[device or bus id], an optional [send] or
// [receive] for network connections, then the transport and its details.) The first word of
// what follows "via" is the transport: P2P (CUDA peer access or IPC: NVLink or PCIe between
// GPUs), SHM (through host memory), NET (a network plugin: Socket, IB), and the NVLink SHARP and
// CollNet paths (NVLS, CollNet). Pure; lines of any other kind are ignored.

export type NcclTransport = "P2P" | "SHM" | "NET" | "NVLS" | "COLLNET" | "OTHER";

export interface NcclConnection {
  channel: number;
  fromRank: number;
  toRank: number;
  transport: NcclTransport;
  /** What follows "via", e.g. `SHM/direct/direct`, `P2P/IPC/read`, `NET/Socket/0`. */
  via: string;
}

export interface NcclTransports {
  connections: NcclConnection[];
  /** The distinct transports, in the order first seen. */
  transports: NcclTransport[];
}

const CONNECTION =
  /NCCL INFO Channel (\d+)(?:\/\d+)? : (\d+)\[[0-9a-fx]+\] -> (\d+)\[[0-9a-fx]+\](?: \[(?:send|receive)\])? via (\S+(?: \S+)*)\s*$/i;

function kindOf(via: string): NcclTransport {
  const word = (/^[A-Za-z0-9]+/.exec(via)?.[0] ?? "").toUpperCase();
  if (word === "P2P" || word === "SHM" || word === "NET" || word === "NVLS") return word;
  if (word === "COLLNET") return "COLLNET";
  return "OTHER";
}

/** Every connection line of NCCL's INFO output (stdout and stderr together are fine). */
export function parseNcclTransports(text: string): NcclTransports {
  const connections: NcclConnection[] = [];
  const transports: NcclTransport[] = [];
  for (const raw of text.split("\n")) {
    const m = CONNECTION.exec(raw.endsWith("\r") ? raw.slice(0, -1) : raw);
    if (!m) continue;
    const transport = kindOf(m[4]!);
    connections.push({
      channel: Number(m[1]),
      fromRank: Number(m[2]),
      toRank: Number(m[3]),
      transport,
      via: m[4]!,
    });
    if (!transports.includes(transport)) transports.push(transport);
  }
  return { connections, transports };
}

/** Connections counted per transport, for the whole-GPU all_reduce's verdict (topology.ts). */
export interface NcclTransportResult {
  /** Connections per transport (`P2P` → 24). */
  counts: Partial<Record<NcclTransport, number>>;
  /** The detail after `via`, once each (`P2P/CUMEM/read`). */
  details: string[];
}

export function parseNcclTransport(text: string): NcclTransportResult {
  const counts: Partial<Record<NcclTransport, number>> = {};
  const details = new Set<string>();
  for (const c of parseNcclTransports(text).connections) {
    if (c.transport === "OTHER") continue;
    counts[c.transport] = (counts[c.transport] ?? 0) + 1;
    details.add(c.via);
  }
  return { counts, details: [...details] };
}

/** The transports seen, in words: `P2P (P2P/CUMEM/read)`, `SHM`, or null when none was logged. */
export function transportWords(r: NcclTransportResult): string | null {
  const ts = Object.keys(r.counts);
  return ts.length ? `${ts.join("+")} (${r.details.join(", ")})` : null;
}
