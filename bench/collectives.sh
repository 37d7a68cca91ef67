#!/usr/bin/env bash
# Allreduce bus bandwidth, side by side in one run, two ranks on this node:
#   distrun's gloo backend  vs  PyTorch's torch.distributed.all_reduce (gloo),
#     distrun with its shared-memory allreduce (the default on one node) and
#     with TCP only (DISTRUN_COMM_SHM=0), as PyTorch's gloo is
#   distrun's mpi backend   vs  a bare MPI_Allreduce loop under mpirun
# and this machine's memory copy bandwidth as the physical limit. In-place
# float sums, 4 KB to 256 MB: up to 1 MB with WARMUP + ITERS_SMALL calls per
# size (short calls need long loops to rise above timer and scheduler
# noise), from 4 MB with WARMUP + ITERS; each contender runs ROUNDS times,
# interleaved with its peer in alternating order, and keeps its best time
# per size. Ratios last. Targets (issue 4): gloo >= 1.0x PyTorch from 1 MB, >= 1.3x below
# 64 KB; mpi >= 0.95x bare MPI.
#   bench/collectives.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=${1:-build}
rounds=${2:-6}
iters=${ITERS:-20}
iters_small=${ITERS_SMALL:-200}
warmup=${WARMUP:-5}
bin=$build/bin
. "$(dirname "$0")/checks.sh"
need_built "$build" distrun distrun-bench copy_bandwidth
python=/usr/bin/python3
small=(4096 16384 65536 262144 1048576)
large=(4194304 16777216 67108864 268435456)
mpirun=(mpirun --oversubscribe -np 2)
[[ $(id -u) == 0 ]] && mpirun+=(--allow-run-as-root)
have_mpi=1
command -v mpirun >/dev/null && [[ -x $bin/mpi_allreduce_bench ]] || have_mpi=0
have_torch=1
$python -c 'import torch.distributed' 2>/dev/null || have_torch=0

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Each contender appends "bytes,time_us" lines to $tmp/NAME.ROUND, for
# the band of sizes ITERS and SIZES name.
band() {  # ITERS SIZE...: the distrun bench flags for one band
  local n=$1; shift
  echo "-b $1 -e ${@: -1} -f 4 -n $n -w $warmup -c 0 --format csv"
}
distrun_gloo() {
  # shellcheck disable=SC2046
  "$bin/distrun" bench all_reduce $(band "$2" "${@:3}") --nproc-per-node 2 |
    awk -F, 'NR>1 {print $4 "," $13}' >>"$tmp/distrun_gloo.$1"
}
distrun_tcp() {
  # shellcheck disable=SC2046
  DISTRUN_COMM_SHM=0 "$bin/distrun" bench all_reduce $(band "$2" "${@:3}") --nproc-per-node 2 |
    awk -F, 'NR>1 {print $4 "," $13}' >>"$tmp/distrun_tcp.$1"
}
torch_gloo() {
  BENCH_ITERS=$2 BENCH_WARMUP=$warmup DISTRUN_PYTHON=$python \
    "$bin/distrun" run --log-prefix '' --cpu-bind none --nproc-per-node 2 \
    "$(dirname "$0")/peers/torch_allreduce.py" "${@:3}" >>"$tmp/torch_gloo.$1"
}
distrun_mpi() {
  # shellcheck disable=SC2046
  "${mpirun[@]}" "$bin/distrun" bench all_reduce $(band "$2" "${@:3}") --backend mpi |
    awk -F, 'NR>1 {print $4 "," $13}' >>"$tmp/distrun_mpi.$1"
}
bare_mpi() {
  "${mpirun[@]}" "$bin/mpi_allreduce_bench" "$2" "$warmup" "${@:3}" >>"$tmp/bare_mpi.$1"
}

