// The product's one door to the simulator package. Only the `slicecheck sim …` commands go
// through it, at run time (a dynamic import), so no other command loads the simulator and
// nothing else in src/ imports it (test/structure/sim-apart.test.ts checks that).
export type Sim = typeof import("../sim/index.js");

export function loadSim(): Promise<Sim> {
  return import("../sim/index.js");
}
