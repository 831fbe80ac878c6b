// The journal: a node's complete original MIG state, written before the first change, in two
// copies: one on the controller (`reports/journal/<node>.json`) and one on the node, so that
// `restore` works even from another machine or after this one lost its files. A journal that
// exists is never overwritten: after an apply that was not restored (a killed controller, a
// second apply), the state to go back to is still the first one.

import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { SlicecheckError } from "../../errors.js";
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
  if (!r.success) throw badJournal(where, r.error.issues[0]?.message ?? "unexpected shape");
  return r.data;
}

function badJournal(where: string, why: string): SlicecheckError {
  return new SlicecheckError(
    "USAGE",
    `the journal ${where} is not a slicecheck journal (${why}); it holds the original state, so slicecheck will not guess: repair it or move it away`,
    { journal: where },
  );
}

export function readLocalJournal(dir: string, node: string): Journal | null {
  const path = localJournalPath(dir, node);
  if (!existsSync(path)) return null;
  return parseJournal(readFileSync(path, "utf8"), path);
}

/** Writes the journal unless one exists (a hard link never replaces a file); true if written. */
export function writeLocalJournalOnce(dir: string, j: Journal): boolean {
  mkdirSync(dir, { recursive: true });
  const path = localJournalPath(dir, j.node);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(j, null, 2)}\n`, { mode: 0o600 });
  try {
    linkSync(tmp, path);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw e;
  } finally {
    rmSync(tmp, { force: true });
  }
}

export function removeLocalJournal(dir: string, node: string): void {
  rmSync(localJournalPath(dir, node), { force: true });
}

/**
 * The node's copy lives in /var/tmp/slicecheck (survives the controller; /tmp may be cleaned
 * at boot). A simulated node keeps it in its own state folder instead: the simulated nodes
 * share one machine, and every test cluster names its nodes sim01, sim02….
 */
function remotePrelude(node: string): string {
  return `d="\${SLICECHECK_SIM_STATE:-/var/tmp/slicecheck}"; f="$d/journal-${safeName(node)}.json"; echo "path=$f";`;
}

async function remote(t: Transport, body: string, stdin?: string): Promise<ExecResult> {
  const shell = `${remotePrelude(t.node.name)} ${body}`;
  const r = await t.exec({ shell }, { privileged: true, timeoutMs: 30_000, stdin });
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

/** Writes the node's copy unless one exists; then returns the one that was there. One call. */
export async function writeRemoteJournalOnce(
  t: Transport,
  j: Journal,
): Promise<{ path: string; written: boolean; existing: Journal | null }> {
  const r = await remote(
    t,
    'mkdir -p "$d" && umask 077 && tmp="$f.$$.tmp" && cat > "$tmp" && { if ln "$tmp" "$f" 2>/dev/null; then echo written; else echo exists; cat "$f"; fi; rm -f "$tmp"; }',
    `${JSON.stringify(j, null, 2)}\n`,
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
  return pathOf(await remote(t, 'rm -f "$f"'));
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
  const written = await writeRemoteJournalOnce(t, earlier ?? journalFrom(s, meta));
  if (!earlier && written.existing) {
    checkJournalOwner(written.existing, s, `${s.node}:${written.path}`);
  }
  const journal = earlier ?? written.existing ?? journalFrom(s, meta);
  writeLocalJournalOnce(dir, journal);
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
  const local = readLocalJournal(dir, t.node.name);
  if (local) return { journal: local, from: localJournalPath(dir, t.node.name) };
  const r = await readRemoteJournal(t);
  return r.journal ? { journal: r.journal, from: `${t.node.name}:${r.path}` } : null;
}
