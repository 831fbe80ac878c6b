// One session per node per run: one SSH connection (a second only while more than
// MAX_CHANNELS channels, the lock's included, must be open at once), the node lock held for the whole command, and
// the node's discovery read once and shared by every suite. It is itself a Transport, so the
// layers below (apply, the launcher, the isolation scenarios) run over it unchanged.
import { isSlicecheckError, SlicecheckError } from "../errors.js";
import type { NodeSpec } from "../inventory/types.js";
import type { Output, Read } from "../mig/apply/bundle.js";
import { runTagFor } from "../transport/managed.js";
import { openTransport } from "../transport/open.js";
import { MAX_CHANNELS } from "../transport/ssh.js";
import type {
  BesideLockOptions,
  Command,
  ExecOptions,
  ExecResult,
  RawProcess,
  RunProcess,
  Supervisor,
  Transport,
} from "../transport/types.js";
import { quote, quoteArgv } from "../util/shell.js";
import { settledWithin } from "../util/time.js";
import { discoverInstances, discoverWith, type NodeInventory } from "../workloads/instances.js";
import { LEASE_AWAIT_S, LOCKED_EXIT, leaseAwait, leaseCheck, leaseFound } from "./lease-script.js";
import { acquireLock, type HeldLock, type LockInfo, leaseLost } from "./lock.js";

interface Pooled {
  t: Transport;
  inflight: number;
  /** Of `inflight`, the observers' commands (execIfFree): short, and never worth a login. */
  observers: number;
  ready: Promise<void>;
}

export interface SessionOpenOptions {
  /** Take the node lock (run, apply, restore); read-only commands do not. */
  lock: boolean;
  /** The command that holds the lock, for the message a second controller gets. */
  command: string;
  /** The node lease's length in seconds (default DEFAULT_LEASE_S). */
  leaseS?: number;
  /** With `lock`: start the node's discovery beside the lock's command (discoverBesideLock). */
  discoverEarly?: boolean;
  /** With `discoverEarly`: reads made in the same call as that discovery, on its login, by who
   * takes their answers (alongDiscovery). */
  withDiscovery?: Readonly<Record<string, readonly Read[]>>;
  /** With `lock`: called as the lock's command starts, to start other reads beside it; each
   * read passes readsBesideLock()'s options, which hold it on the node until the lease is the
   * run's and stop it when the lock is refused or the session closes. */
  besideLock?: (s: NodeSession) => void;
}

export class NodeSession implements Transport {
  readonly kind: "ssh" | "local";
  private readonly pool: Pooled[] = [];
  private lock: HeldLock | null = null;
  private inventory: NodeInventory | null = null;
  /** SSH connections this session opened (the bench reports it per node per run). */
  connectionsOpened = 0;
  /** Why each connection after the first was opened (run.json shows it: a second login on a
   * node is worth explaining). */
  readonly extraConnections: string[] = [];
  /** Set once the session could not be opened or was lost: the node's own failure. */
  error: SlicecheckError | null = null;
  tookOver: LockInfo | null = null;
  private closed = false;
  /** Commands waiting for an observer's channel to come free (see pick). */
  private waiting: (() => void)[] = [];
  /** A supervisor started ahead of the first phase that runs workloads (prepareSupervisor). */
  private warm: Promise<Supervisor | null> | null = null;
  /** Whether the lock was taken, once its command answered (open); null: no lock asked. */
  private lockTaken: Promise<boolean> | null = null;
  /** Stops the reads started beside the lock (readsBesideLock): lock refused, session closed. */
  private readonly beside = new AbortController();
  /** The discovery started beside the lock, the reads made with it, and its abort
   * (discoverBesideLock). */
  private early: Early | null = null;

  constructor(
    readonly node: NodeSpec,
    readonly runId: string,
  ) {
    this.kind = openTransport(node, { runId }).kind;
  }

  private add(why: string): Pooled {
    const t = openTransport(this.node, { runId: this.runId });
    this.countConnection(why);
    const p: Pooled = { t, inflight: 0, observers: 0, ready: t.connect() };
    p.ready.catch(() => {});
    this.pool.push(p);
    return p;
  }

