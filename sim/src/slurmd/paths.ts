// Where a simulated cluster keeps its Slurm: its own module, so that the node tools' wrappers
// (../tools.ts) can name the config without loading the cluster's code.
import { join } from "node:path";

export const slurmDirOf = (clusterDir: string) => join(clusterDir, "slurm");

export const confPath = (dir: string) => join(dir, "slurm.conf");
