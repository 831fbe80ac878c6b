import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

const cap = (name: string) => join("fixtures/captures", name);

describe("slicecheck parse", () => {
  it("prints the documented JSON for a real -L capture", async () => {
    const r = await cli(
      "parse",
      "gpus",
      cap("nvidia-smi_-L_H100-80GB-HBM3_580.173.02_mixed.txt"),
      "--json",
    );
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout);
    assert.equal(j.gpus[0].uuid, "GPU-0d0831da-0c98-2717-6446-8acd91d39b65");
    assert.equal(j.gpus[0].migDevices[0].name, "1c.3g.40gb");
    assert.equal(j.gpus[0].migDevices[0].uuid, "MIG-5ff0d535-9a82-5af6-80df-768b9d3ac092");
  });

  it("parses workload captures too (nccl-tests)", async () => {
    const r = await cli(
      "parse",
      "nccl-tests",
      cap("nccl-tests_all_reduce_perf_rtx5090_1gpu_busbw-zero.txt"),
      "--json",
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).ranks[0].name, "NVIDIA GeForce RTX 5090");
  });

  it("exits 3 on a truncated record, naming the file and the line of the file", async () => {
    const dir = tempDir("parse");
    const f = join(dir, "cut.txt");
    writeFileSync(
      f,
      "# source: test\nGPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0d0831da-0c98-2717-6446-8acd91d39b65)\n  MIG 1g.10gb     Device  0: (UUID: MIG-5ff0d5",
    );
    const r = await cli("parse", "gpus", f);
    assert.equal(r.code, 3);
    assert.match(r.stderr, new RegExp(`${f.replaceAll("/", "\\/")}: gpus: line 3: expected`));
  });

  it("exits 3 on an unknown kind, listing the kinds", async () => {
    const r = await cli("parse", "lspci", cap("nvidia-smi_-L_A30-24GB_535.183.01_2dev.txt"));
    assert.equal(r.code, 3);
    assert.match(
      r.stderr,
      /unknown parse kind 'lspci'; one of: gpus query lgip .* nccl-tests gpu-burn dcgmi/,
    );
  });

  const dir = tempDir("parse-fields");
  // A real --format=csv capture with its header line dropped: what --format=csv,noheader prints.
  const headerless = join(dir, "noheader.txt");
  writeFileSync(
    headerless,
    readFileSync(cap("nvidia-smi_query-gpu-csv_4gpu_unknown_mig-mode-current-pending.txt"), "utf8")
      .split("\n")
      .filter((l) => !l.startsWith("# source:") && !l.startsWith("uuid,"))
      .join("\n"),
  );

  it("reads headerless --format=csv,noheader output with --fields", async () => {
    const r = await cli(
      "parse",
      "query",
      "--fields",
      "uuid,mig.mode.current,mig.mode.pending",
      headerless,
      "--json",
    );
    assert.equal(r.code, 0, r.stderr);
    const rows = JSON.parse(r.stdout).rows;
    assert.equal(rows.length, 4);
    assert.deepEqual(rows[0], {
      uuid: "GPU-ec845691-fb46-e16d-abfb-b135308cb39f",
      "mig.mode.current": "Enabled",
      "mig.mode.pending": "Enabled",
    });
  });

  it("without --fields says which option to give, and refuses --fields where it means nothing", async () => {
    const r = await cli("parse", "query", headerless);
    assert.equal(r.code, 3);
    assert.match(
      r.stderr,
      /query: line 1: expected a CSV header line; for --format=csv,noheader output give the queried fields: `slicecheck parse query --fields /,
    );
    const bad = await cli("parse", "query", "--fields", "uuid,,x", headerless);
    assert.equal(bad.code, 3);
    assert.match(bad.stderr, /--fields expects the comma list/);
    const kind = await cli("parse", "gpus", "--fields", "uuid", headerless);
    assert.equal(kind.code, 3);
    assert.match(kind.stderr, /--fields is for the query and apps kinds, not gpus/);
  });

  it("skips pasted prompts: [user@host dir]#, [sudo] password for …:, (venv) $", async () => {
    const f = join(dir, "pasted.txt");
    const body = readFileSync(cap("nvidia-smi_-L_H100-80GB-HBM3_580.173.02_mixed.txt"), "utf8")
      .split("\n")
      .filter((l) => !l.startsWith("# source:"))
      .join("\n");
    writeFileSync(
      f,
      [
        "(venv) $ sudo nvidia-smi -L",
        "[sudo] password for ops:",
        body.trimEnd(),
        "[ops@gpu01 ~]$ ",
        "[root@gpu01 ~]#",
        "",
      ].join("\n"),
    );
    const r = await cli("parse", "gpus", f, "--json");
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).gpus[0].migDevices.length, 3);
  });
});