for round in $(seq 1 "$rounds"); do
  echo "round $round of $rounds" >&2
  for b in small large; do
    if [[ $b == small ]]; then n=$iters_small; sizes=("${small[@]}"); else n=$iters; sizes=("${large[@]}"); fi
    # Odd rounds run distrun first, even rounds its peers first, so that
    # neither side always follows the other (the machine's state drifts).
    groups=("distrun_gloo distrun_tcp torch_gloo" "distrun_mpi bare_mpi")
    for group in "${groups[@]}"; do
      read -r -a contenders <<<"$group"
      ((round % 2)) || mapfile -t contenders < <(printf '%s\n' "${contenders[@]}" | tac)
      for contender in "${contenders[@]}"; do
        case $contender in
          torch_gloo) ((have_torch)) || continue ;;
          distrun_mpi|bare_mpi) ((have_mpi)) || continue ;;
        esac
        "$contender" "$round" "$n" "${sizes[@]}"
      done
    done
  done
done
copy=$("$bin/copy_bandwidth")

$python - "$tmp" "$copy" <<'PY'
import glob, os, sys
tmp, copy = sys.argv[1], float(sys.argv[2])

def best(name):
    times = {}
    for path in glob.glob(os.path.join(tmp, name + ".*")):
        for line in open(path):
            size, us = line.strip().split(",")
            size, us = int(size), float(us)
            times[size] = min(times.get(size, us), us)
    return times

runs = {n: best(n) for n in ("distrun_gloo", "distrun_tcp", "torch_gloo", "distrun_mpi", "bare_mpi")}
sizes = sorted(runs["distrun_gloo"])
bw = lambda n, s: s / runs[n][s] / 1e3 if s in runs[n] else None  # GB/s; 2 ranks: busbw = algbw
fmt = lambda v: f"{v:8.3f}" if v is not None else "     n/a"
ratio = lambda a, b: a / b if a and b else None
print(f"# allreduce, 2 ranks, float sum, in-place; busbw GB/s (best of rounds); copy limit {copy:.2f} GB/s")
print("# distrun-gloo: shared memory on one node (the default); gloo-tcp: DISTRUN_COMM_SHM=0")
print("#     bytes  distrun-gloo  gloo-tcp  torch-gloo  ratio  tcp-ratio  distrun-mpi  bare-mpi   ratio  gloo/copy  mpi/copy")
for s in sizes:
    g, c, t, m, b = (bw(n, s) for n in ("distrun_gloo", "distrun_tcp", "torch_gloo", "distrun_mpi", "bare_mpi"))
    print(f"{s:11d}      {fmt(g)}  {fmt(c)}    {fmt(t)} {fmt(ratio(g, t))}   {fmt(ratio(c, t))}"
          f"     {fmt(m)}  {fmt(b)} {fmt(ratio(m, b))}"
          f"   {fmt(g / copy if g else None)}  {fmt(m / copy if m else None)}")

def summary(label, pairs, target):
    pairs = [p for p in pairs if p is not None]
    if not pairs:
        print(f"{label}: not measured (peer missing)")
        return
    print(f"{label}: min {min(pairs):.2f}x  mean {sum(pairs) / len(pairs):.2f}x  (target >= {target}x)")

print()
summary("ratio gloo/PyTorch, sizes >= 1 MB ", [ratio(bw("distrun_gloo", s), bw("torch_gloo", s)) for s in sizes if s >= 1 << 20], 1.0)
summary("ratio gloo/PyTorch, sizes <  64 KB", [ratio(bw("distrun_gloo", s), bw("torch_gloo", s)) for s in sizes if s < 64 << 10], 1.3)
summary("ratio gloo-tcp/PyTorch, >= 1 MB   ", [ratio(bw("distrun_tcp", s), bw("torch_gloo", s)) for s in sizes if s >= 1 << 20], 1.0)
summary("ratio gloo-tcp/PyTorch, <  64 KB  ", [ratio(bw("distrun_tcp", s), bw("torch_gloo", s)) for s in sizes if s < 64 << 10], 1.3)
summary("ratio mpi/bare MPI, all sizes     ", [ratio(bw("distrun_mpi", s), bw("bare_mpi", s)) for s in sizes], 0.95)
top = max(sizes)
print(f"share of copy limit at {top >> 20} MB: gloo {bw('distrun_gloo', top) / copy:.2f}, "
      f"mpi {(bw('distrun_mpi', top) or 0) / copy:.2f}")
PY
