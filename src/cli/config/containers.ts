// The `containers:` section of slicecheck.config.yaml (issue 23): the image the containers
// suite runs on each instance, by MIG profile (`1g.10gb: nvidia/cuda:12.2.0-base-ubuntu22.04`)
// or by one instance (`gpu0:0:4: …`). A node's inventory `containers:` wins key by key. A bad
// key or image names the file and its line, before any node is touched.
import { isMap, isScalar, LineCounter, type Node, parseDocument } from "yaml";
import { SlicecheckError } from "../../errors.js";
import {
  CONTAINER_KEY,
  CONTAINER_KEY_HELP,
  IMAGE_HELP,
  IMAGE_NAME,
} from "../../inventory/schema.js";

/** The line of `containers.KEY` (or of `containers:` itself when KEY is null or absent). */
function lineOf(text: string, key: string | null): number {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc });
  if (!isMap(doc.contents)) return 1;
  const top = doc.contents.items.find((p) => isScalar(p.key) && p.key.value === "containers");
  const sub = top?.value;
  const item =
    key !== null && isMap(sub)
      ? sub.items.find((p) => isScalar(p.key) && String(p.key.value) === key)
      : undefined;
  const range = ((item?.key as Node | undefined) ?? (top?.key as Node | undefined))?.range;
  return range ? lc.linePos(range[0]).line : 1;
}

/** The images of the `containers:` value of `file` (its text `text`). */
export function containersFrom(value: unknown, file: string, text: string): Record<string, string> {
  const bad = (key: string | null, what: string): never => {
    const line = lineOf(text, key);
    throw new SlicecheckError(
      "CONFIG",
      `${file}:${line}: containers${key === null ? "" : `.${key}`}: ${what}`,
      { file, line },
    );
  };
  if (value === null || typeof value !== "object" || Array.isArray(value))
    bad(null, "expected a mapping from a profile (1g.10gb) or gpuN:START:SIZE to an image");
  const out: Record<string, string> = {};
  for (const [key, image] of Object.entries(value as Record<string, unknown>)) {
    if (!CONTAINER_KEY.test(key)) bad(key, `${CONTAINER_KEY_HELP}, got '${key}'`);
    if (typeof image !== "string" || !IMAGE_NAME.test(image))
      bad(key, `${IMAGE_HELP}, got ${JSON.stringify(image)}`);
    out[key] = image as string;
  }
  return out;
}
