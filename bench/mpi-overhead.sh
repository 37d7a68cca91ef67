#!/usr/bin/env bash
# What distrun's MPI backend adds over a bare MPI call: `mpirun -np 2
# distrun bench COLLECTIVE --backend mpi` against bench/peers/mpi_collective.cc
# (the same call in a bare loop), in place, floats, 4 KB to 16 MB (ITERS_SMALL
# timed calls per size up to 16 KB, ITERS from 64 KB), both reporting the
# slowest rank's mean (-a 3).
# They alternate ROUNDS times (odd rounds distrun first), and each size's
# median over the rounds is compared: one run of either swings by tens of
# percent at the same size on a shared machine, which a median of many
# interleaved rounds does not. Both run with glibc's malloc held to one
# policy (MALLOC_MMAP_THRESHOLD_=32 MiB, no trimming: what distrun-train
# sets for training, docs/training.md): otherwise whether Open MPI's own
# per-call scratch buffers come from a fresh mmap (a page fault per 4 KB,
# every call) depends on what the benchmark allocated and freed before,
# which differs between the two programs: reduce_scatter at 256 KB took
# 120-130 us or 52-58 us in either program by that history alone, and
# with one policy for both they agree (docs/comm.md). MALLOC_POLICY=default
# runs them with glibc's defaults. CONTROL=1 runs the bare loop on both
# sides (an A/A run): its ratios are this machine's noise floor, what a
# ratio of distrun's must clear before it means anything. THREADS=funneled,
# serialized or single is the MPI thread level of both sides (distrun's
# DISTRUN_COMM_MPI_THREADS, the bare loop's BENCH_MPI_THREADS); by default
# each side its own (distrun: serialized, for asynchronous operations; the
# bare loop: MPI_Init, single), so the ratios include what the level costs
# in Open MPI. Ratio last: bare
# time / distrun time, so above 1 is distrun faster (issue 31's target:
# >= 0.97 at every size).
#   bench/mpi-overhead.sh [BUILD_DIR] [ROUNDS] [COLLECTIVE]
#   report: bench/results/mpi-overhead.txt
set -euo pipefail
build=${1:-build}
rounds=${2:-21}
collective=${3:-all_reduce}
iters=${ITERS:-40}
iters_small=${ITERS_SMALL:-2000}
bin=$build/bin
. "$(dirname "$0")/checks.sh"
need_built "$build" distrun mpi_collective_bench
command -v mpirun >/dev/null || { echo "mpi-overhead.sh: no mpirun: scripts/install-deps" >&2; exit 1; }
case $collective in
  all_reduce|broadcast) column=13 ;;
  all_gather|reduce_scatter|alltoall) column=9 ;;
  *) echo "mpi-overhead.sh: COLLECTIVE '$collective': expected all_reduce, broadcast, all_gather, reduce_scatter or alltoall" >&2; exit 64 ;;
esac
# The report also goes to bench/results/mpi-overhead.txt (RESULTS=FILE elsewhere),
# dated and with the command, which the docs link.
results=${RESULTS:-$(dirname "$0")/results/mpi-overhead.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# ${THREADS:+THREADS=$THREADS }${CONTROL:+CONTROL=$CONTROL }${MALLOC_POLICY:+MALLOC_POLICY=$MALLOC_POLICY }${ITERS:+ITERS=$ITERS }${ITERS_SMALL:+ITERS_SMALL=$ITERS_SMALL }bench/mpi-overhead.sh $build $rounds $collective, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1))"
mpirun=(mpirun --oversubscribe -np 2)
[[ $(id -u) == 0 ]] && mpirun+=(--allow-run-as-root)
policy=${MALLOC_POLICY:-fixed}
if [[ $policy == fixed ]]; then
  mpirun+=(-x MALLOC_MMAP_THRESHOLD_=33554432 -x MALLOC_TRIM_THRESHOLD_=2147483647)
fi
small=(4096 16384)
sizes=(65536 262144 1048576 4194304 16777216)
threads=${THREADS:-}
case $threads in
  '') distrun_env=(); bare_env=() ;;
  single|funneled|serialized)
    distrun_env=(-x "DISTRUN_COMM_MPI_THREADS=$threads"); bare_env=(-x "BENCH_MPI_THREADS=$threads") ;;
  *) echo "mpi-overhead.sh: THREADS '$threads': expected single, funneled or serialized" >&2; exit 64 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bare_loop() {  # ITERS SIZE...: the bare loop, at the level THREADS names
  "${mpirun[@]}" "${bare_env[@]}" "$bin/mpi_collective_bench" "$collective" "$1" 5 "${@:2}"
}
distrun_band() {  # ITERS SIZE...
  if [[ ${CONTROL:-0} == 1 ]]; then bare_loop "$@"; return; fi
  "${mpirun[@]}" "${distrun_env[@]}" "$bin/distrun" bench "$collective" -b "$2" -e "${@: -1}" -f 4 \
    -n "$1" -w 5 -c 0 -a 3 --backend mpi --format csv | awk -F, -v c="$column" 'NR>1 {print $4 "," $c}'
}
distrun_mpi() {
  { distrun_band "$iters_small" "${small[@]}"; distrun_band "$iters" "${sizes[@]}"; } >>"$tmp/distrun"
}
bare_mpi() {
  { bare_loop "$iters_small" "${small[@]}"; bare_loop "$iters" "${sizes[@]}"; } >>"$tmp/bare"
}

for round in $(seq 1 "$rounds"); do
  if ((round % 2)); then distrun_mpi; bare_mpi; else bare_mpi; distrun_mpi; fi
done

/usr/bin/python3 - "$tmp" "$collective" "$rounds" <<'PY'
import os, statistics, sys
tmp, collective, rounds = sys.argv[1], sys.argv[2], sys.argv[3]
def load(name):
    times = {}
    for line in open(os.path.join(tmp, name)):
        size, us = line.strip().split(",")[:2]
        times.setdefault(int(size), []).append(float(us))
    return times
d, b = load("distrun"), load("bare")
print(f"# {collective}, 2 ranks, floats; median time per call over {rounds} interleaved rounds, us;"
      f" malloc policy {os.environ.get('MALLOC_POLICY', 'fixed')};"
      f" MPI thread level {os.environ.get('THREADS') or 'distrun serialized, bare single'}"
      + ("; CONTROL=1: bare MPI in the distrun column too" if os.environ.get("CONTROL") == "1" else ""))
print("#     bytes  distrun-mpi   bare-mpi   bare/distrun")
ratios = []
for s in sorted(d):
    md, mb = statistics.median(d[s]), statistics.median(b[s])
    ratios.append(mb / md)
    print(f"{s:11d}   {md:10.1f} {mb:10.1f}   {mb / md:8.2f}")
print()
print(f"{collective}: mpi backend against bare MPI, medians: min {min(ratios):.2f}x  "
      f"mean {sum(ratios) / len(ratios):.2f}x  (target >= 0.97x)")
PY
