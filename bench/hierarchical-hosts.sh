#!/usr/bin/env bash
# bench/hierarchical.sh across hosts that are network namespaces: every
# collective on 2 and 3 hosts x 2 ranks, their hsn0 links capped at 1 and
# at 10 Gbit/s: hierarchical against flat TCP, PyTorch's gloo and Open
# MPI, with the bytes each host sent. Needs root (ip netns).
#   bench/hierarchical-hosts.sh [BUILD_DIR] [ROUNDS] [COLLECTIVE...]
# The report goes to bench/results/hierarchical-hosts.txt (RESULTS=FILE
# elsewhere), dated and with the command; docs/comm.md links it. The
# summary (every case's ratio line) comes last.
set -euo pipefail
build=${1:-build}
rounds=${2:-1}
shift $(($# < 2 ? $# : 2))
collectives=("$@")
((${#collectives[@]})) || collectives=(all_reduce broadcast reduce_scatter all_gather alltoall sendrecv)
results=${RESULTS:-$(dirname "$0")/results/hierarchical-hosts.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# bench/hierarchical-hosts.sh $build $rounds ${collectives[*]}, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
summary=()
for hosts in 2 3; do
  for mbit in 1000 10000; do
    for collective in "${collectives[@]}"; do
      echo
      echo "## HOSTS=$hosts MBIT=$mbit bench/hierarchical.sh $build $rounds $collective"
      out=$(HOSTS=$hosts MBIT=$mbit bash "$(dirname "$0")/hierarchical.sh" "$build" "$rounds" "$collective")
      echo "$out"
      summary+=("$hosts hosts, $mbit Mbit/s, $(tail -1 <<<"$out")")
    done
  done
done
echo
echo "# summary: hierarchical against the best peer across hosts"
printf '%s\n' "${summary[@]}"
