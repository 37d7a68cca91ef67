#!/usr/bin/env bash
# A job that spans nodes, on one machine: two agents (`distrun run --nnodes
# 2`) are two nodes of two ranks each, and every contender runs the same
# collective, 4 ranks, side by side in one run:
#   hierarchical  distrun's default across nodes: shared memory within each
#                 node, TCP between one leader per node
#   flat-tcp      DISTRUN_COMM_SHM=0: every rank over TCP (what a multi-node
#                 job got before the hierarchical path)
#   torch-gloo    PyTorch's torch.distributed over gloo, the same two agents
#   one-node      the four ranks under one agent: all in shared memory (the
#                 upper bound the hierarchy approaches)
# Floats, 4 KB to 64 MB, in place (but see below); each contender runs ROUNDS times,
# interleaved in alternating order, keeping its best time per size. Four
# ranks on this machine's cores are oversubscribed where it has fewer than
# four: the ratios compare paths on the same load, not absolute speeds.
# Ratios last: hierarchical against the best of flat-tcp and torch-gloo.
#   bench/hierarchical.sh [BUILD_DIR] [ROUNDS] [all_reduce|broadcast|reduce_scatter|all_gather|alltoall|sendrecv]
# (all_gather, reduce_scatter and alltoall out of place, SIZE the whole
# array of every rank's blocks, as nccl-tests counts it; sendrecv a ring
# shift of SIZE bytes, each rank sending to the next: ranks 0 and 2 send
# within their node, 1 and 3 to the other node.)
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
collective=${3:-all_reduce}
iters=${ITERS:-10}
iters_small=${ITERS_SMALL:-100}
warmup=${WARMUP:-3}
bin=$build/bin
. "$(dirname "$0")/checks.sh"
need_built "$build" distrun distrun-bench
case $collective in
  all_reduce|broadcast) column=13 ;;  # in place
  reduce_scatter|all_gather|alltoall|sendrecv) column=9 ;;  # out of place
  *) echo "hierarchical.sh: COLLECTIVE '$collective': expected all_reduce, broadcast, reduce_scatter, all_gather, alltoall or sendrecv" >&2; exit 64 ;;
esac
python=/usr/bin/python3
small=(4096 16384 65536 262144 1048576)
large=(4194304 16777216 67108864)
have_torch=1
$python -c 'import torch.distributed' 2>/dev/null || have_torch=0
[[ $collective == reduce_scatter ]] && have_torch=0  # PyTorch's gloo has none

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
free_port() { $python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# two_nodes OUT PROGRAM ARGS...: node 0's output (rank 0's lines) to OUT.
two_nodes() {
  local out=$1 port; shift
  port=$(free_port)
  DISTRUN_TOKEN=bench "$bin/distrun" run --nnodes 2 --nproc-per-node 2 --log-prefix '' \
    --cpu-bind none --rdzv-endpoint "127.0.0.1:$port" "$@" >"$tmp/node1.out" &
  DISTRUN_TOKEN=bench "$bin/distrun" run --nnodes 2 --nproc-per-node 2 --log-prefix '' \
    --cpu-bind none --rdzv-endpoint "127.0.0.1:$port" "$@" >"$tmp/node0.out"
  wait $!
  cat "$tmp/node0.out" "$tmp/node1.out" >>"$out"
}
keep() { awk -F, -v c="$column" '$1 ~ /^[a-z_]+$/ && $2 == "gloo" {print $4 "," $c}'; }
hierarchical() {
  # shellcheck disable=SC2046
  two_nodes "$tmp/raw" "$bin/distrun-bench" "$collective" $(bench_band "$warmup" "$2" "${@:3}")
  keep <"$tmp/raw" >>"$tmp/hierarchical.$1"; rm -f "$tmp/raw"
}
flat_tcp() {
  # shellcheck disable=SC2046
  DISTRUN_COMM_SHM=0 two_nodes "$tmp/raw" "$bin/distrun-bench" "$collective" $(bench_band "$warmup" "$2" "${@:3}")
  keep <"$tmp/raw" >>"$tmp/flat_tcp.$1"; rm -f "$tmp/raw"
}
torch_gloo() {
  BENCH_ITERS=$2 BENCH_WARMUP=$warmup DISTRUN_PYTHON=$python \
    two_nodes "$tmp/torch_gloo.$1" "$(dirname "$0")/peers/torch_collective.py" "$collective" "${@:3}"
}
one_node() {
  # shellcheck disable=SC2046
  "$bin/distrun" bench "$collective" $(bench_band "$warmup" "$2" "${@:3}") --nproc-per-node 4 |
    keep >>"$tmp/one_node.$1"
}

for round in $(seq 1 "$rounds"); do
  echo "round $round of $rounds" >&2
  for b in small large; do
    if [[ $b == small ]]; then n=$iters_small; sizes=("${small[@]}"); else n=$iters; sizes=("${large[@]}"); fi
    contenders=(hierarchical flat_tcp torch_gloo one_node)
    ((round % 2)) || mapfile -t contenders < <(printf '%s\n' "${contenders[@]}" | tac)
    for contender in "${contenders[@]}"; do
      [[ $contender == torch_gloo ]] && ! ((have_torch)) && continue
      "$contender" "$round" "$n" "${sizes[@]}"
    done
  done
done

$python - "$tmp" "$collective" <<'PY'
import glob, os, sys
tmp, collective = sys.argv[1], sys.argv[2]

def best(name):
    times = {}
    for path in glob.glob(os.path.join(tmp, name + ".*")):
        for line in open(path):
            parts = line.strip().split(",")
            if len(parts) != 2 or not parts[0].isdigit():
                continue
            size, us = int(parts[0]), float(parts[1])
            times[size] = min(times.get(size, us), us)
    return times

names = ("hierarchical", "flat_tcp", "torch_gloo", "one_node")
runs = {n: best(n) for n in names}
sizes = sorted(runs["hierarchical"])
fmt = lambda v: f"{v:9.1f}" if v is not None else "      n/a"
rfmt = lambda v: f"{v:7.2f}" if v is not None else "    n/a"
us = lambda n, s: runs[n].get(s)
ratio = lambda slow, fast: slow / fast if slow and fast else None
print(f"# {collective}, 4 ranks as 2 nodes x 2 of this machine, floats; time per call, us (best of rounds)")
print("#     bytes  hierarchical  flat-tcp  torch-gloo  one-node   vs-best-peer  vs-one-node")
ratios = []
for s in sizes:
    h = us("hierarchical", s)
    peers = [v for v in (us("flat_tcp", s), us("torch_gloo", s)) if v is not None]
    best_peer = min(peers) if peers else None
    r = ratio(best_peer, h)
    if r is not None:
        ratios.append(r)
    print(f"{s:11d}     {fmt(h)} {fmt(us('flat_tcp', s))}   {fmt(us('torch_gloo', s))} {fmt(us('one_node', s))}"
          f"        {rfmt(r)}      {rfmt(ratio(us('one_node', s), h))}")
print()
if ratios:
    print(f"{collective}: hierarchical speed against the best two-node peer: "
          f"min {min(ratios):.2f}x  mean {sum(ratios) / len(ratios):.2f}x  (above 1: faster)")
PY
