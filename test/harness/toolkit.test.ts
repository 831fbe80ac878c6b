// The toolkit probe's output as the run and doctor read it (unit): the toolkit's release, what
// nvidia-container-cli reports, each spec file judged against nvidia-smi -L, and what could not
// be read; and the inventory's `regenerate_cdi`.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cdiCheck } from "../../src/harness/run-cdi.js";
import { interpretToolkit } from "../../src/harness/toolkit.js";
import { loadInventory } from "../../src/inventory/load.js";
import { tempDir } from "../helpers/tmp.js";

const fixture = (f: string) => readFileSync(join("test/fixtures/toolkit", f), "utf8");
const prefixed = (k: string, text: string) =>
  text
    .split("\n")
    .filter((l) => !l.startsWith("# source:"))
    .map((l) => `${k}=${l}`)
    .join("\n");
const SMI = (mig1: string) =>
  [
    "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-4b1f6d0e-2a9c-4e7b-9d3f-1c2b3a4d5e6f)",
    "  MIG 3g.40gb     Device  0: (UUID: MIG-7e2d9c4a-1b3f-5a6e-8d0c-2f4e6a8b0c1d)",
    `  MIG 3g.40gb     Device  1: (UUID: ${mig1})`,
  ].join("\n");
const probe = (mig1: string, extra = "") =>
  [
    "cdi_dirs=/etc/cdi /var/run/cdi",
    "ctk_rc=0",
    prefixed("ctk", fixture("nvidia-ctk-version.txt")),
    "cli_rc=0",
    prefixed("cli", fixture("nvidia-container-cli-info.txt")),
    "spec_file=/etc/cdi/nvidia.yaml",
    prefixed("spec", fixture("cdi-spec-mig.yaml")),
    extra,
    "smi_rc=0",
    prefixed("smi", SMI(mig1)),
  ].join("\n");

describe("container toolkit probe (unit)", () => {
  it("reads the release, the driver's CUDA, and judges the spec fresh", () => {
    const s = interpretToolkit(probe("MIG-a1c3e5f7-0b2d-5f4a-9c6e-8d0b2f4a6c8e"));
    assert.equal(s.ctk, "1.17.8");
    assert.equal(s.containerCli?.cuda, "12.2");
    assert.equal(s.cdi?.status, "fresh");
    assert.equal(s.cdiDir, "/etc/cdi");
    assert.deepEqual(s.errors, []);
    const c = cdiCheck("gpu01", "all-3g", { state: s, regenerated: null });
    assert.equal(c?.status, "passed");
  });

  it("a relayout's new UUID makes it stale: the run's check fails CDI_STALE with the fix", () => {
    const s = interpretToolkit(probe("MIG-00000000-1111-5222-8333-444444444444"));
    assert.equal(s.cdi?.status, "stale");
    const c = cdiCheck("gpu01", "all-3g", { state: s, regenerated: null });
    assert.equal(c?.status, "failed");
    assert.equal(c?.code, "CDI_STALE");
    assert.match(
      c?.message ?? "",
      /fix: nvidia-ctk cdi generate --output=\/etc\/cdi\/nvidia\.yaml/,
    );
  });

  it("no toolkit and no spec: nothing to check; an unreadable spec is said, not passed", () => {
    const none = interpretToolkit(
      [
        "cdi_dirs=/etc/cdi",
        "ctk_rc=127",
        "cli_rc=127",
        "smi_rc=0",
        prefixed("smi", SMI("MIG-00000000-1111-5222-8333-444444444444")),
      ].join("\n"),
    );
    assert.equal(none.ctk, null);
    assert.equal(none.cdi?.status, "absent");
    assert.equal(cdiCheck("gpu01", "c", { state: none, regenerated: null }), null);
    const bad = interpretToolkit(
      ["ctk_rc=0", "spec_file=/etc/cdi/broken.yaml", "spec=kind: [", "smi_rc=0"].join("\n"),
    );
    assert.match(bad.errors.join(";"), /cdi-spec/);
    assert.equal(bad.cdi, null);
    const c = cdiCheck("gpu01", "c", { state: bad, regenerated: null });
    assert.equal(c?.status, "broken");
  });

  it("inventory regenerate_cdi: true asks for it on that node only; anything else is refused", () => {
    const dir = tempDir("cdi-inv");
    const f = join(dir, "inv.yaml");
    writeFileSync(
      f,
      "nodes:\n  n1: {host: 127.0.0.1, regenerate_cdi: true}\n  n2: {host: 127.0.0.2}\n",
    );
    const inv = loadInventory(f, { sshConfig: null });
    assert.equal(inv.nodes[0]!.regenerateCdi, true);
    assert.equal(inv.nodes[1]!.regenerateCdi, undefined);
    writeFileSync(f, "nodes:\n  n1: {host: 127.0.0.1, regenerate_cdi: sometimes}\n");
    assert.throws(() => loadInventory(f, { sshConfig: null }), /regenerate_cdi/);
  });
});
