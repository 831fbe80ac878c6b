// Job histories the simulated Slurm accounting can be planted with (`sim fault NODE sacct
// --name small-jobs|big-jobs`), each line as a real sacct prints it (Slurm 23.x field shapes:
// AllocTRES with the typed and the untyped gres/gpu, steps carrying TRESUsageInMax with
// gres/gpumem and gres/gpuutil as NVML accounting gathers them). Deterministic: the same
// history every time, so that a test can say what `advise` must conclude from it.
//   small-jobs: an inference cluster of H100-80GB cards: 1-GPU jobs of 3-9 GiB (1g.10gb), some of
//     12-17 GiB (1g.20gb), two fine-tunes of ~30 GiB, one short 2-GPU test.
//   big-jobs: a training cluster: 8-GPU and 16-GPU jobs of days, a few 1-GPU evaluations.
import type { SacctRow } from "./sacct.js";

function hms(s: number): string {
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d > 0 ? `${d}-` : ""}${pad(h)}:${pad(m)}:${pad(s % 60)}`;
}

interface JobSpec {
  id: number;
  name: string;
  gpus: number;
  seconds: number;
  /** Peak GPU memory in MiB; null where not accounted. */
  gpumemMiB: number | null;
  util: number | null;
  cpus: number;
  state?: string;
}

const START = Date.UTC(2026, 10, 2, 8, 0, 0) / 1000;
const iso = (s: number) => new Date(s * 1000).toISOString().slice(0, 19);

function rowsOf(j: JobSpec, node: string): SacctRow[] {
  const nodes = Math.max(1, Math.ceil(j.gpus / 8));
  const perNode = Math.min(j.gpus, 8);
  const gres = `gres/gpu:h100=${j.gpus},gres/gpu=${j.gpus}`;
  const alloc = `billing=${j.cpus},cpu=${j.cpus},${gres},mem=${j.cpus * 8}G,node=${nodes}`;
  const start = START + (j.id % 97) * 1800;
  const usage =
    j.gpumemMiB === null
      ? "cpu=00:10:00,energy=0,fs/disk=4096,mem=2048M,pages=0,vmem=0"
      : `cpu=00:10:00,energy=0,fs/disk=4096,gres/gpumem=${j.gpumemMiB}M,gres/gpuutil=${j.util ?? 0},mem=2048M,pages=0,vmem=0`;
  const common = {
    Elapsed: hms(j.seconds),
    Start: iso(start),
    End: iso(start + j.seconds),
    NodeList: node,
  };
  const state = j.state ?? "COMPLETED";
  return [
    {
      JobID: String(j.id),
      JobName: j.name,
      Partition: "gpu",
      User: "alice",
      State: state,
      AllocTRES: alloc,
      ReqTRES: alloc,
      TRESUsageInMax: "",
      ...common,
    },
    {
      JobID: `${j.id}.batch`,
      JobName: "batch",
      Partition: "",
      User: "",
      State: state,
      AllocTRES: `cpu=${j.cpus},gres/gpu:h100=${perNode},gres/gpu=${perNode},mem=${j.cpus * 8}G,node=1`,
      ReqTRES: "",
      TRESUsageInMax: usage,
      ...common,
    },
    {
      JobID: `${j.id}.extern`,
      JobName: "extern",
      Partition: "",
      User: "",
      State: "COMPLETED",
      AllocTRES: alloc,
      ReqTRES: "",
      TRESUsageInMax: "cpu=00:00:00,energy=0,fs/disk=0,mem=0,pages=0,vmem=0",
      ...common,
    },
  ];
}

function smallJobs(): JobSpec[] {
  const jobs: JobSpec[] = [];
  for (let i = 0; i < 40; i++)
    jobs.push({
      id: 5000 + i,
      name: `infer-${i}`,
      gpus: 1,
      seconds: 3600 * (4 + (i % 5)),
      gpumemMiB: 3000 + ((i * 137) % 6000),
      util: 15 + ((i * 7) % 30),
      cpus: 8,
    });
  for (let i = 0; i < 8; i++)
    jobs.push({
      id: 5100 + i,
      name: `infer-13b-${i}`,
      gpus: 1,
      seconds: 3600 * 3,
      gpumemMiB: 12000 + i * 600,
      util: 40,
      cpus: 8,
    });
  jobs.push({
    id: 5200,
    name: "finetune-a",
    gpus: 1,
    seconds: 3600 * 2,
    gpumemMiB: 30000,
    util: 90,
    cpus: 16,
  });
  jobs.push({
    id: 5201,
    name: "finetune-b",
    gpus: 1,
    seconds: 3600 * 2,
    gpumemMiB: 31000,
    util: 92,
    cpus: 16,
    state: "TIMEOUT",
  });
  jobs.push({
    id: 5202,
    name: "ddp-smoke",
    gpus: 2,
    seconds: 1800,
    gpumemMiB: 20000,
    util: 70,
    cpus: 16,
    state: "FAILED",
  });
  return jobs;
}

function bigJobs(): JobSpec[] {
  const jobs: JobSpec[] = [];
  for (let i = 0; i < 12; i++)
    jobs.push({
      id: 9000 + i,
      name: `pretrain-${i}`,
      gpus: 8,
      seconds: 3600 * (20 + (i % 4) * 8),
      gpumemMiB: 8 * 76000,
      util: 97,
      cpus: 96,
    });
  for (let i = 0; i < 3; i++)
    jobs.push({
      id: 9100 + i,
      name: `pretrain-70b-${i}`,
      gpus: 16,
      seconds: 3600 * 48,
      gpumemMiB: 8 * 78000,
      util: 98,
      cpus: 192,
    });
  for (let i = 0; i < 6; i++)
    jobs.push({
      id: 9200 + i,
      name: `eval-${i}`,
      gpus: 1,
      seconds: 3600,
      gpumemMiB: 9000,
      util: 60,
      cpus: 8,
    });
  return jobs;
}

export const HISTORIES: Readonly<Record<string, () => JobSpec[]>> = {
  "small-jobs": smallJobs,
  "big-jobs": bigJobs,
};

export function historyRows(name: string, node: string): SacctRow[] | null {
  const make = HISTORIES[name];
  return make ? make().flatMap((j) => rowsOf(j, node)) : null;
}
