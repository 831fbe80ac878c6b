// POSIX shell quoting. Every value that reaches a remote shell goes through quote(): node
// names, inventory values and user arguments alike, so none of them can inject a command.

const SAFE = /^[A-Za-z0-9_@%+=:,./-]+$/;

export function quote(arg: string): string {
  if (arg === "") return "''";
  if (SAFE.test(arg)) return arg;
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

export function quoteArgv(argv: readonly string[]): string {
  return argv.map(quote).join(" ");
}
