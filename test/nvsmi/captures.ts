// Which parser reads which capture, derived from the file name alone, so that a capture added
// to fixtures/captures is parsed by the tests without anyone remembering to list it.

import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const CAPTURE_DIR = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "..",
  "fixtures",
  "captures",
);

export type CaptureKind =
  | "gpus"
  | "query"
  | "apps"
  | "lgip"
  | "lgipp"
  | "lgi"
  | "lci"
  | "lcip"
  | "mig-op"
  | "table"
  | "xid"
  | "q"
  | "topo"
  | "nvlink-status"
  | "nvlink-errors";

// Order matters: -lgipp before -lgip, -lcip before -lci.
const RULES: [RegExp, CaptureKind][] = [
  [/^xid_/, "xid"],
  [/^nvidia-smi_-L_/, "gpus"],
  [/^nvidia-smi_query-gpu/, "query"],
  [/^nvidia-smi_query-compute-apps/, "apps"],
  [/^nvidia-smi_mig-lgipp[-_]/, "lgipp"],
  [/^nvidia-smi_mig-lgip[-_]/, "lgip"],
  [/^nvidia-smi_mig-lgi[-_]/, "lgi"],
  [/^nvidia-smi_mig-lcip[-_]/, "lcip"],
  [/^nvidia-smi_mig-lci[-_]/, "lci"],
  [/^nvidia-smi_mig-(?:cgi|cci|dci|dgi)[-_]/, "mig-op"],
  [/^nvidia-smi_(?:-mig[01]|--gpu-reset|-r)_/, "mig-op"],
  [/^nvidia-smi_default-table/, "table"],
  [/^nvidia-smi_-q_/, "q"],
  [/^nvidia-smi_topo-m_/, "topo"],
  [/^nvidia-smi_nvlink-s_/, "nvlink-status"],
  [/^nvidia-smi_nvlink-e_/, "nvlink-errors"],
];

/** The parse kind of a capture, or null for captures that are not nvidia-smi or Xid output. */
export function captureKind(file: string): CaptureKind | null {
  if (!/^(?:nvidia-smi|xid)_/.test(file)) return null;
  for (const [re, kind] of RULES) if (re.test(file)) return kind;
  throw new Error(`no parser kind for capture ${file}: add a rule in test/nvsmi/captures.ts`);
}

/** Every nvidia-smi_* and xid_* capture with its kind, sorted by name. */
export function nvsmiCaptures(): { file: string; kind: CaptureKind }[] {
  return readdirSync(CAPTURE_DIR)
    .sort()
    .flatMap((file) => {
      const kind = captureKind(file);
      return kind === null ? [] : [{ file, kind }];
    });
}

export function readCapture(file: string): string {
  return readFileSync(join(CAPTURE_DIR, file), "utf8");
}
