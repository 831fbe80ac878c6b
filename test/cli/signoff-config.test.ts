// The `signoff:` section of slicecheck.config.yaml: absent, the documented default judges the
// run; given, its keys override the default and the policy is named by its file and line; a bad
// value is refused with that file and line (exit 3) before any node is touched.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfigFile } from "../../src/cli/config/file.js";
import { main } from "../../src/cli/main.js";
import { isSlicecheckError } from "../../src/errors.js";
import { DEFAULT_POLICY, describePolicy } from "../../src/verdicts/coverage.js";
import { tempDir } from "../helpers/tmp.js";

function config(text: string): string {
  const dir = tempDir("signoff-config");
  mkdirSync(join(dir, ".git"));
  writeFileSync(join(dir, "slicecheck.config.yaml"), text);
  return dir;
}

function refused(text: string): string {
  const file = join(config(text), "slicecheck.config.yaml");
  try {
    loadConfigFile(file);
  } catch (e) {
    assert.ok(isSlicecheckError(e) && e.code === "CONFIG", String(e));
    return e.message;
  }
  assert.fail(`accepted:\n${text}`);
}

describe("signoff: in slicecheck.config.yaml", () => {
  it("absent: no policy of the file's own (the default applies), other settings unchanged", () => {
    const f = loadConfigFile(join(config("duration: 5m\n"), "slicecheck.config.yaml"));
    assert.equal(f.signoff, null);
    assert.equal(f.values.get("duration")?.value, "5m");
    assert.equal(
      describePolicy(DEFAULT_POLICY),
      "every instance an aggressor once; fault kinds oom, crash, kill, hang, noisy; health and layout assessed; tenant confinement assessed; windows of at least 30 s",
    );
  });

  it("given: overrides key by key and is named by its file and line", () => {
    const f = loadConfigFile(
      join(
        config(
          "duration: 1m\nsignoff:\n  name: nightly\n  aggressors: 2\n  faults: [oom, crash]\n  suites: health,layout,slurm\n  min_window: 1m\n",
        ),
        "slicecheck.config.yaml",
      ),
    );
    assert.deepEqual(f.signoff, {
      source: "slicecheck.config.yaml:2",
      name: "nightly",
      aggressors: 2,
      faults: ["oom", "crash"],
      suites: ["health", "layout", "slurm"],
      minWindowS: 60,
      confinement: true,
    });
    // Confinement is waived only in so many words, and the policy's text says so.
    const waived = loadConfigFile(
      join(config("signoff:\n  confinement: false\n"), "slicecheck.config.yaml"),
    ).signoff!;
    assert.equal(waived.confinement, false);
    assert.match(describePolicy(waived), /; tenant confinement waived;/);
  });

  it("bad values are refused naming the file and the line", () => {
    assert.match(
      refused("signoff:\n  faults: [oom, melt]\n"),
      /slicecheck\.config\.yaml:2: signoff\.faults: unknown fault kind melt; the kinds are oom, crash, kill, hang, noisy/,
    );
    assert.match(
      refused("signoff:\n  name: x\n  agressors: 1\n"),
      /slicecheck\.config\.yaml:3: signoff\.agressors: unknown key; the keys are name, aggressors/,
    );
    assert.match(
      refused("signoff:\n  min_window: soon\n"),
      /:2: signoff\.min_window: expected a duration/,
    );
    assert.match(
      refused("signoff:\n  aggressors: 0\n"),
      /:2: signoff\.aggressors: expected 'all' or a whole number/,
    );
    assert.match(
      refused("signoff:\n  confinement: maybe\n"),
      /:2: signoff\.confinement: expected true \(required, the default\) or false \(waived\)/,
    );
    assert.match(
      refused("signoff:\n  suites: [isolation, helth]\n"),
      /:2: signoff\.suites: unknown suite isolation, helth/,
    );
  });

  it("`run` with a bad policy exits 3 before any node is touched", async () => {
    const dir = config("signoff:\n  faults: melt\n");
    let err = "";
    const code = await main(
      ["node", "slicecheck", "run", "-i", join(dir, "no-such-inventory.yaml")],
      {
        out: () => {},
        err: (l) => {
          err += `${l}\n`;
        },
      },
      { cwd: dir, env: {} },
    );
    assert.equal(code, 3, err);
    assert.match(err, /slicecheck\.config\.yaml:2: signoff\.faults: unknown fault kind melt/);
    assert.doesNotMatch(err, /no-such-inventory/);
  });
});
