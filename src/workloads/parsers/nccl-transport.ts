// The transport NCCL chose, from its NCCL_DEBUG=INFO lines. Each connection is logged as
//   host:pid:tid [dev] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
// (older releases: `via P2P/IPC/read`, `via P2P/direct pointer/read`; host memory: `via
// SHM/direct/direct`; network: `[send] via NET/IB/0/GDRDMA`, `via NET/Socket/0`), as pasted in
// GitHub issues and docs. NVLink SHARP adds `NVLS` connections. P2P means GPU to GPU directly,
// over NVLink where the topology has NV#, otherwise over PCIe; SHM and NET mean the data went
// through host memory or a NIC. A second helper (xinst) writes an INFO parser for the
// cross-instance path; the two are to be merged.

export type NcclTransport = "P2P" | "SHM" | "NET" | "NVLS" | "COLLNET";

export interface NcclTransportResult {
  /** Connections per transport (`P2P` → 24). */
  counts: Partial<Record<NcclTransport, number>>;
  /** The detail after `via`, once each (`P2P/CUMEM/read`). */
  details: string[];
}

const CHANNEL =
  /\bNCCL INFO Channel \d+(?:\/\d+)? : \d+\[\d+\] -> \d+\[\d+\](?: \[(?:send|receive)\])? via (\S+(?: pointer)?(?:\/\S+)*)/;

export function parseNcclTransport(text: string): NcclTransportResult {
  const counts: Partial<Record<NcclTransport, number>> = {};
  const details = new Set<string>();
  for (const line of text.split("\n")) {
    const m = CHANNEL.exec(line);
    if (!m) continue;
    const detail = m[1]!;
    const head = detail.split("/")[0]!.toUpperCase();
    const t = (["P2P", "SHM", "NET", "NVLS", "COLLNET"] as const).find((x) => x === head);
    if (!t) continue;
    counts[t] = (counts[t] ?? 0) + 1;
    details.add(detail);
  }
  return { counts, details: [...details] };
}

/** The transports seen, in words: `P2P (P2P/CUMEM/read)`, `SHM`, or null when none was logged. */
export function transportWords(r: NcclTransportResult): string | null {
  const ts = Object.keys(r.counts);
  return ts.length ? `${ts.join("+")} (${r.details.join(", ")})` : null;
}
