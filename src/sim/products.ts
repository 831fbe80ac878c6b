// Which GPU products a simulated node can have. Delegates to the MIG catalogue once it is
// there; until then the accepted names are listed here.
import { SlicecheckError } from "../errors.js";

const PRODUCTS: Record<string, { aliases: string[]; driver: string }> = {
  A30: { aliases: ["NVIDIA A30", "A30-24GB"], driver: "580.65.06" },
  "A100-40GB": {
    aliases: ["NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB", "A100"],
    driver: "580.65.06",
  },
  "A100-80GB": { aliases: ["NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe"], driver: "580.65.06" },
  "H100-80GB": { aliases: ["NVIDIA H100 80GB HBM3", "H100", "H100-SXM"], driver: "580.65.06" },
  "H100-PCIE": { aliases: ["NVIDIA H100 PCIe"], driver: "580.65.06" },
  "H100-NVL": { aliases: ["NVIDIA H100 NVL"], driver: "580.65.06" },
  "GH200-96GB": { aliases: ["NVIDIA GH200 480GB", "GH200"], driver: "580.65.06" },
  H200: { aliases: ["NVIDIA H200", "H200-141GB"], driver: "580.65.06" },
  B200: { aliases: ["NVIDIA B200"], driver: "580.65.06" },
};

export function resolveSimProduct(name: string, where: string): string {
  const key = name.trim().toLowerCase();
  for (const [canon, p] of Object.entries(PRODUCTS)) {
    if (canon.toLowerCase() === key || p.aliases.some((a) => a.toLowerCase() === key)) return canon;
  }
  throw new SlicecheckError(
    "USAGE",
    `${where}: unknown GPU product '${name}'; known: ${Object.keys(PRODUCTS).join(", ")}`,
  );
}

export function defaultDriverFor(product: string): string {
  return PRODUCTS[product]?.driver ?? "580.65.06";
}