  /** Connects and, when asked, locks the node. Throws the node's error (never for others). */
  async open(o: SessionOpenOptions): Promise<void> {
    const first = this.pool[0] ?? this.add("open");
    let taken = (_: boolean) => {};
    try {
      await first.ready;
      if (o.lock) {
        this.lockTaken = new Promise((r) => {
          taken = r;
        });
        if (o.discoverEarly) this.discoverBesideLock(o.withDiscovery ?? {});
        o.besideLock?.(this);
        this.lock = await acquireLock(
          first.t,
          { runId: this.runId, command: o.command },
          { leaseS: o.leaseS, runTag: runTagFor(this.runId, this.node.name) },
        );
        taken(true);
        this.tookOver = this.lock.tookOver;
        // From then on nothing of this run may pass on the node: its remaining checks are broken.
        this.lock.onLost((e) => {
          this.error ??= e;
        });
        // The lock's channel stays open for the whole command: it takes one of the slots.
        first.inflight++;
      }
    } catch (e) {
      taken(false);
      this.early?.abort.abort();
      this.early = null;
      this.beside.abort();
      await this.dropWarm();
      this.error = isSlicecheckError(e)
        ? e
        : new SlicecheckError("CONNECT", `${this.node.name}: ${(e as Error).message ?? e}`, {
            node: this.node.name,
          });
      throw this.error;
    }
  }

  /**
   * The node's discovery started with the lock's command rather than after its answer: its
   * login (0.2-2 s on a real node, for its start-up files) is paid beside the lock's. Its reads
   * wait on the node until the lease is this run's (leaseAwait), so nothing is read before
   * the node is locked; a lock refused aborts it. discover() takes its answer.
   */
  private discoverBesideLock(also: Readonly<Record<string, readonly Read[]>>): void {
    const abort = new AbortController();
    const d = discoverWith(this, also, { awaitLease: true, signal: abort.signal });
    d.inventory.catch(() => {}); // taken by discover(), or never wanted (the lock was refused)
    this.early = { inventory: d.inventory, along: d.also, abort };
  }

  /** The answers of `key`'s reads made with the discovery started beside the lock
   * (SessionOpenOptions.withDiscovery), once; null where there were none, or they were taken.
   * They fail where that call did (the lock refused, the discovery aborted, the node lost). */
  alongDiscovery(key: string): Promise<Output[]> | null {
    const also = this.early?.along.get(key) ?? null;
    this.early?.along.delete(key);
    return also;
  }

  /** The options of a read started beside the lock (SessionOpenOptions.besideLock). */
  readsBesideLock(): BesideLockOptions {
    return { awaitLease: true, signal: this.beside.signal };
  }

  private countConnection(why: string): void {
    if (this.connectionsOpened++ > 0) this.extraConnections.push(why);
  }

  get locked(): boolean {
    return this.lock !== null;
  }

  /** Whether closing the session stops what the run left on the node: its lease's holder
   * still runs, and its release kills the run's processes first (lease-script.ts). */
  get releaseKills(): boolean {
    return this.lock !== null && this.lock.lost() === null;
  }

  connect(): Promise<void> {
    return (this.pool[0] ?? this.add("connect")).ready;
  }

  /** The connection with a free channel, or a new one when every channel is busy with the
   * run's own commands. A channel an observer holds (a sampler's nvidia-smi, seconds at most)
   * is waited for instead: on a loaded controller the sampler's first tick can land between
   * two workloads' starts, and the last workload must not cost the node a second login. */
  private async pick(): Promise<Pooled> {
    let free = this.pool.find((p) => p.inflight < MAX_CHANNELS);
    while (!free && !this.closed && this.pool.some((p) => p.observers > 0)) {
      await new Promise<void>((res) => this.waiting.push(res));
      free = this.pool.find((p) => p.inflight < MAX_CHANNELS);
    }
    if (this.closed)
      throw new SlicecheckError("CONNECTION_LOST", `${this.node.name}: the session is closed`, {
        node: this.node.name,
      });
    free ??= this.add(`all ${MAX_CHANNELS} channels busy`);
    free.inflight++;
    try {
      await free.ready;
    } catch (e) {
      free.inflight--;
      throw e;
    }
    return free;
  }

