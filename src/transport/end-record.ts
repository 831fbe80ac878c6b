// The end record's line, as the recorder prints it (remote-scripts.ts RECORDER): the command's
// exit status and its start and end on the node's clock. Its own module, importing nothing:
// remote-scripts.ts and types.ts both need it.

/** What the node recorded of a command's end (RECORDER), or null when the line is unusable. */
export interface EndRecord {
  exitCode: number;
  /** From the command's start to its end on the node's own clock. */
  elapsedMs: number;
  /** The start and end themselves, in seconds of the node's clock (a whole-second clock's end
   * taken a second late): whether commands on one node overlapped. */
  startS: number;
  endS: number;
  /** The node's CPU stall time (PSI cpu `some`) while it ran, in ms; absent without PSI. */
  cpuWaitMs?: number;
}

export function parseEndRecord(line: string): EndRecord | null {
  const m = /^rc=(\d+) start=(\d+(?:\.\d+)?)\S* end=(\d+(?:\.\d+)?)\S*(?: cpuwait=(\d*))?$/.exec(
    line.trim(),
  );
  if (!m) return null;
  // Without GNU date's %N the times are whole seconds: a second of doubt, counted against the
  // command (its end is taken as late as it may have been).
  const whole = !m[2]!.includes(".") || !m[3]!.includes(".");
  const elapsedMs = (Number(m[3]) - Number(m[2])) * 1000 + (whole ? 1000 : 0);
  if (!Number.isFinite(elapsedMs) || elapsedMs < 0) return null;
  const startS = Number(m[2]);
  const rec: EndRecord = {
    exitCode: Number(m[1]),
    elapsedMs,
    startS,
    endS: startS + elapsedMs / 1000,
  };
  if (m[4]) rec.cpuWaitMs = Number(m[4]) / 1000;
  return rec;
}
