// Runs the suite files in-process with mocha (serially: allure-mocha does not work in mocha 12's
// parallel mode), while allure-mocha reports live and every test becomes one check record.
// Work that ran concurrently with other tests (all instances' stress at once) carries its own
// time span, which replaces the test's in the Allure result, so durations are the real ones.
import { pathToFileURL } from "node:url";
import * as allure from "allure-js-commons";
import AllureMochaReporter from "allure-mocha";
import Mocha from "mocha";
import { allureStepOf } from "../report/allure-complete.js";
import { GuardedWriter } from "../report/allure-writer.js";
import { HARNESS_SUITE } from "../util/suite-registry.js";
import type { CheckRecord } from "../verdicts/checks.js";
import { classify } from "../verdicts/checks.js";
import { broken, current, fail, SCOPE_KEY } from "./api.js";
import { HarnessContext } from "./context.js";
import { type PlannedStep, SUITE_OVERHEAD_S } from "./progress.js";
import type { Spans } from "./spans.js";
import { modulePaths, prepareLoaders } from "./suite-loader.js";
import type { SuiteFile } from "./suites.js";

export interface MochaRunOptions {
  files: readonly SuiteFile[];
  grep?: string;
  bail?: boolean;
  /** Allure results go here; null for none (--no-allure). */
  allureResults: string | null;
  environmentInfo: Record<string, string>;
  categories: unknown[];
  /** Shown in Allure as parameters, kept out of the history id. */
  parameters(node: string | null): Record<string, string>;
  /** The Allure labels of a check's suite (epic, feature, severity). */
  labels(suite: string): { epic: string; feature: string; severity: string };
  runId: string;
  /** Checks the harness itself decided before the suites (a node unreachable, an apply
   * refused): reported through the same mocha run, so Allure shows them as well. */
  preChecks?: PreCheck[];
  /** Once the suite files are loaded: each node's suite steps, with the tests each runs there
   * and the workload time it declared (for the progress estimate). */
  planned?(steps: Map<string, PlannedStep[]>): void;
  /** The run's spans: loading the suite files is one (where the run's time goes). */
  spans?: Spans;
}

export type PreCheck = Pick<
  CheckRecord,
  "suite" | "node" | "title" | "status" | "code" | "message"
>;

const RUN_FILE = "suites/run";

/** The harness's own checks as a first root suite: each test ends as the check was decided. */
function addPreChecks(mocha: Mocha, pre: readonly PreCheck[]): void {
  if (pre.length === 0) return;
  const root = Mocha.Suite.create(mocha.suite, "run");
  root.file = RUN_FILE;
  const byNode = new Map<string, PreCheck[]>();
  for (const p of pre) byNode.set(p.node ?? "run", [...(byNode.get(p.node ?? "run") ?? []), p]);
  for (const [node, list] of byNode) {
    const s = Mocha.Suite.create(root, node);
    s.file = RUN_FILE;
    (s as unknown as Record<symbol, unknown>)[SCOPE_KEY] = { node };
    for (const p of list) {
      const t = new Mocha.Test(p.title, () => {
        if (p.status === "failed") fail(p.code, p.message);
        if (p.status === "broken") broken(p.code, p.message);
        // A passed harness check says what it found (`drained sim01, its jobs ended after 3 s`).
        if (p.message) current().note(p.message);
      });
      t.file = RUN_FILE;
      s.addTest(t);
    }
  }
}

/** Loads every suite file into a fresh mocha root. The query string gives each run its own
 * module instance: ES modules are cached per URL, and a suite defines its tests at load time. */
