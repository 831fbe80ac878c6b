// `nvidia-smi mig -lgip/-lgipp/-lgi/-lci/-lcip`: values that matter, every layout width, the
// driver's notices, and garbled or truncated copies of real captures.

import assert from "node:assert/strict";
import { parseLci, parseLcip, parseLgi, parseLgip, parseLgipp } from "../../src/nvsmi/index.js";
import { readCapture } from "./captures.js";
import { assertParseError, dropLine, editLine, keepLines, lineOf } from "./helpers.js";

const LGIP_H100_580 = readCapture(
  "nvidia-smi_mig-lgip_H100-80GB-HBM3_580.173.02_2x1g.10gb-in-use.txt",
);
const LGIP_A30 = readCapture("nvidia-smi_mig-lgip_A30-24GB_535.183.01.txt");
const LGIP_A100_PRE525 = readCapture("nvidia-smi_mig-lgip_A100-PCIe-40GB_pre-R525.txt");
const LGIP_H200 = readCapture("nvidia-smi_mig-lgip_H200-141GB_580.173.02_2x1g.18gb-in-use.txt");
const LGI_GUIDE_54 = readCapture("nvidia-smi_mig-lgi_A100-SXM4-40GB_guide_2-1-1-1-1-1.txt");
const LGI_A30_57 = readCapture("nvidia-smi_mig-lgi_A30-24GB_535.183.01_3gi.txt");
const LGI_H100_59 = readCapture("nvidia-smi_mig-lgi_H100-80GB-HBM3_580.173.02_mixed.txt");
const LCI_GUIDE = readCapture("nvidia-smi_mig-lci-gi1_A100-SXM4-40GB_guide_3x1c.txt");
const LCI_H100_MIXED = readCapture("nvidia-smi_mig-lci_H100-80GB-HBM3_580.173.02_mixed.txt");
const LCIP_A100 = readCapture("nvidia-smi_mig-lcip-gi1_A100-PCIe-80GB_515.86.01_3g.40gb.txt");
const LCIP_A30 = readCapture("nvidia-smi_mig-lcip-gi2_A30-24GB_535.183.01_2g.12gb.txt");
const LGIPP_GUIDE = readCapture("nvidia-smi_mig-lgipp_A100-SXM4-40GB_guide.txt");
const LGIPP_PRE525 = readCapture("nvidia-smi_mig-lgipp_A100-PCIe-40GB_pre-R525.txt");

