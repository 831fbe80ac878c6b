// One rank per device in separate processes, as jobs run NCCL on MIG (CUDA enumerates one MIG
// device per process): the shell script that starts the built-in allreduce once per device,
// all together, each seeing only its own device, and the reader that splits what each printed.
// Pure: the suite runs the script through the node session.
//
// The script makes a private folder for the id file (rank 0 writes it, the others poll for
// it), starts every rank in the background at once, each under its own `timeout` (a hung rank
// is killed and reported, while the others' output still comes back), waits for all, and then
// prints each rank's output between two marker lines:
//
//   slicecheck-rank rank=<r> device=<uuid> exit=<status>
//   <the rank's stdout and stderr, NCCL's INFO lines included>
//   slicecheck-rank-end rank=<r>
import { quote } from "../util/shell.js";

export interface RanksScriptOptions {
  /** The allreduce program on the node. */
  program: string;
  /** One device (MIG or GPU UUID) per rank, rank order. */
  devices: readonly string[];
  bytes: string;
  iters: number;
  /** Seconds each rank may run before it is killed (exit 124, or 137 after the grace). */
  timeoutS: number;
  /** Corrupt one result on rank 0 (a planted wrong result, for tests). */
  plantError?: boolean;
}

export interface RankOutput {
  rank: number;
  device: string;
  /** The rank's exit status as the shell saw it (124/137: killed at its deadline). */
  exitCode: number;
  output: string;
}

const BEGIN = /^slicecheck-rank rank=(\d+) device=(\S+) exit=(\d+)$/;
const END = /^slicecheck-rank-end rank=(\d+)$/;

export function ranksScript(o: RanksScriptOptions): string {
  const n = o.devices.length;
  const start = o.devices.map((dev, r) => {
    const argv = [o.program, ...["--rank", String(r), "--nranks", String(n), "--id-file"]].map(
      quote,
    );
    const rest = ["--bytes", o.bytes, "--iters", String(o.iters), "--wait", String(o.timeoutS)];
    if (o.plantError && r === 0) rest.push("--plant-error");
    return [
      `CUDA_VISIBLE_DEVICES=${quote(dev)} timeout -k 5 ${Math.ceil(o.timeoutS)}`,
      `${argv.join(" ")} "$d/id" ${rest.map(quote).join(" ")} >"$d/${r}.out" 2>&1 &`,
      `p${r}=$!`,
    ].join(" ");
  });
  const report = o.devices.map((dev, r) =>
    [
      `wait "$p${r}"; e=$?`,
      `echo "slicecheck-rank rank=${r} device=${dev.replace(/[^\w.-]/g, "_")} exit=$e"`,
      `cat "$d/${r}.out"`,
      `echo "slicecheck-rank-end rank=${r}"`,
    ].join("; "),
  );
  return [
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion, not a template
    'd=$(mktemp -d "${TMPDIR:-/tmp}/slicecheck-ranks.XXXXXX") || exit 97',
    "trap 'rm -rf \"$d\"' EXIT",
    // NCCL's connection lines name the transport; ranks on instances of one GPU are refused by
    // NCCL 2.30+ without this switch (reference workloads.md 1.5), older NCCL ignores it.
    "export NCCL_DEBUG=INFO NCCL_MULTI_RANK_GPU_ENABLE=1",
    ...start,
    ...report,
  ].join("\n");
}

/** Splits the script's output into each rank's; a rank without its markers is missing. */
export function splitRanks(stdout: string): RankOutput[] {
  const out: RankOutput[] = [];
  let cur: RankOutput | null = null;
  let lines: string[] = [];
  for (const raw of stdout.split("\n")) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    const b = BEGIN.exec(line);
    if (b && cur === null) {
      cur = { rank: Number(b[1]), device: b[2]!, exitCode: Number(b[3]), output: "" };
      lines = [];
      continue;
    }
    const e = END.exec(line);
    if (e && cur !== null && Number(e[1]) === cur.rank) {
      out.push({ ...cur, output: lines.join("\n") });
      cur = null;
      continue;
    }
    if (cur !== null) lines.push(line);
  }
  return out;
}
