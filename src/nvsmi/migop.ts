// Result lines of the commands that change MIG state: `mig -cgi [-C]`, `-cci`, `-dci`, `-dgi`,
// `-mig 0|1`, `-r`/`--gpu-reset`. Every line becomes an op, an explanation that belongs to the
// op before it, or a parse error: a success line we cannot read must never pass as success.

import { allLines, isNoiseLine, PCI_BUS_ID, parseError } from "./text.js";
import type { MigOp, MigOpResult } from "./types.js";

const KIND = "mig-op";
const PCI = PCI_BUS_ID;

type Rule = [RegExp, (m: RegExpExecArray, line: string) => MigOp | null];

const n = (s: string | undefined): number => Number(s);
const reasonOf = (s: string | undefined): string => (s ?? "").trim().replace(/\.$/, "");

const RULES: Rule[] = [
  [
    /^Successfully created GPU instance ID\s+(\d+) on GPU\s+(\d+) using profile MIG (\S+) \(ID\s+(\d+)\)$/,
    (m) => ({
      op: "create-gi",
      gpu: n(m[2]),
      gpuInstanceId: n(m[1]),
      profileName: m[3]!,
      profileId: n(m[4]),
    }),
  ],
  [
    // R450 drivers left out the new CI's ID.
    /^Successfully created compute instance(?: ID\s+(\d+))? on GPU\s+(\d+) GPU instance ID\s+(\d+) using profile MIG (\S+) \(ID\s+(\d+)\)$/,
    (m) => ({
      op: "create-ci",
      gpu: n(m[2]),
      gpuInstanceId: n(m[3]),
      computeInstanceId: m[1] === undefined ? null : n(m[1]),
      profileName: m[4]!,
      profileId: n(m[5]),
    }),
  ],
  [
    /^Successfully destroyed compute instance ID\s+(\d+) from GPU\s+(\d+) GPU instance ID\s+(\d+)$/,
    (m) => ({
      op: "destroy-ci",
      gpu: n(m[2]),
      gpuInstanceId: n(m[3]),
      computeInstanceId: n(m[1]),
    }),
  ],
  [
    /^Successfully destroyed GPU instance ID\s+(\d+) from GPU\s+(\d+)$/,
    (m) => ({ op: "destroy-gi", gpu: n(m[2]), gpuInstanceId: n(m[1]) }),
  ],
  [
    new RegExp(`^(Enabled|Disabled) MIG Mode for GPU (${PCI})$`),
    (m) => ({ op: "mig-mode", pci: m[2]!, enabled: m[1] === "Enabled" }),
  ],
  [
    new RegExp(
      `^Warning: MIG mode is in pending (enable|disable) state for GPU (${PCI}):\\s*(.+)$`,
    ),
    (m) => ({
      op: "pending",
      pci: m[2]!,
      mode: m[1] === "enable" ? "enable" : "disable",
      reason: reasonOf(m[3]),
    }),
  ],
  [
    new RegExp(`^Warning: .*?(${PCI})`),
    (m, line) => ({ op: "warning", pci: m[1]!, message: line }),
  ],
  [new RegExp(`^GPU (${PCI}) was successfully reset\\.?$`), (m) => ({ op: "reset", pci: m[1]! })],
  [
    new RegExp(`^Resetting GPU (${PCI}) is not supported\\.?$`),
    (m, line) => ({ op: "error", pci: m[1]!, reason: "Not Supported", message: line }),
  ],
  [
    // The entries under `The following GPUs could not be reset:`.
    new RegExp(`^\\s+GPU (${PCI}):\\s*(.+)$`),
    (m, line) => ({ op: "error", pci: m[1]!, reason: reasonOf(m[2]), message: line.trim() }),
  ],
  [
    /^Unable to create a GPU instance on GPU\s+(\d+) using profile (.+?): (.+)$/,
    (m, line) => ({
      op: "error",
      gpu: n(m[1]),
      profile: m[2]!,
      reason: reasonOf(m[3]),
      message: line,
    }),
  ],
  [
    /^Unable to create a compute instance on GPU\s+(\d+) GPU instance ID\s+(\d+) using profile (.+?): (.+)$/,
    (m, line) => ({
      op: "error",
      gpu: n(m[1]),
      gpuInstanceId: n(m[2]),
      profile: m[3]!,
      reason: reasonOf(m[4]),
      message: line,
    }),
  ],
  [
    /^Unable to destroy compute instance ID\s+(\d+) from GPU\s+(\d+) GPU instance ID\s+(\d+): (.+)$/,
    (m, line) => ({
      op: "error",
      gpu: n(m[2]),
      gpuInstanceId: n(m[3]),
      computeInstanceId: n(m[1]),
      reason: reasonOf(m[4]),
      message: line,
    }),
  ],
  [
    /^Unable to destroy GPU instance ID\s+(\d+) from GPU\s+(\d+): (.+)$/,
    (m, line) => ({
      op: "error",
      gpu: n(m[2]),
      gpuInstanceId: n(m[1]),
      reason: reasonOf(m[3]),
      message: line,
    }),
  ],
  [
    new RegExp(`^Unable to (?:enable|disable) MIG Mode for GPU (${PCI}):\\s*(.+)$`),
    (m, line) => ({ op: "error", pci: m[1]!, reason: reasonOf(m[2]), message: line }),
  ],
  [
    // Summary lines (`Failed to create GPU instances: Insufficient Resources`) and the rest.
    /^(?:Failed to|Unable to) [^:]+:\s*(.+)$/,
    (m, line) => ({ op: "error", reason: reasonOf(m[1]), message: line }),
  ],
  [
    /^No MIG-enabled devices found\.?$/,
    (_m, line) => ({ op: "error", reason: "No MIG-enabled devices found", message: line }),
  ],
  // Lines that only close or explain the op before them.
  [/^All done\.$/, () => null],
  [/^Terminating early due to previous errors\.$/, () => null],
  [/^The following GPUs could not be reset:$/, () => null],
  [
    new RegExp(`^Reboot the system or try nvidia-smi --gpu-reset .* on GPU ${PCI}\\.?$`),
    () => null,
  ],
  [new RegExp(`^${PCI} is currently being used by one or more other processes`), () => null],
];

// `N device(s) is/are currently being used …`: a paragraph that may wrap over several lines.
const PARAGRAPH = /^\d+ devices? (?:is|are) currently being used by one or more other processes/;

function match(line: string): { op: MigOp | null } | undefined {
  for (const [re, make] of RULES) {
    const m = re.exec(line);
    if (m) return { op: make(m, line) };
  }
  return undefined;
}

export function parseMigOp(text: string): MigOpResult {
  const ops: MigOp[] = [];
  let inParagraph = false;
  for (const line of allLines(text)) {
    const t = line.text.trimEnd();
    if (t.trim() === "") {
      inParagraph = false;
      continue;
    }
    if (isNoiseLine(t)) continue;
    if (PARAGRAPH.test(t)) {
      inParagraph = true;
      continue;
    }
    const hit = match(t);
    if (!hit) {
      if (inParagraph) continue;
      throw parseError(
        KIND,
        line.no,
        "a result line of nvidia-smi (Successfully …, Warning: …)",
        t,
      );
    }
    inParagraph = false;
    if (hit.op) ops.push(hit.op);
  }
  return { ops };
}