describe("nvsmi lgip", () => {
  it("reads the 81-column R580 layout with in-use counts", () => {
    const { gpus } = parseLgip(LGIP_H100_580);
    assert.equal(gpus.length, 1);
    const profiles = gpus[0]!.profiles;
    assert.deepEqual(
      profiles.map((p) => [p.name, p.id, p.free, p.total]),
      [
        ["1g.10gb", 19, 5, 7],
        ["1g.10gb+me", 20, 1, 1],
        ["1g.20gb", 15, 2, 4],
        ["2g.20gb", 14, 2, 3],
        ["3g.40gb", 9, 1, 2],
        ["4g.40gb", 5, 1, 1],
        ["7g.80gb", 0, 0, 1],
      ],
    );
    assert.deepEqual(profiles[0], {
      name: "1g.10gb",
      id: 19,
      free: 5,
      total: 7,
      memoryGiB: 9.75,
      p2p: false,
      sm: 16,
      dec: 1,
      enc: 0,
      ce: 1,
      jpeg: 1,
      ofa: 0,
    });
    const big = profiles.at(-1)!;
    assert.deepEqual(
      [big.memoryGiB, big.sm, big.dec, big.ce, big.jpeg, big.ofa],
      [79.25, 132, 7, 8, 7, 1],
    );
  });

  it("reads the 79-column layout: A30 +me profiles and the pre-R525 A100 table", () => {
    const a30 = parseLgip(LGIP_A30).gpus[0]!.profiles;
    assert.deepEqual(
      a30.map((p) => `${p.name}:${p.id}:${p.memoryGiB}`),
      [
        "1g.6gb:14:5.81",
        "1g.6gb+me:21:5.81",
        "2g.12gb:5:11.69",
        "2g.12gb+me:6:11.69",
        "4g.24gb:0:23.44",
      ],
    );
    const meA30 = a30[1]!;
    assert.deepEqual([meA30.jpeg, meA30.ofa], [1, 1]);
    const a100 = parseLgip(LGIP_A100_PRE525).gpus[0]!.profiles;
    assert.equal(
      a100.find((p) => p.id === 15),
      undefined,
      "no 1g.10gb (ID 15) before R525",
    );
    assert.equal(a100.find((p) => p.id === 0)!.memoryGiB, 39.5);
  });

  it("reads H200 names and a three-digit memory value", () => {
    const last = parseLgip(LGIP_H200).gpus[0]!.profiles.at(-1)!;
    assert.deepEqual([last.name, last.memoryGiB, last.free], ["7g.141gb", 140, 0]);
  });

  it("groups rows by GPU when a host prints several GPUs", () => {
    const secondGpu = LGIP_A30.split("\n")
      .filter((l) => !l.startsWith("# source:"))
      .map((l) => l.replace(/^\| {3}0 {2}/, "|   1  "))
      .join("\n");
    const { gpus } = parseLgip(`${LGIP_A30}${secondGpu}`);
    assert.deepEqual(
      gpus.map((g) => [g.index, g.profiles.length]),
      [
        [0, 5],
        [1, 5],
      ],
    );
  });

  it("reports the driver's message when it prints no table", () => {
    assert.deepEqual(parseLgip("No MIG-enabled devices found.\n"), {
      gpus: [],
      notices: [{ kind: "mig-disabled", reason: null, message: "No MIG-enabled devices found." }],
    });
    assert.deepEqual(
      parseLgip("Failed to display GPU instance profiles: Unknown Error\n").notices,
      [
        {
          kind: "error",
          reason: "Unknown Error",
          message: "Failed to display GPU instance profiles: Unknown Error",
        },
      ],
    );
  });

  it("skips prompts, blank lines and NCCL chatter around and inside the output", () => {
    const lines = LGIP_A30.split("\n");
    lines.splice(1, 0, "$ sudo nvidia-smi mig -lgip", "");
    lines.splice(9, 0, "node1:123:123 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>");
    lines.push("root@gpu01:~# ");
    assert.deepEqual(parseLgip(lines.join("\n")), parseLgip(LGIP_A30));
  });

  it("names the line of a row cut in the middle", () => {
    const no = lineOf(LGIP_H100_580, "MIG 1g.20gb");
    const cut = editLine(LGIP_H100_580, no, (l) => l.slice(0, 40));
    assertParseError(() => parseLgip(cut), "lgip", no);
  });

  it("names the line of a row with a value missing or garbled", () => {
    const no = lineOf(LGIP_H100_580, "MIG 2g.20gb");
    assertParseError(
      () => parseLgip(editLine(LGIP_H100_580, no, (l) => l.replace("19.62", "     "))),
      "lgip",
      no,
    );
    assertParseError(
      () => parseLgip(editLine(LGIP_H100_580, no, (l) => l.replace("2/3", "2-3"))),
      "lgip",
      no,
    );
  });

  it("fails when a profile's second row is lost or the output stops inside a record", () => {
    const first = lineOf(LGIP_H100_580, "MIG 1g.10gb+me");
    // Without its CE/JPEG/OFA row the record ends at the border on the following line.
    assertParseError(() => parseLgip(dropLine(LGIP_H100_580, first + 1)), "lgip", first + 1);
    const stopped = keepLines(LGIP_H100_580, first);
    assertParseError(() => parseLgip(stopped), "lgip", first + 1);
  });

  it("fails on a header word it does not know instead of guessing columns", () => {
    const no = lineOf(LGIP_H100_580, "| GPU   Name");
    const renamed = editLine(LGIP_H100_580, no, (l) => l.replace("P2P", "XYZ"));
    const err = assertParseError(() => parseLgip(renamed), "lgip", no);
    assert.match(err.message, /'XYZ'/);
  });
});

