#!/usr/bin/env bash
# The reduction kernels of each instruction set this CPU runs (distrun's
# baseline SSE2, AVX2, AVX-512; comm/reduce.h) side by side on one core
# (build/bin/reduce_bandwidth: float, double, half and bfloat16 sums, 4 KB
# to 256 MB, apart and in place, against memcpy), then what they change in
# a 2-rank shared-memory allreduce: `distrun bench all_reduce` (in place, as
# DDP calls it) with DISTRUN_COMM_SIMD=baseline against the default
# (AVX2 for float, the widest for half and bfloat16), ROUNDS interleaved
# rounds alternating which runs first, best time per size, the ratio
# (baseline time / default time) last.
#   [KERNELS="float half"] bench/reduce-kernels.sh [BUILD_DIR] [ROUNDS] [TYPE]
#   report: bench/results/reduce-kernels.txt
# KERNELS: the types of the one-core table (default: float double half
# bfloat16; empty: none).
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
type=${3:-float}
bin=$build/bin
. "$(dirname "$0")/checks.sh"
need_built "$build" distrun reduce_bandwidth
# The report also goes to bench/results/reduce-kernels.txt (RESULTS=FILE elsewhere),
# dated and with the command, which the docs link.
results=${RESULTS:-$(dirname "$0")/results/reduce-kernels.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# ${KERNELS+KERNELS=\"$KERNELS\" }bench/reduce-kernels.sh $build $rounds $type, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1))"
for t in ${KERNELS-float double half bfloat16}; do
  "$bin/reduce_bandwidth" "$t" sum
  echo
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {  # SIMD ROUND ITERS FROM TO: in-place times of one band
  DISTRUN_COMM_SIMD=$1 "$bin/distrun" bench all_reduce -d "$type" -b "$4" -e "$5" -f 4 -n "$3" \
    -w 5 -c 0 --format csv --nproc-per-node 2 | awk -F, 'NR>1 {print $4 "," $13}' >>"$tmp/$1.$2"
}
for round in $(seq 1 "$rounds"); do
  echo "round $round of $rounds" >&2
  order=(baseline auto)
  ((round % 2)) || order=(auto baseline)
  for simd in "${order[@]}"; do
    run "$simd" "$round" 200 4096 1048576
    run "$simd" "$round" 20 4194304 268435456
  done
done
/usr/bin/python3 - "$tmp" "$type" <<'PY'
import glob, os, sys
tmp, dtype = sys.argv[1], sys.argv[2]
def best(name):
    times = {}
    for path in glob.glob(os.path.join(tmp, name + ".*")):
        for line in open(path):
            size, us = line.strip().split(",")
            times[int(size)] = min(times.get(int(size), float("inf")), float(us))
    return times
base, auto = best("baseline"), best("auto")
print(f"# all_reduce of {dtype}, 2 ranks, in place, best of the rounds: time in us")
print(f"{'bytes':>10} {'baseline':>10} {'default':>10} {'ratio':>7}")
ratios = []
for size in sorted(auto):
    ratios.append(base[size] / auto[size])
    print(f"{size:>10} {base[size]:>10.1f} {auto[size]:>10.1f} {ratios[-1]:>6.2f}x")
print(f"# default against baseline (above 1: faster), mean {sum(ratios) / len(ratios):.2f}x, "
      f"from {min(ratios):.2f}x to {max(ratios):.2f}x")
PY
