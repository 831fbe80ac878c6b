#!/usr/bin/env bash
# slicecheck GPU smoke test: builds the built-in workloads (workloads/*.cu) with this machine's
# nvcc, runs each of them once on one whole GPU, and keeps every output, so that the parsers
# and the simulator can be checked against a real GPU.
#
# READ-ONLY as far as the GPU's configuration goes. It never runs `nvidia-smi -mig`, `-r` /
# `--gpu-reset`, `-pm`, clock settings (`-lgc`, `-lmc`, `-ac`, `-rgc`...), power limits (`-pl`)
# or compute mode (`-c`), and never uses sudo. It only queries nvidia-smi and runs CUDA programs;
# the crasher faults its own CUDA context on purpose, which logs an Xid and changes no setting.
#
# usage: scripts/gpu-smoke.sh [OUT_DIR]          default: ./gpu-smoke-<host>-<UTC date>
#   GPU=<index>            the GPU to use (default 0); the programs get CUDA_VISIBLE_DEVICES=<index>
#   NVCC=<path>            the nvcc to use (default: PATH, then /usr/local/cuda/bin/nvcc)
#   SMOKE_BINARIES=<dir>   use stress, memhog and crasher from <dir> instead of building them
#   SMOKE_BUILD_ONLY=1     stop after building (and the nvidia-smi queries)
#
# Needs bash, nvcc, nvidia-smi and timeout (coreutils). Takes under 3 minutes (most of it the
# 20 s hang and the 10 s stress). Every program runs in the foreground under `timeout -k 5`, so
# none is left running; the end of the script checks it.
#
# Output: one file per command, each starting with one `# source:` line (host, GPU, driver,
# date, the command, its exit code and duration), then the command's stdout and stderr as they
# came; summary.txt says which runs ended as expected.

set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
sources=$here/../workloads
gpu=${GPU:-0}
host=$(hostname -s 2>/dev/null || hostname)
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=${1:-./gpu-smoke-$host-$stamp}
started=$SECONDS

die() { printf 'gpu-smoke: %s\n' "$*" >&2; exit 2; }

case $gpu in '' | *[!0-9]*) die "GPU must be a GPU index (0, 1, ...), got '$gpu'" ;; esac
command -v nvidia-smi >/dev/null 2>&1 || die "nvidia-smi not found on PATH"
command -v timeout >/dev/null 2>&1 || die "timeout (coreutils) not found on PATH"
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)

# name, uuid, driver, compute capability, MIG mode and memory of the GPU under test.
info=$(nvidia-smi -i "$gpu" --query-gpu=name,uuid,driver_version,compute_cap,mig.mode.current,memory.total \
  --format=csv,noheader,nounits 2>&1) || die "nvidia-smi cannot query GPU $gpu: $info"