describe("nvsmi lgipp", () => {
  it("reads placements, including the singular 'Placement :' form", () => {
    const { gpus } = parseLgipp(LGIPP_GUIDE);
    assert.deepEqual(gpus[0]!.placements, [
      { profileId: 19, starts: [0, 1, 2, 3, 4, 5, 6], size: 1 },
      { profileId: 20, starts: [0, 1, 2, 3, 4, 5, 6], size: 1 },
      { profileId: 15, starts: [0, 2, 4, 6], size: 2 },
      { profileId: 14, starts: [0, 2, 4], size: 2 },
      { profileId: 9, starts: [0, 4], size: 4 },
      { profileId: 5, starts: [0], size: 4 },
      { profileId: 0, starts: [0], size: 8 },
    ]);
    const pre525 = parseLgipp(LGIPP_PRE525).gpus[0]!.placements.map((p) => p.profileId);
    assert.deepEqual(pre525, [19, 20, 14, 9, 5, 0]);
  });

  it("keeps a profile name when the line carries one", () => {
    const { gpus } = parseLgipp("GPU  1 Profile ID  9 MIG 3g.40gb Placements: {0,4}:4\n");
    assert.deepEqual(gpus, [
      { index: 1, placements: [{ profileId: 9, starts: [0, 4], size: 4, name: "3g.40gb" }] },
    ]);
  });

  it("names a cut line", () => {
    const no = lineOf(LGIPP_GUIDE, "Profile ID 14");
    const cut = editLine(LGIPP_GUIDE, no, (l) => l.slice(0, l.indexOf("{") + 4));
    assertParseError(() => parseLgipp(cut), "lgipp", no);
  });
});

describe("nvsmi lgi", () => {
  it("reads the 54-, 57- and 59-column layouts alike", () => {
    assert.deepEqual(parseLgi(LGI_GUIDE_54).gpuInstances.at(-1), {
      gpu: 0,
      name: "2g.10gb",
      profileId: 14,
      id: 5,
      start: 4,
      size: 2,
    });
    assert.deepEqual(
      parseLgi(LGI_A30_57).gpuInstances.map((g) => [g.id, g.profileId, g.start, g.size]),
      [
        [3, 14, 0, 1],
        [4, 14, 1, 1],
        [2, 5, 2, 2],
      ],
    );
    assert.deepEqual(parseLgi(LGI_H100_59).gpuInstances, [
      { gpu: 0, name: "1g.10gb", profileId: 19, id: 13, start: 6, size: 1 },
      { gpu: 0, name: "3g.40gb", profileId: 9, id: 1, start: 0, size: 4 },
      { gpu: 0, name: "1g.10gb+me", profileId: 20, id: 11, start: 4, size: 1 },
    ]);
  });

  it("tells MIG off from no instances", () => {
    const empty = parseLgi(readCapture("nvidia-smi_mig-lgi_A30-24GB_535.183.01_empty.txt"));
    assert.deepEqual(empty.notices, [
      { kind: "none", reason: "Not Found", message: "No GPU instances found: Not Found" },
    ]);
    const off = parseLgi(
      readCapture("nvidia-smi_mig-lgi_H100-80GB-HBM3_580.173.02_mig-disabled.txt"),
    );
    assert.equal(off.notices?.[0]?.kind, "mig-disabled");
    assert.equal(
      parseLgi("No GPU instances found: Permission denied\n").notices?.[0]?.kind,
      "error",
    );
  });

  it("names a garbled placement and a missing closing border", () => {
    const no = lineOf(LGI_H100_59, "MIG 3g.40gb");
    assertParseError(
      () => parseLgi(editLine(LGI_H100_59, no, (l) => l.replace("0:4", "0;4"))),
      "lgi",
      no,
    );
    assertParseError(() => parseLgi(keepLines(LGI_H100_59, no)), "lgi", no + 1);
  });
});