  async exec(command: Command, opts?: ExecOptions): Promise<ExecResult> {
    const lock = opts?.leased ? this.lock : null;
    const lost = lock?.lost();
    if (lost) throw lost;
    const p = await this.pick();
    try {
      if (opts?.awaitLease && !lock) return await this.awaitingLease(p.t, command, opts);
      if (!lock) return await p.t.exec(command, opts);
      // The check and the change in one shell on the node, inside the command's tagged
      // process: a lease that runs out after the check fences the change it let through.
      const r = await p.t.exec(
        { shell: `${leaseCheck(lock.generation, lock.runTag)} exec ${innerOf(command)}` },
        opts,
      );
      const found = r.exitCode === LOCKED_EXIT ? leaseFound(r.stderr) : null;
      if (found === null) return r;
      const e = leaseLost(this.node.name, `${found}; this run held generation ${lock.generation}`, {
        generation: lock.generation,
      });
      this.error ??= e;
      throw e;
    } finally {
      p.inflight--;
    }
  }

  /** A read that waits on the node for this run's lease (its deadline gets the wait on top).
   * Where the wait saw none (it ran out, or could not read the lease), the read is made once
   * the lock has answered, as without the wait; LEASE_LOST `awaited` if the lock was refused. */
  private async awaitingLease(t: Transport, command: Command, opts: ExecOptions) {
    const tag = runTagFor(this.runId, this.node.name);
    const r = await t.exec(
      // bash where the node has it: its turns then start no process (leaseAwait).
      { shell: `${leaseAwait(tag)} exec ${innerOf(command)}`, bash: true },
      { ...opts, timeoutMs: (opts.timeoutMs ?? 120_000) + LEASE_AWAIT_S * 1000 },
    );
    const found = r.exitCode === LOCKED_EXIT ? leaseFound(r.stderr) : null;
    if (found === null) return r;
    if (await this.lockTaken) return t.exec(command, { ...opts, awaitLease: false });
    throw new SlicecheckError(
      "LEASE_LOST",
      `${this.node.name}: a read waited ${LEASE_AWAIT_S} s for this run's lease and found ${found}`,
      { node: this.node.name, awaited: true },
    );
  }

  /** Throws LEASE_LOST unless the node's lease is still this run's (no lease: nothing to do). */
  async checkLease(): Promise<void> {
    if (this.lock) await this.exec({ shell: "true" }, { leased: true, timeoutMs: 30_000 });
  }

  /**
   * Runs `command` only on a connection that has a channel free now; null when none has. For
   * observers (the utilization sampler) that must not cost the node a second connection: a
   * GPU's 7 instances and the lock fill one connection's budget.
   */
  async execIfFree(command: Command, opts?: ExecOptions): Promise<ExecResult | null> {
    // Declined while a command of the run waits for a channel: observers never starve it.
    const p =
      this.closed || this.waiting.length > 0
        ? undefined
        : this.pool.find((x) => x.inflight < MAX_CHANNELS);
    if (!p) return null;
    p.inflight++;
    p.observers++;
    try {
      await p.ready;
      return await p.t.exec(command, opts);
    } finally {
      p.inflight--;
      p.observers--;
      for (const wake of this.waiting.splice(0)) wake();
    }
  }

  /**
   * Starts the first phase's supervisor now (where workloads will run: as the lock's command
   * starts, else at discovery), so that its login, which a real node's start-up files make
   * 0.2-2 s, is paid beside the lock's and discovery's instead of at the phase's start. It is a
   * shell waiting for requests, and none comes before the lock is taken. The first supervise()
   * takes it; one never taken is closed with the session, or at once if the lock is refused.
   */
  prepareSupervisor(): void {
    if (this.warm || this.closed) return;
    this.warm = this.supervise().catch(() => null);
  }

