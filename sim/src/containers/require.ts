// The simulated toolkit's requirement check: an image's NVIDIA_REQUIRE_CUDA as
// nvidia-container-cli evaluates it (libnvidia-container src/cli/dsl.c): terms separated by
// spaces are alternatives, conditions inside a term separated by commas must all hold, each
// `key op value` with key cuda (the driver's CUDA), driver (its version) or brand (the GPU's);
// arch is taken as met. On failure it names the first term, as the real CLI does
// ("unsatisfied condition: cuda>=13.0, please update your driver…"). This is how an image with
// forward-compatibility libraries starts on an older driver: nvidia/cuda images list, after
// `cuda>=X.Y`, the data-center driver branches their cuda-compat supports
// (`brand=tesla,driver>=535,driver<536 …`).

export interface RequireFacts {
  cuda: string;
  driver: string;
  /** The GPU's brand as NVML reports it (data-center boards: `nvidia`, older ones `tesla`). */
  brand: string;
}

const OPS = ["<=", ">=", "!=", "<", ">", "="] as const;

/** Negative, zero or positive as a is below, equal to or above b (numeric, dot-separated). */
function compare(a: string, b: string): number {
  const [x, y] = [a.split(".").map(Number), b.split(".").map(Number)];
  for (let k = 0; k < Math.max(x.length, y.length); k++) {
    const d = (x[k] ?? 0) - (y[k] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

function holds(cond: string, f: RequireFacts): boolean {
  const op = OPS.find((o) => cond.includes(o));
  if (!op) return false; // nvidia-container-cli: "invalid expression", refused as well
  const [key, value] = [cond.slice(0, cond.indexOf(op)), cond.slice(cond.indexOf(op) + op.length)];
  if (key === "arch") return true;
  if (key === "brand") {
    const same = value.toLowerCase() === f.brand.toLowerCase();
    return op === "=" ? same : op === "!=" ? !same : false;
  }
  const have = key === "cuda" ? f.cuda : key === "driver" ? f.driver : null;
  if (have === null) return false;
  const d = compare(have, value);
  return { "<=": d <= 0, ">=": d >= 0, "!=": d !== 0, "<": d < 0, ">": d > 0, "=": d === 0 }[op];
}

/** The requirement's first term when no term holds on this node, else null (met). */
export function unsatisfied(requirement: string, facts: RequireFacts): string | null {
  const terms = requirement.split(" ").filter(Boolean);
  if (terms.length === 0) return null;
  const met = terms.some((t) =>
    t
      .split(",")
      .filter(Boolean)
      .every((c) => holds(c, facts)),
  );
  return met ? null : terms[0]!;
}

/** nvidia-container-cli's message for it (the hint only for a `cuda>=` first term). */
export function requirementError(first: string): string {
  const hint = first.startsWith("cuda>=")
    ? ", please update your driver to a newer version, or use an earlier cuda container"
    : "";
  return `nvidia-container-cli: requirement error: unsatisfied condition: ${first}${hint}`;
}
