// The journal: a node's complete original MIG state, written before the first change, in two
// copies: one on the controller (`reports/journal/<node>.json`) and one on the node, so that
// `restore` works even from another machine or after this one lost its files. A journal that
// exists is never overwritten: after an apply that was not restored (a killed controller, a
// second apply), the state to go back to is still the first one.
//
// Durability: each copy is written under a temporary name, checked complete, fsynced, and only
// then published under its real name, so a full disk, a lost connection or a crash leaves
// either the whole journal or none. Publishing is a hard link (then the temporary name goes),
// not a rename: rename(2) replaces an existing journal, link(2) refuses to, atomically. A
// journal that does not parse and validate is never taken for the original state.

import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { isSlicecheckError, SlicecheckError } from "../../errors.js";
import type { ExecResult, Transport } from "../../transport/types.js";
import { nodeCommandError } from "./read.js";
import type { NodeSnapshot } from "./types.js";

export const DEFAULT_JOURNAL_DIR = "reports/journal";

const ci = z.object({
  id: z.number(),
  profileId: z.number(),
  profile: z.string(),
  start: z.number().nullable(),
  size: z.number().nullable(),
});
const gi = z.object({
  id: z.number(),
  profileId: z.number(),
  profile: z.string(),
  start: z.number(),
  size: z.number(),
  cis: z.array(ci),
});
const journalSchema = z.object({
  version: z.literal(1),
  node: z.string(),
  createdAt: z.string(),
  runId: z.string(),
  /** Recorded for `run` (later): `--keep` means the layout stays when the run ends. */
  keep: z.boolean(),
  driver: z.string(),
  layout: z.object({ file: z.string(), config: z.string() }).nullable(),
  gpus: z.array(
    z.object({
      index: z.number(),
      uuid: z.string(),
      name: z.string(),
      migCurrent: z.boolean(),
      migPending: z.boolean(),
      gis: z.array(gi),
    }),
  ),
});

export type Journal = z.infer<typeof journalSchema>;
export type JournalGpu = Journal["gpus"][number];

export interface JournalMeta {
  runId: string;
  keep: boolean;
  layout: { file: string; config: string } | null;
}

export function journalFrom(s: NodeSnapshot, meta: JournalMeta, now = new Date()): Journal {
  return {
    version: 1,
    node: s.node,
    createdAt: now.toISOString(),
    runId: meta.runId,
    keep: meta.keep,
    driver: s.driver,
    layout: meta.layout,
    gpus: s.gpus.map((g) => ({
      index: g.index,
      uuid: g.uuid,
      name: g.name,
      migCurrent: g.migCurrent,
      migPending: g.migPending,
      gis: g.gis,
    })),
  };
}

function safeName(node: string): string {
  return node.replace(/[^A-Za-z0-9._-]/g, "_");
}

export function localJournalPath(dir: string, node: string): string {
  return join(dir, `${safeName(node)}.json`);
}

function parseJournal(text: string, where: string): Journal {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw badJournal(where, (e as Error).message);
  }
  const r = journalSchema.safeParse(data);
  if (!r.success) {
    const i = r.error.issues[0];
    throw badJournal(where, i ? `${i.path.join(".") || "top"}: ${i.message}` : "unexpected shape");
  }
  return r.data;
}

function badJournal(where: string, why: string): SlicecheckError {
  return new SlicecheckError(
    "JOURNAL_INVALID",
    `the journal ${where} is not a complete slicecheck journal (${why}). It should hold the node's original MIG state, so slicecheck will not guess from it. If the other copy is valid, move this one away (mv it to ${where.split(":").at(-1)}.bad) and rerun; if neither is, put the layout back by hand (slicecheck apply with the layout the node had) and remove both copies`,
    { journal: where },
  );
}

export function readLocalJournal(dir: string, node: string): Journal | null {
  const path = localJournalPath(dir, node);
  if (!existsSync(path)) return null;
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new SlicecheckError(
      "JOURNAL_INVALID",
      `cannot read the journal ${path}: ${(e as NodeJS.ErrnoException).code ?? String(e)}; check --journal-dir`,
      { journal: path },
    );
  }
  return parseJournal(text, path);
}

