// `slicecheck sim up|down|status`: the built-in simulated cluster.
import { displayPath, type Out, table } from "../context.js";
import { loadSim, type SimNodeStatus, type SimSpecArgs } from "../sim-loader.js";

export async function simUpCommand(
  o: SimSpecArgs & { inventory?: string; json?: boolean; slurm?: boolean },
  io: Out,
): Promise<number> {
  const sim = await loadSim();
  const inv = o.inventory ?? sim.DEFAULT_SIM_INVENTORY;
  const spec = sim.buildSimSpec(o);
  const t0 = Date.now();
  const status = await sim.simUp(inv, spec, { slurm: o.slurm });
  if (o.json) io.out(JSON.stringify({ inventory: inv, nodes: status }, null, 2));
  else {
    printStatus(status, io);
    io.out(
      `${status.length} simulated node(s) up in ${Date.now() - t0} ms${o.slurm ? ", with Slurm (slurmctld, a slurmd per node, munge)" : ""}; inventory: ${displayPath(inv)}`,
    );
  }
  return status.every((s) => s.running) ? 0 : 2;
}

export async function simStatusCommand(
  o: { inventory?: string; json?: boolean },
  io: Out,
): Promise<number> {
  const sim = await loadSim();
  const status = sim.simStatus(o.inventory ?? sim.DEFAULT_SIM_INVENTORY);
  if (o.json) io.out(JSON.stringify({ nodes: status.map(({ running: _r, ...s }) => s) }, null, 2));
  else if (status.length === 0)
    io.out("no simulated cluster here; start one with `slicecheck sim up`");
  else printStatus(status, io);
  return 0;
}

export async function simDownCommand(o: { inventory?: string }, io: Out): Promise<number> {
  const sim = await loadSim();
  const n = await sim.simDown(o.inventory ?? sim.DEFAULT_SIM_INVENTORY);
  io.out(`stopped ${n} simulated node(s)`);
  return 0;
}

function printStatus(status: SimNodeStatus[], io: Out): void {
  io.out(
    table([
      ["NODE", "ADDRESS", "GPU", "GPUS", "DRIVER", "SSHD PID"],
      ...status.map((s) => [
        s.name,
        `${s.host}:${s.port}`,
        s.gpu,
        String(s.gpus),
        s.driver,
        s.pid ? String(s.pid) : "stopped",
      ]),
    ]),
  );
}