  /** A node supervisor for one phase's workloads: it holds one channel of a connection until
   * closed, so it is counted as one of that connection's commands. */
  async supervise(): Promise<Supervisor> {
    const warm = this.warm;
    this.warm = null;
    const ready = warm ? await warm : null;
    if (ready) return ready;
    const p = await this.pick();
    let s: Supervisor;
    try {
      if (!p.t.supervise) throw new Error("this transport has no supervisor");
      s = await p.t.supervise();
    } catch (e) {
      p.inflight--;
      throw e;
    }
    let closed = false;
    const release = () => {
      if (closed) return;
      closed = true;
      p.inflight--;
      for (const wake of this.waiting.splice(0)) wake();
    };
    // Without a supervisor (or once it is gone) each command takes a channel of the pool.
    if (s.fallback !== null) release();
    return {
      // A change to the node (`leased`) is checked against the lease on its own channel.
      exec: (c, o) => (s.fallback === null && !o?.leased ? s.exec(c, o) : this.exec(c, o)),
      get fallback() {
        return s.fallback;
      },
      close: async () => {
        await s.close();
        release();
      },
    };
  }

  start(commandLine: string): Promise<RawProcess> {
    return this.first().start(commandLine);
  }

  private first(): Transport {
    const p = this.pool[0];
    if (!p) throw new SlicecheckError("CONNECT", `${this.node.name}: not connected`, {});
    return p.t;
  }

  async killRun(runTag?: string): Promise<number> {
    // Over a connection that still answers: after a lost one, the others (or a new one) do it.
    let why = "no connection";
    for (const p of this.pool) {
      try {
        return await p.t.killRun(runTag);
      } catch (e) {
        why = (e as Error).message; /* try the next connection */
      }
    }
    const t = openTransport(this.node, { runId: this.runId });
    this.countConnection(`kill the run's processes (${why})`);
    try {
      await t.connect();
      return await t.killRun(runTag);
    } finally {
      await t.close().catch(() => {});
    }
  }

  listRun(runTag: string): Promise<RunProcess[]> {
    return this.first().listRun(runTag);
  }

  /** The node's GPUs and instances, read once; `refresh` after the layout changed. */
  async discover(refresh = false): Promise<NodeInventory> {
    const early = this.early;
    this.early = null;
    if (early && (refresh || this.inventory)) early.abort.abort();
    else if (early) this.inventory = await early.inventory;
    if (!this.inventory || refresh) this.inventory = await discoverInstances(this);
    return this.inventory;
  }

  /** `--list --layout`: what the node would have under the run's layout, planned offline. */
  assume(inventory: NodeInventory): void {
    this.inventory = inventory;
  }

  get discovered(): NodeInventory | null {
    return this.inventory;
  }

  /** A prepared supervisor never taken: closed, once it answered (its connection's close ends
   * it otherwise). */
  private async dropWarm(): Promise<void> {
    const warm = this.warm;
    this.warm = null;
    if (warm && (await settledWithin(warm, 5_000))) await (await warm)?.close().catch(() => {});
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const wake of this.waiting.splice(0)) wake();
    this.early?.abort.abort();
    this.early = null;
    this.beside.abort();
    await this.dropWarm();
    await this.lock?.release().catch(() => {});
    this.lock = null;
    await Promise.all(this.pool.map((p) => p.t.close().catch(() => {})));
  }
}

interface Early {
  inventory: Promise<NodeInventory>;
  along: Map<string, Promise<Output[]>>;
  abort: AbortController;
}

/** A command as the shell text that runs it after a lease's check or wait (`exec` of it). */
function innerOf(command: Command): string {
  return "argv" in command ? quoteArgv(command.argv) : `sh -c ${quote(command.shell)}`;
}

/** Opens a session per node, at most `concurrency` connecting at once (sshd's MaxStartups
 * drops unauthenticated connections beyond 10 in flight). A node that cannot be opened keeps
 * its error in `session.error`; it never costs the other nodes theirs. */
export async function openSessions(
  nodes: readonly NodeSpec[],
  runId: string,
  o: SessionOpenOptions & { concurrency?: number },
): Promise<NodeSession[]> {
  const sessions = nodes.map((n) => new NodeSession(n, runId));
  const width = Math.max(1, Math.min(o.concurrency ?? 16, 16));
  let next = 0;
  const worker = async () => {
    while (next < sessions.length) {
      const s = sessions[next++]!;
      await s.open(o).catch(() => {});
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, sessions.length) }, worker));
  return sessions;
}