function writeError(path: string, e: unknown, node: string): SlicecheckError {
  const code = (e as NodeJS.ErrnoException).code ?? String(e);
  return new SlicecheckError(
    "WRITE",
    `${node}: cannot write the journal ${path}: ${code}${code === "ENOSPC" ? " (no space left on the device)" : ""}; nothing was changed on the node. Free space or give --journal-dir a writable folder, then rerun`,
    { node, path, cause: code },
    { cause: e },
  );
}

/** Writes the journal unless one exists; true if written. Temporary name, fsync, then link. */
export function writeLocalJournalOnce(dir: string, j: Journal): boolean {
  const path = localJournalPath(dir, j.node);
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    mkdirSync(dir, { recursive: true });
    const fd = openSync(tmp, "w", 0o600);
    try {
      writeSync(fd, `${JSON.stringify(j, null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(tmp, path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw e;
    }
    // The new name must survive a power cut too: fsync the folder that holds it.
    const dfd = openSync(dir, "r");
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
    return true;
  } catch (e) {
    throw writeError(path, e, j.node);
  } finally {
    // Also after a failed write: a half-written temporary file is never left behind. (Where
    // the folder could not be made there is nothing to remove, and rm says ENOTDIR.)
    try {
      rmSync(tmp, { force: true });
    } catch {
      /* nothing was created */
    }
  }
}

export function removeLocalJournal(dir: string, node: string): void {
  rmSync(localJournalPath(dir, node), { force: true });
}

/**
 * The node's copy lives in /var/tmp/slicecheck (survives the controller; /tmp may be cleaned
 * at boot), or in $SLICECHECK_STATE_DIR where the node's environment sets it: nodes that share
 * one machine (the simulated cluster's, every test cluster names its nodes sim01, sim02…) each
 * keep their own.
 */
function remotePrelude(node: string): string {
  return `d="\${SLICECHECK_STATE_DIR:-/var/tmp/slicecheck}"; f="$d/journal-${safeName(node)}.json"; echo "path=$f";`;
}

/** `leased`: a write, run only while this controller's lease on the node holds. */
async function remote(
  t: Transport,
  body: string,
  o: { stdin?: string; leased?: boolean } = {},
): Promise<ExecResult> {
  const shell = `${remotePrelude(t.node.name)} ${body}`;
  const r = await t.exec({ shell }, { privileged: true, timeoutMs: 30_000, ...o });
  if (r.exitCode !== 0) throw nodeCommandError(t.node.name, "journal on the node", r, "failed");
  return r;
}

function pathOf(r: ExecResult): string {
  return /^path=(.*)$/m.exec(r.stdout)?.[1] ?? "(unknown)";
}

export async function readRemoteJournal(
  t: Transport,
): Promise<{ path: string; journal: Journal | null }> {
  const r = await remote(t, 'if [ -f "$f" ]; then echo found; cat "$f"; else echo absent; fi');
  const path = pathOf(r);
  const at = r.stdout.indexOf("\nfound\n");
  if (at < 0) return { path, journal: null };
  return {
    path,
    journal: parseJournal(r.stdout.slice(at + "\nfound\n".length), `${t.node.name}:${path}`),
  };
}

/**
 * Writes the node's copy unless one exists; then returns the one that was there. One call: the
 * text goes to a temporary name, its byte count is checked (stdin cut short by a lost
 * connection would otherwise publish half a journal), it is synced, and then linked to its
 * name, which never replaces an existing journal. The temporary file goes whatever happens.
 */
export async function writeRemoteJournalOnce(
  t: Transport,
  j: Journal,
): Promise<{ path: string; written: boolean; existing: Journal | null }> {
  const text = `${JSON.stringify(j, null, 2)}\n`;
  const bytes = Buffer.byteLength(text);
  const r = await remote(
    t,
    `mkdir -p "$d" && umask 077 && tmp="$f.$$.tmp" && trap 'rm -f "$tmp"' EXIT && cat > "$tmp" && n=$(wc -c < "$tmp") && if [ "$n" -ne ${bytes} ]; then echo "journal cut short: $n of ${bytes} bytes written to $tmp" >&2; exit 1; fi && { sync "$tmp" 2>/dev/null || sync; } && if ln "$tmp" "$f" 2>/dev/null; then sync "$d" 2>/dev/null; echo written; else echo exists; cat "$f"; fi`,
    { stdin: text, leased: true },
  );
  const path = pathOf(r);
  const at = r.stdout.indexOf("\nexists\n");
  const existing =
    at < 0
      ? null
      : parseJournal(r.stdout.slice(at + "\nexists\n".length), `${t.node.name}:${path}`);
  return { path, written: /^written$/m.test(r.stdout), existing };
}

export async function removeRemoteJournal(t: Transport): Promise<string> {
  return pathOf(await remote(t, 'rm -f "$f"', { leased: true }));
}

/** Refuses a journal that is not this node's (another host's file copied over, or renamed). */
export function checkJournalOwner(j: Journal, s: NodeSnapshot, where: string): void {
  const uuids = new Set(s.gpus.map((g) => g.uuid));
  const foreign = j.gpus.filter((g) => !uuids.has(g.uuid));
  if (j.node !== s.node || foreign.length > 0) {
    throw new SlicecheckError(
      "INTERLOCK",
      `the journal ${where} was written for node ${j.node} (GPU ${foreign[0]?.uuid ?? "?"}), not for ${s.node} as it is now; move it away if it is stale`,
      { node: s.node, journal: where },
    );
  }
}

export interface JournalCopies {
  journal: Journal;
  local: string;
  remote: string;
  /** An earlier journal was kept instead of writing this run's. */
  reused: boolean;
}

/** Makes sure both copies exist before the first change, keeping an earlier journal if any. */
export async function ensureJournal(
  t: Transport,
  s: NodeSnapshot,
  dir: string,
  meta: JournalMeta,
): Promise<JournalCopies> {
  const local = localJournalPath(dir, s.node);
  const earlier = readLocalJournal(dir, s.node);
  if (earlier) checkJournalOwner(earlier, s, local);
  // One journal object for both copies, so that they are byte for byte the same.
  const fresh = journalFrom(s, meta);
  const written = await writeRemoteJournalOnce(t, earlier ?? fresh);
  if (!earlier && written.existing) {
    checkJournalOwner(written.existing, s, `${s.node}:${written.path}`);
  }
  const journal = earlier ?? written.existing ?? fresh;
  try {
    writeLocalJournalOnce(dir, journal);
  } catch (e) {
    // The node's copy was written for this apply alone: left there, a later apply would take a
    // state that was never changed from for the original one. Nothing has changed yet.
    if (written.written) await removeRemoteJournal(t).catch(() => {});
    throw e;
  }
  return {
    journal: readLocalJournal(dir, s.node) ?? journal,
    local,
    remote: written.path,
    reused: earlier !== null || written.existing !== null,
  };
}

/** The journal to restore from: the local copy, else the node's; null when there is none. */
export async function loadJournal(
  t: Transport,
  dir: string,
): Promise<{ journal: Journal; from: string } | null> {
  let local: Journal | null;
  try {
    local = readLocalJournal(dir, t.node.name);
  } catch (e) {
    if (!isSlicecheckError(e, "JOURNAL_INVALID")) throw e;
    // Never fall back silently: say whether the node's copy could be used instead.
    const other = await readRemoteJournal(t).then(
      (r) =>
        r.journal
          ? `The node's copy ${t.node.name}:${r.path} is valid: move ${localJournalPath(dir, t.node.name)} away and rerun restore to use it.`
          : `The node has no copy (${t.node.name}:${r.path}).`,
      (x: unknown) =>
        `The node's copy cannot be used either: ${x instanceof Error ? x.message : String(x)}.`,
    );
    throw new SlicecheckError("JOURNAL_INVALID", `${e.message}. ${other}`, e.context);
  }
  if (local) return { journal: local, from: localJournalPath(dir, t.node.name) };
  const r = await readRemoteJournal(t);
  return r.journal ? { journal: r.journal, from: `${t.node.name}:${r.path}` } : null;
}
