// An AbortController whose signal every command of a fan-out listens to (one per node, one per
// workload: 64 at exec's default fanout, 56 on an 8-GPU node). That many listeners is the design,
// not a leak: without this Node prints a MaxListenersExceededWarning on the user's stderr from
// the eleventh on.
import { setMaxListeners } from "node:events";

export function sharedAbort(): AbortController {
  const ac = new AbortController();
  setMaxListeners(0, ac.signal);
  return ac;
}
