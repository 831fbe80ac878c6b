// The wrapper of a workload program that the cluster's resident simulator runs (workloads.ts says
// the protocol): bash, for its /dev/tcp. It is the process that the node, nvidia-smi's process
// list and the harness see, with the pid, process group, environment and run tag a Node process
// of the program would have had, and it ends as that process would have: with the program's exit
// code, or dead of the signal that ended the program. Where its stdout and stderr are pipes the
// resident writes into them itself; elsewhere (`streams`) two cats relay the program's stdout and
// stderr; they ignore TERM, INT and HUP, so that a graceful program's last lines still come
// through after the signal that stopped it, and they end when the resident closes their
// connection. The wrapper forwards TERM, INT and HUP; any other signal kills it, which the
// resident takes for a SIGKILL of the program. When no resident answers, or it answers
// `fallback` (the program has not started), the wrapper runs the program as its own Node
// process, as before.
import { quote } from "../../../src/util/shell.js";
import { WORKLOAD_VERSION } from "./protocol.js";

const BASH = "/bin/bash";

/** The whole wrapper: the client, then `run` (the tool as its own process). */
export function workloadWrapper(tool: string, run: string, portFile: string): string {
  return `#!${BASH}
# ${tool} on a simulated node: the cluster's resident simulator runs it for this process, else a
# Node process of its own (sim/src/resident/wrapper.ts).
${programClient(tool, portFile)}
${run}
`;
}

/** The client part, for a wrapper that has other ways to try first (tools.ts residentWrapper):
 * it ends the script when the resident ran the program, and goes on below when it did not. */
export function programClient(tool: string, portFile: string): string {
  const t = quote(tool);
  const relay = (to: string) =>
    `( trap - PIPE; trap '' TERM INT HUP; exec /bin/cat <&${to} 3>&- 4>&- 5>&- 6>&- 7>&- ) &`;
  return `port=
{ read -r port <${quote(portFile)}; } 2>/dev/null
if [ -n "$port" ] && { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
  # The resident writes into these where they are pipes: 1 and 2 are redirected for a moment
  # by every command below that has a redirection of its own (bash restores them after it).
  # A closed stream has no copy (the resident then answers "streams"), and no complaint.
  { exec 6>&1; } 2>/dev/null; exec 7>&2
  sig=
  for s in TERM INT HUP; do trap "sig=\\\${sig:-$s}; echo $s >&3 2>/dev/null" "$s"; done
  trap '' PIPE
  head=
  if printf '%s\\0' ${WORKLOAD_VERSION} ${t} "$$" "$EUID" "$#" "$@" >&3 2>/dev/null &&
    IFS= read -r -t 10 head <&3 && [ "$head" = streams ] && [ -x /bin/cat ] &&
    { exec 4<>"/dev/tcp/127.0.0.1/$port" 5<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null &&
    printf '%s\\0' O1 "$$" >&4 2>/dev/null && printf '%s\\0' E1 "$$" >&5 2>/dev/null &&
    IFS= read -r -t 10 head <&3 && [ "$head" = started ]; then
    ${relay("4")}
    ${relay("5 >&2")}
    exec 4>&- 5>&-
  fi
  if [ "$head" = started ]; then
    st=
    until IFS= read -r st <&3; do [ $? -gt 128 ] || break; done
    until wait; do :; done
    case $st in
    "exit "*) exit "\${st#exit }" ;;
    "signal "*) trap - "\${st#signal }"; kill -s "\${st#signal }" $$ ;;
    esac
    echo ${quote(`${tool} (simulated): the resident simulator went away before the program ended`)} >&2
    exit 255
  fi
  trap - PIPE TERM INT HUP
  [ -z "$sig" ] || kill -s "$sig" $$
fi
exec 3<&- 4<&- 5<&- 6>&- 7>&-`;
}
