// slicecheck.config.yaml: found upward from the working folder, validated with zod, every value
// kept with its line so that an error (here or when the value is parsed as its flag would be)
// names the file and the line.
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { isMap, isScalar, LineCounter, type Node, parseDocument } from "yaml";
import { z } from "zod";
import { SlicecheckError } from "../../errors.js";
import { closest } from "../../util/closest.js";
import { yamlToJs } from "../../util/yaml.js";
import type { SignoffPolicy } from "../../verdicts/coverage.js";
import { containersFrom } from "./containers.js";
import { SETTING_KEYS, SETTINGS, type SettingKind } from "./settings.js";
import { signoffPolicyFrom } from "./signoff.js";

export const CONFIG_FILE = "slicecheck.config.yaml";

export type ConfigValue = string | number | boolean | string[];

export interface ConfigFile {
  file: string;
  /** Setting key → its value and the 1-based line of its key. */
  values: Map<string, { value: ConfigValue; line: number }>;
  /** The `signoff:` section as a policy; null when the file has none (the default applies). */
  signoff: SignoffPolicy | null;
  /** The `containers:` section (issue 23): profile or gpuN:START:SIZE → image; null: none. */
  containers?: Record<string, string> | null;
}

/**
 * The nearest slicecheck.config.yaml from `cwd` upward. The search stops after the first folder
 * that holds `.git` (a file in a worktree, a folder in a clone), the project's root, so a file in
 * a home folder above a checkout never applies to it silently; outside any repository it goes up
 * to the file-system root.
 */
export function findConfigFile(cwd: string): string | null {
  let dir = resolve(cwd);
  for (;;) {
    const candidate = join(dir, CONFIG_FILE);
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
    if (existsSync(join(dir, ".git"))) return null;
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

const list = z.union([z.string(), z.array(z.string(), { error: "expected a list of strings" })], {
  error: "expected a comma list or a YAML list of names",
});
const KIND_SCHEMA: Record<SettingKind, z.ZodType> = {
  path: z.string({ error: "expected a path (a string)" }).min(1, "expected a path, got ''"),
  string: z.string({ error: "expected a string" }),
  list,
  duration: z.union([z.string(), z.number()], {
    error: "expected a duration: seconds (30) or with a unit (30s, 5m, 1h)",
  }),
  percent: z.union([z.string(), z.number()], { error: "expected a percentage (5 or 5%)" }),
  int: z.number({ error: "expected a whole number" }).int("expected a whole number"),
  bool: z.boolean({ error: "expected true or false" }),
};

// `signoff:` is a section, not a flag's value: checked on its own (signoff.ts).
const schema = z.strictObject({
  ...Object.fromEntries(SETTINGS.map((s) => [s.key, KIND_SCHEMA[s.kind].optional()])),
  signoff: z.unknown().optional(),
  containers: z.unknown().optional(),
});

function fail(file: string, line: number, what: string): never {
  throw new SlicecheckError("CONFIG", `${file}:${line}: ${what}`, { file, line });
}

export function loadConfigFile(file: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new SlicecheckError(
      "CONFIG",
      `${file}: cannot read the config file: ${(e as NodeJS.ErrnoException).code ?? String(e)}; fix its permissions or remove it`,
      { file },
    );
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const bad = doc.errors[0];
  if (bad)
    fail(
      file,
      lineCounter.linePos(bad.pos[0]).line,
      `not valid YAML: ${bad.message.split("\n")[0]}; fix the YAML syntax at that line`,
    );
  const data = yamlToJs(doc, lineCounter, file, "CONFIG") ?? {};
  const lineOfKey = (key: string): number => {
    if (isMap(doc.contents)) {
      const item = doc.contents.items.find((p) => isScalar(p.key) && p.key.value === key);
      const range = (item?.key as Node | undefined)?.range;
      if (range) return lineCounter.linePos(range[0]).line;
    }
    return 1;
  };
  if (typeof data !== "object" || Array.isArray(data))
    fail(
      file,
      1,
      `expected a mapping of settings (${SETTING_KEYS.join(", ")}), e.g. "duration: 5m"`,
    );
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    if (issue.code === "unrecognized_keys") {
      const key = issue.keys[0]!;
      const near = closest(key, SETTING_KEYS);
      fail(
        file,
        lineOfKey(key),
        `unknown setting '${key}'${near ? ` (did you mean '${near}'?)` : ""}; the settings are ${SETTING_KEYS.join(", ")}`,
      );
    }
    const key = String(issue.path[0]);
    fail(file, lineOfKey(key), `${key}: ${issue.message}; fix the value or remove the line`);
  }
  const values = new Map<string, { value: ConfigValue; line: number }>();
  const { signoff: section, containers: images, ...rest } = parsed.data as Record<string, unknown>;
  for (const [key, value] of Object.entries(rest as Record<string, ConfigValue>)) {
    if (value !== undefined) values.set(key, { value, line: lineOfKey(key) });
  }
  const signoff =
    section === undefined
      ? null
      : signoffPolicyFrom(section, file, text, `${CONFIG_FILE}:${lineOfKey("signoff")}`);
  const containers = images === undefined ? null : containersFrom(images, file, text);
  return { file, values, signoff, containers };
}
