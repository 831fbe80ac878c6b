// `slicecheck config`: every setting's effective value and where it came from (flag, variable,
// file:line, default), so a surprising value can be traced to the line that set it.
import { CONFIG_FILE } from "../config/file.js";
import { originText, type Resolved } from "../config/resolve.js";
import { SETTINGS, type Setting } from "../config/settings.js";
import { displayPath, type Out, table } from "../context.js";

function shown(s: Setting, v: unknown): string {
  if (v === undefined) return s.defaultText;
  if (s.kind === "duration" && typeof v === "number") return `${v}s`;
  if (s.kind === "percent" && typeof v === "number") return `${Number((v * 100).toFixed(6))}%`;
  if (s.kind === "path" && typeof v === "string") return displayPath(v);
  return String(v);
}

export function configCommand(o: Record<string, unknown>, resolved: Resolved, io: Out): number {
  const { file, origins, cwd } = resolved;
  const rows = SETTINGS.map((s) => {
    const origin = origins.get(s.attr) ?? { kind: "default" as const };
    // commander's default for --no-allure is true; anything else unset is the command's default.
    const value = origin.kind === "default" ? undefined : o[s.attr];
    return { s, value, shown: shown(s, value), origin };
  });
  if (o.json) {
    io.out(
      JSON.stringify(
        {
          file: file ?? null,
          settings: rows.map((r) => ({
            key: r.s.key,
            env: r.s.env,
            flag: r.s.flag,
            value: r.value ?? null,
            shown: r.shown,
            origin: originText(r.origin, cwd),
          })),
        },
        null,
        2,
      ),
    );
    return 0;
  }
  io.out(
    file
      ? `config file: ${file}`
      : `config file: none (no ${CONFIG_FILE} in this folder or above it, up to the repository root)`,
  );
  io.out(
    table([
      ["setting", "value", "origin", "variable", "flag"],
      ...rows.map((r) => [r.s.key, r.shown, originText(r.origin, cwd), r.s.env, r.s.flag]),
    ]),
  );
  return 0;
}
