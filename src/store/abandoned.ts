// Runs that ended without finishing. A controller killed with -9 (or a machine that lost power)
// never writes its finish status, so its row says `running` forever. A later run or diff on the
// same machine looks at the process that wrote it: gone, the run is marked `abandoned`. Only
// runs of this host are judged (another host's processes cannot be seen from here), and a
// process id in use again by another program keeps the run `running`: wrongly leaving a dead
// run unmarked costs a warning, wrongly marking a live one would misreport a running check.
import { hostname } from "node:os";
import type { Store } from "./store.js";

/** What the runs row records of its controller: this host and this process. */
export function controllerOf(): [string, number] {
  return [hostname(), process.pid];
}

/** Whether process `pid` exists on this machine (EPERM: it exists, owned by someone else). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Marks this host's `running` runs whose controller is gone as `abandoned`; returns their ids.
 * `except`: the caller's own run. */
export async function markAbandoned(
  store: Store,
  except: string | null,
  alive: (pid: number) => boolean = processAlive,
): Promise<string[]> {
  const [host, self] = controllerOf();
  const rows = await store.all<{ id: string; pid: number | null }>(
    "SELECT id, pid FROM runs WHERE status = 'running' AND host = ? AND pid IS NOT NULL",
    [host],
  );
  const gone = rows.filter(
    (r) => r.id !== except && r.pid !== null && Number(r.pid) !== self && !alive(Number(r.pid)),
  );
  // Only while still `running`: a controller that finished in between keeps its status.
  for (const r of gone)
    await store.run("UPDATE runs SET status = 'abandoned' WHERE id = ? AND status = 'running'", [
      r.id,
    ]);
  return gone.map((r) => r.id);
}

/** A run that did not finish: why its records may stop short, or null for a finished one. */
export function unfinishedWhy(status: string): string | null {
  if (status === "abandoned")
    return "abandoned: its controller died before finishing (killed, or its machine went down); its records stop where it died";
  if (status === "running")
    return "unfinished: still running, or its controller died on another machine; its records may be partial";
  return null;
}
