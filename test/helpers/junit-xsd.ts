// Validation of a junit.xml against Jenkins xunit's junit-10.xsd with libxml2's xmllint. The
// schema is read where the reference copy lives and never copied into the repository.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

export const JUNIT_XSD = "/work/shared/reference/fetched/junit-10.xsd";

/** xmllint's verdict on a file: null when valid, else what it said. */
export function xsdErrors(file: string): string | null {
  if (!existsSync(JUNIT_XSD)) throw new Error(`the JUnit schema is missing at ${JUNIT_XSD}`);
  const r = spawnSync("xmllint", ["--noout", "--schema", JUNIT_XSD, file], { encoding: "utf8" });
  if (r.error)
    throw new Error(
      `xmllint did not run (${r.error.message}): run \`npm test\` (scripts/setup.mjs installs libxml2-utils)`,
    );
  return r.status === 0 ? null : r.stderr;
}