export async function loadSuites(
  mocha: Mocha,
  ctx: HarnessContext,
  files: readonly SuiteFile[],
  runId: string,
): Promise<void> {
  const paths = modulePaths(files);
  await prepareLoaders(files, paths);
  for (const [i, f] of files.entries()) {
    ctx.loading = f.name;
    const ctxObj = globalThis as unknown as Mocha.MochaGlobals;
    // The `file` handed to mocha is the suite's stable name: Allure's history id hashes it.
    mocha.suite.emit("pre-require", ctxObj, f.identity, mocha);
    try {
      const mod = await import(`${pathToFileURL(paths[i] ?? f.path).href}?run=${runId}`);
      mocha.suite.emit("require", mod, f.identity, mocha);
      mocha.suite.emit("post-require", ctxObj, f.identity, mocha);
    } finally {
      ctx.loading = null;
    }
  }
}

type AnyTest = Mocha.Test & { [k: symbol]: unknown };

function suiteNameOf(test: Mocha.Runnable, files: readonly SuiteFile[]): string {
  if (test.file === RUN_FILE) return HARNESS_SUITE;
  return files.find((f) => f.identity === test.file)?.name ?? test.file ?? "suite";
}

function fullTitleBelowRoot(test: Mocha.Runnable): string {
  return test.titlePath().join(" › ");
}

/** Tests below `suite` that have not run (their before-all hook failed). */
function unrun(suite: Mocha.Suite): Mocha.Test[] {
  const out: Mocha.Test[] = [];
  const walk = (s: Mocha.Suite) => {
    for (const t of s.tests) if (t.state === undefined && !t.isPending()) out.push(t);
    for (const c of s.suites) walk(c);
  };
  walk(suite);
  return out;
}

export interface MochaOutcome {
  /** Tests that mocha ran (or skipped). */
  total: number;
  /** Allure result writes that failed (a full disk under --out): the first is the cause. */
  writeErrors: unknown[];
}

/** What the running test has so far: its failure, its check (for Allure's result), the count. */
interface Cursor {
  failure: unknown;
  live: CheckRecord | null;
  total: number;
}

/** allure-mocha's hook before a result is written: the judged work's span, status and steps. */
function allureListener(ctx: HarnessContext, cur: Cursor) {
  return {
    beforeTestResultWrite: (result: {
      start?: number;
      stop?: number;
      status?: string;
      statusDetails?: { message?: string };
      steps: unknown[];
    }) => {
      const r = ctx.running ?? cur.live;
      if (!r) return;
      // The time span of the work judged, not of the test that waited for it.
      result.start = r.startMs;
      result.stop = Math.max(r.stopMs, Date.now());
      const c = classify(cur.failure);
      if (result.status !== "skipped") {
        result.status = c.status;
        if (c.status !== "passed")
          result.statusDetails = { ...result.statusDetails, message: `[${c.code}] ${c.message}` };
      }
      for (const s of r.steps) result.steps.push(allureStepOf(s));
    },
  };
}

function newMocha(
  ctx: HarnessContext,
  o: MochaRunOptions,
  cur: Cursor,
  writer: GuardedWriter | null,
): Mocha {
  const quiet = class extends Mocha.reporters.Base {};
  return new Mocha({
    reporter: (writer ? AllureMochaReporter : quiet) as unknown as Mocha.ReporterConstructor,
    reporterOptions: writer
      ? {
          resultsDir: o.allureResults,
          // Overrides allure-mocha's own FileSystemWriter (its options are spread after it).
          writer,
          environmentInfo: o.environmentInfo,
          categories: o.categories,
          listeners: [allureListener(ctx, cur)],
        }
      : {},
    timeout: 0,
    forbidOnly: false,
  });
}

type InstanceRef = CheckRecord["instance"];
function instanceOf(scope: ReturnType<typeof HarnessContext.scopeOf>): InstanceRef {
  const i = scope.instance;
  return i ? { profile: i.profile, placement: i.placement, label: i.label, uuid: i.uuid } : null;
}