IFS=',' read -r gpu_name gpu_uuid driver cap mig_mode mem_mib <<<"$info"
trim() { local s=$1; s=${s#"${s%%[! ]*}"}; printf '%s' "${s%"${s##*[! ]}"}"; }
gpu_name=$(trim "$gpu_name")
gpu_uuid=$(trim "$gpu_uuid")
driver=$(trim "$driver")
cap=$(trim "$cap")
mig_mode=$(trim "$mig_mode")
mem_mib=$(trim "$mem_mib")

nvcc=${NVCC:-}
if [[ -z $nvcc ]]; then nvcc=$(command -v nvcc 2>/dev/null || true); fi
if [[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]]; then nvcc=/usr/local/cuda/bin/nvcc; fi
nvcc_release=none
if [[ -n $nvcc ]]; then
  nvcc_release=$("$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9.]*\).*/\1/p' | head -n 1)
fi

source_line() {
  printf '# source: scripts/gpu-smoke.sh on %s, GPU %s %s (%s), driver %s, compute capability %s, MIG mode %s, nvcc %s, %s; %s\n' \
    "$host" "$gpu" "$gpu_name" "$gpu_uuid" "$driver" "$cap" "$mig_mode" "${nvcc_release:-unknown}" \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$1"
}

# capture FILE DEADLINE CMD...: runs CMD under `timeout -k 5 DEADLINE`, stdout and stderr
# together as they came, then writes FILE with the source line (command, exit code, seconds).
declare -A exit_of=()
capture() {
  local file=$1 deadline=$2 rc t0 tmp
  shift 2
  tmp=$(mktemp "$out/.run.XXXXXX")
  t0=$SECONDS
  CUDA_VISIBLE_DEVICES=$gpu timeout -k 5 "$deadline" "$@" >"$tmp" 2>&1 </dev/null
  rc=$?
  { source_line "command: $(printf '%q ' "$@" | sed 's/ $//'); exit code $rc after $((SECONDS - t0)) s (timeout -k 5 $deadline)"
    cat "$tmp"; } >"$out/$file"
  rm -f "$tmp"
  exit_of[$file]=$rc
  printf 'gpu-smoke: %-34s exit %3d  (%d s)\n' "$file" "$rc" "$((SECONDS - t0))" >&2
}

# A query of nvidia-smi, recorded the same way (no CUDA_VISIBLE_DEVICES needed, but harmless).
capture nvidia-smi-L.txt 30 nvidia-smi -L
capture nvidia-smi.txt 30 nvidia-smi
capture nvidia-smi-q.txt 60 nvidia-smi -q

# Build, unless binaries were given. One nvcc per program, all at once, for this GPU's arch.
bin=${SMOKE_BINARIES:-}
if [[ -z $bin ]]; then
  [[ -n $nvcc ]] || die "nvcc not found (PATH, /usr/local/cuda/bin); set NVCC=/path/to/nvcc"
  arch=${cap//./}
  [[ $arch =~ ^[0-9]+$ ]] || die "cannot read the compute capability of GPU $gpu ('$cap')"
  bin=$out/build
  mkdir -p "$bin"
  cp "$sources"/*.cu "$sources"/*.cuh "$bin"/ || die "cannot copy the sources from $sources"
  build_log=$out/build.txt
  {
    source_line "build with $nvcc, -gencode arch=compute_$arch,code=sm_$arch"
    "$nvcc" --version
  } >"$build_log" 2>&1
  t0=$SECONDS
  pids=()
  for w in stress memhog crasher; do
    (cd "$bin" && exec timeout -k 5 150 "$nvcc" -O3 -gencode "arch=compute_$arch,code=sm_$arch" \
      -o "$w" "$w.cu") >"$bin/$w.log" 2>&1 &
    pids+=("$!")
  done
  i=0
  for w in stress memhog crasher; do
    wait "${pids[$i]}"
    rc=$?
    i=$((i + 1))
    { printf '## nvcc %s.cu: exit code %d\n' "$w" "$rc"; cat "$bin/$w.log"; } >>"$build_log"
    exit_of[build-$w]=$rc
  done
  printf '## build took %d s\n' "$((SECONDS - t0))" >>"$build_log"
  printf 'gpu-smoke: build (sm_%s) took %d s\n' "$arch" "$((SECONDS - t0))" >&2
fi
bin=$(cd "$bin" && pwd) || die "no folder $bin"
for w in stress memhog crasher; do
  [[ -x $bin/$w ]] || die "no $bin/$w (see ${build_log:-the SMOKE_BINARIES folder}); nothing was run"
done

if [[ -n ${SMOKE_BUILD_ONLY:-} ]]; then
  printf 'gpu-smoke: built in %s; SMOKE_BUILD_ONLY set, nothing run\n' "$bin" >&2
  exit 0
fi

# Boot-relative time before the first CUDA program, so that the Xids of this run can be told
# from older ones in the kernel log.
read -r uptime_before _ </proc/uptime

capture stress.txt 45 "$bin/stress" --duration 10 --interval 1
capture stress-plant-error.txt 30 "$bin/stress" --duration 2 --interval 1 --plant-error
capture memhog-fraction.txt 45 "$bin/memhog" --fraction 0.5 --hold 3 --check 1G --interval 1
# Takes everything, so its check cannot pass: exit 1 with ok=0 is the expected end.
capture memhog-until-oom.txt 60 "$bin/memhog" --hold 2 --check 64M
over=$(( ${mem_mib:-0} * 2 ))M
capture memhog-over-target.txt 60 "$bin/memhog" --bytes "$over" --hold 1
capture crasher-illegal-address.txt 30 "$bin/crasher" --mode illegal-address --after 1
capture crasher-trap.txt 30 "$bin/crasher" --mode trap --after 1
capture crasher-hang.txt 20 "$bin/crasher" --mode hang
capture crasher-sigkill.txt 30 "$bin/crasher" --mode sigkill --after 2
capture memhog-after-faults.txt 45 "$bin/memhog" --fraction 0.9 --check 1G

capture nvidia-smi-after.txt 30 nvidia-smi
capture compute-apps-after.txt 30 nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv

# The kernel log: dmesg when it is readable (dmesg_restrict), else the journal.
if dmesg >/dev/null 2>&1; then
  log_cmd="dmesg | grep NVRM"
  log_text=$(dmesg 2>&1 | grep NVRM)
elif command -v journalctl >/dev/null 2>&1; then
  log_cmd="journalctl -k --no-pager | grep NVRM"
  log_text=$(journalctl -k --no-pager 2>&1 | grep NVRM)
else
  log_cmd="none (dmesg not readable, no journalctl)"
  log_text=
fi
{ source_line "command: $log_cmd; the programs started at uptime ${uptime_before} s"
  printf '%s\n' "$log_text" | sed '/^$/d'; } >"$out/kernel-log-nvrm.txt"

# Nothing of ours may outlive the script: a process still running one of our binaries is
# reported and killed, by pid.
left=
for p in /proc/[0-9]*; do
  exe=$(readlink "$p/exe" 2>/dev/null) || continue
  case $exe in "$bin"/stress | "$bin"/memhog | "$bin"/crasher) left="$left ${p#/proc/}" ;; esac
done

# What each run should have ended with, and what it did.
expect() { # FILE EXIT[|EXIT...] [TEXT]
  local file=$1 want=$2 text=${3:-} got=${exit_of[$1]:-missing} verdict=UNEXPECTED
  [[ "|$want|" == *"|$got|"* ]] && verdict=as-expected
  if [[ -n $text ]] && ! grep -qF -- "$text" "$out/$file" 2>/dev/null; then verdict=UNEXPECTED; fi
  printf '%-30s exit %-7s expected %-7s %s%s\n' "$file" "$got" "$want" "$verdict" "${text:+ (\"$text\")}"
}
{
  source_line "summary; $((SECONDS - started)) s in all"
  printf 'GPU %s MIG mode: %s (with MIG enabled, CUDA_VISIBLE_DEVICES=%s sees no whole GPU)\n' \
    "$gpu" "$mig_mode" "$gpu"
  expect stress.txt 0 "SLICECHECK stress-final"
  expect stress-plant-error.txt 1 "errors=1"
  expect memhog-fraction.txt 0 "ok=1"
  expect memhog-until-oom.txt 1 "oom=1"
  expect memhog-over-target.txt 2 "CUDA error: out of memory"
  expect crasher-illegal-address.txt 2 "CUDA error: an illegal memory access was encountered"
  expect crasher-trap.txt 2 "CUDA error: unspecified launch failure"
  # 124: the TERM of `timeout` ended it; 137: it needed the KILL 5 s later.
  expect crasher-hang.txt "124|137" "SLICECHECK crasher mode=hang armed"
  expect crasher-sigkill.txt 137 "SLICECHECK crasher mode=sigkill armed"
  expect memhog-after-faults.txt 0 "ok=1"
  if [[ -n $left ]]; then
    printf 'LEFT RUNNING (killed now):%s\n' "$left"
  else
    printf 'no workload process left running\n'
  fi
} >"$out/summary.txt"
for p in $left; do kill -KILL "$p" 2>/dev/null; done

cat "$out/summary.txt" >&2
printf 'gpu-smoke: %d s; results in %s\n' "$((SECONDS - started))" "$out" >&2
