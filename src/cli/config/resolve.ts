// Fills a command's options from the environment and slicecheck.config.yaml before its action
// runs: flags > SLICECHECK_* variables > the config file > the command's own default. Each value
// goes through the flag's own parser, so `duration: 5m` in the file and `--duration 5m` are
// checked by the same code, and an error names where the bad value came from.
import { dirname, relative, resolve } from "node:path";
import type { Command, Option } from "commander";
import { isSlicecheckError, SlicecheckError } from "../../errors.js";
import type { SignoffPolicy } from "../../verdicts/coverage.js";
import { type ConfigFile, type ConfigValue, findConfigFile, loadConfigFile } from "./file.js";
import { SETTINGS, type Setting } from "./settings.js";

export interface ConfigContext {
  cwd: string;
  env: NodeJS.ProcessEnv;
}

export type Origin =
  | { kind: "flag" }
  | { kind: "env"; name: string }
  | { kind: "file"; file: string; line: number }
  | { kind: "default" };

export interface Resolved {
  /** The folder the command runs in (origins are shown relative to it). */
  cwd: string;
  /** The config file in effect, or null. */
  file: string | null;
  /** Commander attribute → where its value came from (settings only). */
  origins: Map<string, Origin>;
  /** The config file's sign-off policy (`signoff:`); absent: the default applies. */
  signoff?: SignoffPolicy | null;
  /** The config file's `containers:` images (issue 23); absent or null: none. */
  containers?: Record<string, string> | null;
}

// One command runs per process (and per in-process test call, one after the other), so the
// origins of the command being run are kept for the messages that name them. On globalThis
// under a registry key: a lazily imported command module can get its own copy of this module
// under a loader that keys modules differently (tsx under mocha), and must see the same state.
const KEY = Symbol.for("slicecheck.settings");
type Holder = { [KEY]?: Resolved };

function setCurrent(r: Resolved): Resolved {
  (globalThis as Holder)[KEY] = r;
  return r;
}

export function currentSettings(): Resolved {
  return (globalThis as Holder)[KEY] ?? { cwd: process.cwd(), file: null, origins: new Map() };
}

export function originText(o: Origin, cwd = process.cwd()): string {
  switch (o.kind) {
    case "flag":
      return "flag";
    case "env":
      return `env ${o.name}`;
    case "file":
      return `${displayFile(o.file, cwd)}:${o.line}`;
    default:
      return "default";
  }
}

function displayFile(file: string, cwd: string): string {
  const rel = relative(cwd, file);
  return rel.startsWith("..") ? file : rel;
}

/** How an error about a setting names it: the flag, the variable, or the file and line. */
export function settingLabel(attr: string, flag: string): string {
  const o = currentSettings().origins.get(attr);
  if (o?.kind === "env") return `$${o.name}`;
  if (o?.kind === "file")
    return `${originText(o, currentSettings().cwd)} (${flag.replace(/^--/, "")})`;
  return flag;
}

function applies(s: Setting, cmd: Command): Option | undefined {
  // The sim commands' inventory is the one they write and stop; a configured inventory of real
  // nodes must never be overwritten by `sim up` or read as a simulated cluster.
  if (cmd.parent?.name() === "sim") return undefined;
  if (s.commands && cmd.name() !== "config" && !s.commands.includes(cmd.name())) return undefined;
  return cmd.options.find((o) => o.attributeName() === s.attr);
}

const TRUE = /^(1|true|yes|on)$/i;
const FALSE = /^(0|false|no|off)$/i;

function isPathLike(item: string): boolean {
  return /[/\\]/.test(item) || /\.(m|c)?(j|t)s$/.test(item);
}

/** A file value as the text its flag would be given; paths from the file's own folder. */
function fileText(s: Setting, v: ConfigValue, file: string): string | boolean {
  const base = dirname(file);
  if (typeof v === "boolean") return v;
  if (s.kind === "path") return resolve(base, String(v));
  const text = Array.isArray(v) ? v.join(",") : String(v);
  if (s.key === "suites")
    return text
      .split(",")
      .map((x) => (isPathLike(x.trim()) ? resolve(base, x.trim()) : x.trim()))
      .join(",");
  return text;
}

function parseWith(
  opt: Option,
  s: Setting,
  text: string | boolean,
  where: string,
  what: string,
): unknown {
  if (typeof text === "boolean") return text;
  if (s.kind === "bool") {
    if (TRUE.test(text.trim())) return true;
    if (FALSE.test(text.trim())) return false;
    throw new SlicecheckError(
      "CONFIG",
      `${where}: ${s.key}: expected true or false, got '${text}'; ${what}`,
    );
  }
  if (!opt.parseArg) return text;
  try {
    return opt.parseArg(text, undefined);
  } catch (e) {
    if (!isSlicecheckError(e)) throw e;
    throw new SlicecheckError("CONFIG", `${where}: ${s.key}: ${e.message}; ${what}`, {
      ...e.context,
      setting: s.key,
    });
  }
}

/** Fills `cmd`'s options from the environment and the config file; returns the origins. A
 * command without settings (parse, plan) never reads the file, so a broken one cannot stop it. */
export function applySettings(cmd: Command, ctx: ConfigContext): Resolved {
  const origins = new Map<string, Origin>();
  const wanted = SETTINGS.flatMap((s) => {
    const opt = applies(s, cmd);
    return opt ? [{ s, opt }] : [];
  });
  const path = wanted.length > 0 ? findConfigFile(ctx.cwd) : null;
  const resolved = setCurrent({ cwd: ctx.cwd, file: path, origins });
  // Loaded even when flags override every value: a broken file is refused, not ignored.
  const file: ConfigFile | null = path ? loadConfigFile(path) : null;
  resolved.signoff = file?.signoff ?? null;
  resolved.containers = file?.containers ?? null;
  for (const { s, opt } of wanted) {
    if (cmd.getOptionValueSource(s.attr) === "cli") {
      origins.set(s.attr, { kind: "flag" });
      continue;
    }
    const raw = ctx.env[s.env];
    if (raw !== undefined && raw !== "") {
      const v = parseWith(opt, s, raw, `$${s.env}='${raw}'`, "fix or unset the variable");
      cmd.setOptionValueWithSource(s.attr, v, "env");
      origins.set(s.attr, { kind: "env", name: s.env });
      continue;
    }
    const entry = file?.values.get(s.key);
    if (file && entry) {
      const where = `${displayFile(file.file, ctx.cwd)}:${entry.line}`;
      const text = fileText(s, entry.value, file.file);
      const v = parseWith(opt, s, text, where, "fix the value in the file");
      cmd.setOptionValueWithSource(s.attr, v, "config");
      origins.set(s.attr, { kind: "file", file: file.file, line: entry.line });
      continue;
    }
    origins.set(s.attr, { kind: "default" });
  }
  return resolved;
}