/** The Allure labels and parameters of a test that begins. */
function labelTest(
  ctx: HarnessContext,
  o: MochaRunOptions,
  suite: string,
  scope: ReturnType<typeof HarnessContext.scopeOf>,
  record: CheckRecord,
): void {
  const inst = scope.instance ?? null;
  const view = scope.node ? ctx.views.get(scope.node) : undefined;
  const gpu = view?.gpus.find((g) => g.index === scope.gpu);
  const l = o.labels(suite);
  void allure.epic(l.epic);
  void allure.feature(l.feature);
  void allure.severity(l.severity);
  if (scope.node) void allure.parentSuite(scope.node);
  void allure.suite(gpu?.title ?? suite);
  void allure.subSuite(inst?.title ?? suite);
  if (scope.node) void allure.parameter("node", scope.node);
  // Shown, but not part of the history id: one test keeps one identity across drivers.
  for (const [k, v] of Object.entries(o.parameters(scope.node ?? null)))
    void allure.parameter(k, v, { excluded: true });
  if (inst) void allure.parameter("instance UUID", inst.uuid, { excluded: true });
  void allure.parameter("check", record.id, { excluded: true, mode: "hidden" });
}

function onBegin(ctx: HarnessContext, o: MochaRunOptions, cur: Cursor, test: Mocha.Test): void {
  cur.failure = undefined;
  cur.total++;
  const scope = HarnessContext.scopeOf(test as AnyTest, SCOPE_KEY);
  const suite = suiteNameOf(test, o.files);
  const record = ctx.begin({
    suite,
    node: scope.node ?? null,
    gpu: scope.gpu ?? null,
    instance: instanceOf(scope),
    title: test.title,
    fullTitle: fullTitleBelowRoot(test),
    figures: {},
    evidence: [],
    steps: [],
    parameters: {},
  });
  cur.live = record;
  if (scope.node)
    ctx.onProgress?.({
      kind: "phase",
      node: scope.node,
      key: suite,
      detail: scope.instance?.profile ?? (scope.gpu !== undefined ? `GPU ${scope.gpu}` : undefined),
      atMs: Date.now(),
    });
  if (o.allureResults !== null) labelTest(ctx, o, suite, scope, record);
}

/** A failed before-all hook: the tests below it never start. Each is a broken check. */
function onHookFailed(ctx: HarnessContext, o: MochaRunOptions, hook: Mocha.Runnable, err: unknown) {
  const c = classify(err);
  for (const t of hook.parent ? unrun(hook.parent) : []) {
    const scope = HarnessContext.scopeOf(t as AnyTest, SCOPE_KEY);
    ctx.sink.harness({
      suite: suiteNameOf(t, o.files),
      node: scope.node ?? null,
      gpu: scope.gpu ?? null,
      instance: instanceOf(scope),
      title: t.title,
      fullTitle: fullTitleBelowRoot(t),
      status: "broken",
      code: c.status === "broken" ? c.code : "HOOK_FAILED",
      message: `not run: ${hook.title} failed: ${c.message}`,
    });
  }
}

function onPending(ctx: HarnessContext, o: MochaRunOptions, test: Mocha.Test): void {
  if (ctx.running) return; // this.skip() inside a running test: ended at its test end
  const scope = HarnessContext.scopeOf(test as AnyTest, SCOPE_KEY);
  const skipped = ctx.sink.harness({
    suite: suiteNameOf(test, o.files),
    node: scope.node ?? null,
    gpu: scope.gpu ?? null,
    instance: null,
    title: test.title,
    fullTitle: fullTitleBelowRoot(test),
    status: "skipped",
    code: "SKIPPED",
    message: "skipped",
  });
  // allure-mocha has begun the skipped test's result (its listener runs first): it names
  // its check, as every other result does, so Allure and the records pair one to one.
  if (o.allureResults !== null)
    void allure.parameter("check", skipped.id, { excluded: true, mode: "hidden" });
}