describe("nvsmi lci", () => {
  it("reads the layout without a Placement column (start/size null)", () => {
    const { computeInstances } = parseLci(LCI_GUIDE);
    assert.deepEqual(
      computeInstances.map((c) => [c.gpuInstanceId, c.id, c.name, c.start, c.size]),
      [
        [1, 0, "1c.3g.20gb", null, null],
        [1, 1, "1c.3g.20gb", null, null],
        [1, 2, "1c.3g.20gb", null, null],
      ],
    );
  });

  it("reads the layout with Placement", () => {
    assert.deepEqual(parseLci(LCI_H100_MIXED).computeInstances[1], {
      gpu: 0,
      gpuInstanceId: 1,
      name: "1c.3g.40gb",
      profileId: 0,
      id: 0,
      start: 2,
      size: 1,
    });
  });

  it("reports a permissions failure as a notice, not as an empty listing", () => {
    const r = parseLci(
      readCapture("nvidia-smi_mig-lci_unknown_unknown_error-insufficient-permissions.txt"),
    );
    assert.deepEqual(r.notices, [
      {
        kind: "error",
        reason: "Insufficient Permissions",
        message: "Failed to display compute instances: Insufficient Permissions",
      },
    ]);
  });

  it("names a row with an extra value and a lost border", () => {
    const no = lineOf(LCI_H100_MIXED, "MIG 1c.3g.40gb");
    assertParseError(
      () => parseLci(editLine(LCI_H100_MIXED, no, (l) => l.replace("2:1", "2:1 7"))),
      "lci",
      no,
    );
    // Two records glued together read as one record of two rows.
    assertParseError(() => parseLci(dropLine(LCI_H100_MIXED, no + 1)), "lci", no + 1);
  });
});

describe("nvsmi lcip", () => {
  it("reads both rows of each profile and the default mark", () => {
    const { profiles } = parseLcip(LCIP_A100);
    assert.deepEqual(profiles[2], {
      gpu: 0,
      gpuInstanceId: 1,
      name: "3g.40gb",
      id: 2,
      isDefault: true,
      free: 1,
      total: 1,
      sm: 42,
      dec: 2,
      enc: 0,
      ofa: 0,
      ce: 3,
      jpeg: 0,
    });
    assert.deepEqual(
      profiles.map((p) => [p.name, p.id, p.isDefault, p.free, p.total, p.sm]),
      [
        ["1c.3g.40gb", 0, false, 3, 3, 14],
        ["2c.3g.40gb", 1, false, 1, 1, 28],
        ["3g.40gb", 2, true, 1, 1, 42],
      ],
    );
    const a30 = parseLcip(LCIP_A30).profiles;
    assert.deepEqual(
      a30.map((p) => [p.name, p.id, p.isDefault, p.free, p.total, p.ce]),
      [
        ["1c.2g.12gb", 0, false, 0, 2, 2],
        ["2g.12gb", 1, true, 0, 1, 2],
      ],
    );
  });

  it("names a lost second row and a garbled default mark", () => {
    const no = lineOf(LCIP_A100, "MIG 2c.3g.40gb");
    assertParseError(() => parseLcip(dropLine(LCIP_A100, no + 1)), "lcip", no + 1);
    const last = lineOf(LCIP_A100, "MIG 3g.40gb");
    assertParseError(
      () => parseLcip(editLine(LCIP_A100, last, (l) => l.replace("2* ", "2# "))),
      "lcip",
      last,
    );
  });
});
