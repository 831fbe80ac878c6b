// The private key a hop logs in with: the inventory's identity_file, else the first of
// OpenSSH's default names in ~/.ssh, and its passphrase from the variable the inventory names.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { ConnectConfig } from "ssh2";
import { SlicecheckError } from "../errors.js";
import type { JumpHost } from "../inventory/types.js";

export function keyConfig(
  hop: Pick<JumpHost, "identityFile" | "identityPassphraseEnv">,
  where: string,
): Pick<ConnectConfig, "privateKey" | "passphrase"> {
  let file = hop.identityFile;
  if (!file) {
    file =
      ["id_ed25519", "id_ecdsa", "id_rsa"]
        .map((k) => join(homedir(), ".ssh", k))
        .find((p) => existsSync(p)) ?? null;
    if (!file) return {};
  }
  let privateKey: Buffer;
  try {
    privateKey = readFileSync(file);
  } catch (e) {
    throw new SlicecheckError(
      "KEY_FILE",
      `${where}: cannot read identity_file ${file}: ${(e as NodeJS.ErrnoException).code}. Fix identity_file in the inventory.`,
      { file },
    );
  }
  const passphrase = hop.identityPassphraseEnv ? process.env[hop.identityPassphraseEnv] : undefined;
  if (hop.identityPassphraseEnv && passphrase === undefined) {
    throw new SlicecheckError(
      "KEY_FILE",
      `${where}: the key's passphrase is expected in $${hop.identityPassphraseEnv}, which is not set.`,
      { file },
    );
  }
  return passphrase === undefined ? { privateKey } : { privateKey, passphrase };
}