function watch(runner: Mocha.Runner, ctx: HarnessContext, o: MochaRunOptions, cur: Cursor) {
  const E = Mocha.Runner.constants;
  runner.on(E.EVENT_TEST_BEGIN, (test: Mocha.Test) => onBegin(ctx, o, cur, test));
  runner.on(E.EVENT_TEST_FAIL, (test: Mocha.Runnable, err: unknown) => {
    if ((test as { type?: string }).type === "hook") onHookFailed(ctx, o, test, err);
    else cur.failure = err;
  });
  runner.on(E.EVENT_TEST_PENDING, (test: Mocha.Test) => onPending(ctx, o, test));
  runner.on(E.EVENT_TEST_END, (test: Mocha.Test) => {
    if (!ctx.running) return;
    ctx.end(cur.failure, test.isPending());
    cur.live = null;
    cur.failure = undefined;
  });
}

export async function runSuites(ctx: HarnessContext, o: MochaRunOptions): Promise<MochaOutcome> {
  const cur: Cursor = { failure: undefined, live: null, total: 0 };
  const writer = o.allureResults !== null ? new GuardedWriter(o.allureResults) : null;
  const mocha = newMocha(ctx, o, cur, writer);
  if (writer)
    ctx.onEvidence = (e) => {
      if (e.path) void allure.attachmentPath(e.name, e.path, e.contentType);
      else void allure.attachment(e.name, e.content ?? "", e.contentType);
    };
  if (o.grep) mocha.grep(o.grep);
  if (o.bail) mocha.bail(true);
  addPreChecks(mocha, o.preChecks ?? []);
  const load = () => loadSuites(mocha, ctx, o.files, o.runId);
  await (o.spans ? o.spans.time("suites: load the suite files", load) : load());
  o.planned?.(suiteSteps(mocha.suite, ctx, o.files, o.grep));
  await new Promise<void>((resolve) =>
    watch(
      mocha.run(() => resolve()),
      ctx,
      o,
      cur,
    ),
  );
  mocha.dispose();
  ctx.onEvidence = null;
  return { total: cur.total, writeErrors: writer?.errors ?? [] };
}

/** Per node, one step per suite file in run order: the tests it will run there (after --grep)
 * and the seconds of work it declared. */
function suiteSteps(
  root: Mocha.Suite,
  ctx: HarnessContext,
  files: readonly SuiteFile[],
  grep?: string,
): Map<string, PlannedStep[]> {
  const re = grep ? new RegExp(grep) : null;
  const units = new Map<string, number>();
  const walk = (s: Mocha.Suite) => {
    for (const t of s.tests) {
      if (t.isPending() || (re && !re.test(t.fullTitle()))) continue;
      const node = HarnessContext.scopeOf(t as AnyTest, SCOPE_KEY).node;
      if (node) {
        const k = `${suiteNameOf(t, files)}\0${node}`;
        units.set(k, (units.get(k) ?? 0) + 1);
      }
    }
    for (const c of s.suites) walk(c);
  };
  walk(root);
  const out = new Map<string, PlannedStep[]>();
  for (const node of ctx.views.keys())
    out.set(
      node,
      files.map((f) => ({
        key: f.name,
        label: f.name,
        expectedS: ctx.declared.get(f.name, node) + SUITE_OVERHEAD_S,
        units: units.get(`${f.name}\0${node}`) ?? 0,
      })),
    );
  return out;
}

/** `--list`: the tests that would run, per node, GPU and instance, without running them. */
export async function listSuites(
  ctx: HarnessContext,
  files: readonly SuiteFile[],
  runId: string,
  grep?: string,
): Promise<{ suite: string; path: string[]; title: string }[]> {
  const mocha = new Mocha({ forbidOnly: false });
  await loadSuites(mocha, ctx, files, runId);
  const re = grep ? new RegExp(grep) : null;
  const out: { suite: string; path: string[]; title: string }[] = [];
  const walk = (s: Mocha.Suite) => {
    for (const t of s.tests) {
      if (re && !re.test(t.fullTitle())) continue;
      out.push({ suite: suiteNameOf(t, files), path: t.titlePath().slice(0, -1), title: t.title });
    }
    for (const c of s.suites) walk(c);
  };
  walk(mocha.suite);
  mocha.dispose();
  return out;
}
