#!/usr/bin/env bash
# What bounds distrun's large shared-memory collectives on this node: each
# round measures, back to back, how fast one core's cache hands data to
# another's (copy_bandwidth --between-cores: the path of the slots), memcpy
# with both ranks copying at once (copy_bandwidth --at-once 2: each rank's
# share of the memory system), distrun's allreduce of SIZE bytes on 2 ranks
# (in place, its default way: from 16 MB by shares through the slots or with
# direct reads, whichever was faster lately; the slowest rank's time) and
# the bare Open MPI loop of the same call. On a VM the first moves between
# speeds as the host places the vCPUs (bench/results/between-cores.txt), at
# times between two measurements a second apart, so it is
# measured before and after the allreduces and a round counts as steady
# where the two agree within 25%. Last, over the steady rounds: distrun's
# allreduce against the cache-to-cache speed of its round (min and max),
# and against Open MPI's of the same round.
#   bench/between-cores.sh [BUILD_DIR] [ROUNDS] [SIZE]
#   report: bench/results/between-cores.txt
set -euo pipefail
build=${1:-build}
rounds=${2:-6}
size=${3:-67108864}
bin=$build/bin
. "$(dirname "$0")/checks.sh"
need_built "$build" distrun distrun-bench copy_bandwidth
if [[ ! $rounds =~ ^[1-9][0-9]*$ ]]; then
  echo "between-cores.sh: ROUNDS '$rounds': expected a whole number, at least 1" >&2
  exit 64
fi
if [[ ! $size =~ ^[1-9][0-9]*$ ]] || ((size % 4)); then
  echo "between-cores.sh: SIZE '$size': expected bytes, a multiple of 4 (floats)" >&2
  exit 64
fi
# The report also goes to bench/results/between-cores.txt (RESULTS=FILE elsewhere),
# dated and with the command, which the docs link.
report=${RESULTS:-$(dirname "$0")/results/between-cores.txt}
mkdir -p "$(dirname "$report")"
exec > >(tee "$report")
echo "# bench/between-cores.sh $build $rounds $size, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1))"
mpirun=(mpirun --oversubscribe -np 2)
[[ $(id -u) == 0 ]] && mpirun+=(--allow-run-as-root)
have_mpi=1
command -v mpirun >/dev/null && [[ -x $bin/mpi_collective_bench ]] || have_mpi=0

# GB/s of an allreduce of $size bytes that took $1 microseconds.
gbs() { awk -v s="$size" -v us="$1" 'BEGIN {printf "%.2f", s / us / 1e3}'; }

results=$(mktemp)
trap 'rm -f "$results"' EXIT
echo "# round  cache-to-cache  memcpy-at-once  distrun-allreduce  mpi-allreduce  cache-to-cache-after  (GB/s, $size bytes)"
for ((round = 1; round <= rounds; round++)); do
  before=$("$bin/copy_bandwidth" --between-cores | awk '{print $1}')
  at_once=$("$bin/copy_bandwidth" --at-once 2 | awk '{print $5}')
  us=$("$bin/distrun" bench all_reduce -b "$size" -e "$size" -n 20 -w 3 -c 0 -a 3 \
    --nproc-per-node 2 --format csv | awk -F, 'NR > 1 {print $13}')
  distrun=$(gbs "$us")
  mpi=n/a
  if ((have_mpi)); then
    mpi=$(gbs "$("${mpirun[@]}" "$bin/mpi_collective_bench" all_reduce 20 3 "$size" |
      awk -F, 'NF == 2 {t = $2} END {print t}')")
  fi
  after=$("$bin/copy_bandwidth" --between-cores | awk '{print $1}')
  printf '%7d  %14s  %14s  %17s  %13s  %20s\n' "$round" "$before" "$at_once" "$distrun" "$mpi" "$after"
  echo "$before $after $distrun $mpi" >>"$results"
done
awk '{lo = $1 < $2 ? $1 : $2; hi = $1 < $2 ? $2 : $1}
     hi > 1.25 * lo {next}
     {steady++; r = $3 / (($1 + $2) / 2)
      rlo = steady == 1 || r < rlo ? r : rlo; rhi = steady == 1 || r > rhi ? r : rhi
      if ($4 != "n/a") {m = $3 / $4; mlo = !seen || m < mlo ? m : mlo; mhi = !seen || m > mhi ? m : mhi; seen = 1}}
     END {if (!steady) {print "no steady round: cache-to-cache changed during every one"; exit}
          printf "%d steady rounds of %d: distrun allreduce / cache-to-cache: min %.2f max %.2f\n", steady, NR, rlo, rhi
          if (seen) printf "distrun allreduce / Open MPI, steady rounds: min %.2fx max %.2fx\n", mlo, mhi}' "$results"
