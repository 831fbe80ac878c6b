// ~/.ssh/config resolution through the maintained `ssh-config` parser. `Match exec` is never
// evaluated: a config file must not run commands on the controller behind our back.
import { existsSync, readFileSync } from "node:fs";
import SSHConfig from "ssh-config";

export interface SshConfigHit {
  hostName?: string;
  user?: string;
  port?: number;
  identityFile?: string;
  proxyJump?: string[];
}

export function loadSshConfig(path: string | null): ((alias: string) => SshConfigHit) | null {
  if (!path || !existsSync(path)) return null;
  const config = SSHConfig.parse(readFileSync(path, "utf8"));
  return (alias) => {
    const c = config.compute(alias, { ignoreCase: true, matchExec: false });
    const one = (k: string): string | undefined => {
      const v = c[k];
      return Array.isArray(v) ? v[0] : v;
    };
    const port = one("port");
    const jump = one("proxyjump");
    // ssh expands %h in HostName to the alias; the parser leaves tokens alone.
    const hostName = one("hostname")?.replace(/%(%|h)/g, (_, t: string) =>
      t === "h" ? alias : "%",
    );
    return {
      hostName,
      user: one("user"),
      port: port && /^\d+$/.test(port) ? Number(port) : undefined,
      identityFile: one("identityfile"),
      proxyJump: jump && jump !== "none" ? jump.split(",") : undefined,
    };
  };
}
