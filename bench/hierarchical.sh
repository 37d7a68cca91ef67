#!/usr/bin/env bash
# A job that spans nodes: two agents (`distrun run --nnodes 2`) are two
# nodes of two ranks each, and every contender runs the same collective,
# 4 ranks, side by side in one run:
#   hierarchical  distrun's default across nodes: shared memory within each
#                 node, TCP between one leader per node
#   flat-tcp      DISTRUN_COMM_SHM=0: every rank over TCP (what a multi-node
#                 job got before the hierarchical path)
#   torch-gloo    PyTorch's torch.distributed over gloo, the same agents
#   open-mpi      (HOSTS mode) Open MPI's own call (bench/peers/mpi_collective.cc)
#                 under `mpirun` across the same hosts, TCP on hsn0
#   one-node      all the ranks under one agent: all in shared memory (the
#                 upper bound the hierarchy approaches)
# By default the nodes are agents of this machine on loopback. HOSTS=N
# (2 to 9) makes them N hosts that are network namespaces
# (distrun-network-hosts: eth0 for the rendezvous, hsn0 for the
# collectives, GLOO_SOCKET_IFNAME=hsn0), each hsn0 capped at MBIT Mbit/s
# (default 1000; 0 not capped), 2 ranks each; then every contender's
# bytes sent on each host's hsn0 (its interface counter) are counted over
# the large sizes and printed as a multiple of the data, beside the count
# of the hierarchy's algorithm.
# Floats, 4 KB to 64 MB (HOSTS mode: to 16 MB), in place (but see below);
# each contender runs ROUNDS times, interleaved in alternating order,
# keeping its best time per size. The ranks on this machine's cores are
# oversubscribed where it has fewer than four: the ratios compare paths on
# the same load, not absolute speeds.
# Ratios last: hierarchical against the best of flat-tcp and torch-gloo
# (and open-mpi).
#   [HOSTS=N [MBIT=M]] bench/hierarchical.sh [BUILD_DIR] [ROUNDS] [all_reduce|broadcast|reduce_scatter|all_gather|alltoall|sendrecv]
#   report: bench/results/hierarchical.txt (HOSTS mode: bench/results/hierarchical-hosts.txt,
#   through bench/hierarchical-hosts.sh)
# (all_gather, reduce_scatter and alltoall out of place, SIZE the whole
# array of every rank's blocks, as nccl-tests counts it; sendrecv a ring
# shift of SIZE bytes, each rank sending to the next: ranks 0 and 2 send
# within their node, 1 and 3 to the other node.)
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
collective=${3:-all_reduce}
hosts=${HOSTS:-}
mbit=${MBIT:-1000}
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
# The report also goes to bench/results/hierarchical.txt (RESULTS=FILE
# elsewhere), dated and with the command, which the docs link. In HOSTS
# mode bench/hierarchical-hosts.sh writes the report (of every case).
if [[ -z $hosts ]]; then
  results=${RESULTS:-$(dirname "$0")/results/hierarchical.txt}
  mkdir -p "$(dirname "$results")"
  exec > >(tee "$results")
  echo "# ${ITERS:+ITERS=$ITERS }${ITERS_SMALL:+ITERS_SMALL=$ITERS_SMALL }bench/hierarchical.sh $build $rounds $collective, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1))"
fi
if [[ -n $hosts && -z ${NETWORK_HOSTS:-} ]]; then
  [[ $hosts =~ ^[2-9]$ ]] || { echo "hierarchical.sh: HOSTS '$hosts': expected 2 to 9 hosts" >&2; exit 64; }
  need_built "$build" distrun-network-hosts mpi_collective_bench
  exec "$bin/distrun-network-hosts" "$hosts" "$mbit" bash "$0" "$@"
fi
nodes=${NETWORK_HOSTS:-2}
ranks=$((2 * nodes))
python=/usr/bin/python3
small=(4096 16384 65536 262144 1048576)
large=(4194304 16777216 67108864)
[[ -n ${NETWORK_HOSTS:-} ]] && large=(4194304 16777216)
have_torch=1
$python -c 'import torch.distributed' 2>/dev/null || have_torch=0
[[ $collective == reduce_scatter ]] && have_torch=0  # PyTorch's gloo has none
bin=$(realpath "$bin")
peers=$(realpath "$(dirname "$0")/peers")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
free_port() { $python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# on_node N PROGRAM ARGS...: PROGRAM on node N (from 1): a host of
# distrun-network-hosts in HOSTS mode, else this machine.
on_node() {
  local node=$1; shift
  if [[ -z ${NETWORK_HOSTS:-} ]]; then "$@"; return; fi
  local words="NETWORK_HOST_$node"
  eval "${!words}" '"$@"'
}
# hsn0_sent: each host's bytes sent on hsn0 so far, one line (HOSTS mode;
# /proc/net/dev is the reader's network namespace's).
hsn0_sent() {
  local node
  for node in $(seq 1 "$nodes"); do
    on_node "$node" awk '$1 == "hsn0:" {print $10}' /proc/net/dev
  done | paste -sd' '
}
# nodes_run OUT PROGRAM ARGS...: every node's agent of 2 ranks; node 0's
# output (rank 0's lines) to OUT. In HOSTS mode they meet at nid001 (eth0)
# and the collectives go over hsn0.
nodes_run() {
  local out=$1 port endpoint=127.0.0.1 node pids=()
  shift
  port=$(free_port)
  [[ -n ${NETWORK_HOSTS:-} ]] && endpoint=nid001
  local fast=()
  [[ -n ${NETWORK_HOSTS:-} ]] && fast=(GLOO_SOCKET_IFNAME=hsn0)
  for node in $(seq "$nodes" -1 1); do
    on_node "$node" env DISTRUN_TOKEN=bench "${fast[@]}" \
      "$bin/distrun" run --nnodes "$nodes" --nproc-per-node 2 --log-prefix '' \
      --cpu-bind none --rdzv-endpoint "$endpoint:$port" "$@" >"$tmp/node$node.out" &
    pids+=($!)
  done
  wait "${pids[@]}"
  cat "$tmp"/node*.out >>"$out"
}
keep() { awk -F, -v c="$column" '$1 ~ /^[a-z_]+$/ && $2 == "gloo" {print $4 "," $c}'; }
hierarchical() {
  # shellcheck disable=SC2046
  nodes_run "$tmp/raw" "$bin/distrun-bench" "$collective" $(bench_band "$warmup" "$2" "${@:3}")
  keep <"$tmp/raw" >>"$tmp/hierarchical.$1"; rm -f "$tmp/raw"
}
flat_tcp() {
  # shellcheck disable=SC2046
  DISTRUN_COMM_SHM=0 nodes_run "$tmp/raw" "$bin/distrun-bench" "$collective" $(bench_band "$warmup" "$2" "${@:3}")
  keep <"$tmp/raw" >>"$tmp/flat_tcp.$1"; rm -f "$tmp/raw"
}
torch_gloo() {
  BENCH_ITERS=$2 BENCH_WARMUP=$warmup DISTRUN_PYTHON=$python \
    nodes_run "$tmp/torch_gloo.$1" "$peers/torch_collective.py" "$collective" "${@:3}"
}
# Open MPI's mpirun on nid001 starts its daemons on the other hosts
# through this agent instead of ssh: `AGENT HOST COMMAND...`.
cat >"$tmp/rsh-agent" <<'AGENT'
#!/bin/bash
host=$1; shift
words="NETWORK_HOST_$((10#${host#nid}))"
line="$*"
eval "${!words}" sh -c '"$line"'
AGENT
chmod +x "$tmp/rsh-agent"
open_mpi() {
  local hostlist
  hostlist=$(for node in $(seq 1 "$nodes"); do printf 'nid%03d:2,' "$node"; done)
  on_node 1 mpirun --allow-run-as-root --host "${hostlist%,}" -np "$ranks" --bind-to none \
    --mca plm_rsh_agent "$tmp/rsh-agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca oob_tcp_if_include eth0 --mca btl self,vader,tcp --mca btl_tcp_if_include hsn0 \
    "$bin/mpi_collective_bench" "$collective" "$2" "$warmup" "${@:3}" >>"$tmp/open_mpi.$1"
}
one_node() {
  # shellcheck disable=SC2046
  on_node 1 "$bin/distrun" bench "$collective" $(bench_band "$warmup" "$2" "${@:3}") --nproc-per-node "$ranks" |
    keep >>"$tmp/one_node.$1"
}
# counted BAND CONTENDER ARGS...: runs it; in HOSTS mode with the large
# sizes also what each host sent on hsn0, and the data those calls moved:
# warmup and timed calls times each size, twice for `distrun bench`, which
# runs each size out of place and in place, as nccl-tests does.
counted() {
  local band=$1 contender=$2 before after data=0 size passes=2
  shift 2
  [[ $contender == torch_gloo || $contender == open_mpi ]] && passes=1
  [[ -n ${NETWORK_HOSTS:-} && $band == large ]] && before=$(hsn0_sent)
  "$contender" "$@"
  [[ -n ${before:-} ]] || return 0
  after=$(hsn0_sent)
  for size in "${@:3}"; do data=$((data + passes * (warmup + $2) * size)); done
  echo "$before|$after|$data" >>"$tmp/bytes.$contender"
}

contenders=(hierarchical flat_tcp torch_gloo one_node)
[[ -n ${NETWORK_HOSTS:-} ]] && contenders=(hierarchical flat_tcp torch_gloo open_mpi one_node)
for round in $(seq 1 "$rounds"); do
  echo "round $round of $rounds" >&2
  for b in small large; do
    if [[ $b == small ]]; then n=$iters_small; sizes=("${small[@]}"); else n=$iters; sizes=("${large[@]}"); fi
    order=("${contenders[@]}")
    ((round % 2)) || mapfile -t order < <(printf '%s\n' "${contenders[@]}" | tac)
    for contender in "${order[@]}"; do
      [[ $contender == torch_gloo ]] && ! ((have_torch)) && continue
      counted "$b" "$contender" "$round" "$n" "${sizes[@]}"
    done
  done
done

where="$nodes nodes x 2 ranks of this machine"
[[ -n ${NETWORK_HOSTS:-} ]] && where="$nodes hosts x 2 ranks (network namespaces; hsn0 ${mbit} Mbit/s, 0: not capped)"
$python - "$tmp" "$collective" "$where" "$nodes" <<'PY'
import glob, os, sys
tmp, collective, where, nodes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def best(name):
    times = {}
    for path in glob.glob(os.path.join(tmp, name + ".*")):
        if path.startswith(os.path.join(tmp, "bytes.")):
            continue
        for line in open(path):
            parts = line.strip().split(",")
            if len(parts) != 2 or not parts[0].isdigit():
                continue
            size, us = int(parts[0]), float(parts[1])
            times[size] = min(times.get(size, us), us)
    return times

names = ("hierarchical", "flat_tcp", "torch_gloo", "open_mpi", "one_node")
runs = {n: best(n) for n in names}
shown = [n for n in names if runs[n] or n in ("hierarchical", "flat_tcp", "torch_gloo", "one_node")]
sizes = sorted(runs["hierarchical"])
fmt = lambda v: f"{v:12.1f}" if v is not None else "         n/a"
rfmt = lambda v: f"{v:8.2f}" if v is not None else "     n/a"
us = lambda n, s: runs[n].get(s)
ratio = lambda slow, fast: slow / fast if slow and fast else None
print(f"# {collective}, {2 * nodes} ranks as {where}, floats; time per call, us (best of rounds)")
print("#      bytes" + "".join(f"{n.replace('_', '-'):>13}" for n in shown) + "  vs-best-peer vs-one-node")
ratios = []
for s in sizes:
    h = us("hierarchical", s)
    peers = [v for v in (us(n, s) for n in ("flat_tcp", "torch_gloo", "open_mpi")) if v is not None]
    r = ratio(min(peers) if peers else None, h)
    if r is not None:
        ratios.append(r)
    print(f"{s:12d} " + "".join(fmt(us(n, s)) + " " for n in shown)
          + f"     {rfmt(r)}    {rfmt(ratio(us('one_node', s), h))}")

# What crossed each host's hsn0 over the large sizes, as a multiple of
# the data of those calls, against the hierarchy's algorithm.
L, P = nodes, 2 * nodes  # leaders (one a host), ranks
expected = {
    "all_reduce": f"2(L-1)/L = {2 * (L - 1) / L:.2f}, each leader in Gloo's ring (a flat ring: 2(P-1)/P = {2 * (P - 1) / P:.2f})",
    "reduce_scatter": f"2(L-1)/L = {2 * (L - 1) / L:.2f}, an allreduce of the whole input",
    "broadcast": f"L-1 = {L - 1} in all, from the root's host and those that pass it on",
    "all_gather": f"(L-1)/L = {(L - 1) / L:.2f} below 8 MiB; from 8 MiB Gloo's ring among all ranks, (P-1)/P = {(P - 1) / P:.2f}",
    "alltoall": f"2(P-2)/P = {2 * (P - 2) / P:.2f}, every block to another host once",
    "sendrecv": "1, one rank of each host sends to the next host",
}[collective]
counted = sorted(glob.glob(os.path.join(tmp, "bytes.*")))
if counted:
    print()
    print(f"# bytes sent on hsn0 over the large sizes, per host, as a multiple of the data moved "
          f"(hierarchy's algorithm: {expected})")
    for path in counted:
        name = os.path.basename(path)[len("bytes."):]
        per_host = []
        for line in open(path):
            before, after, data = line.strip().split("|")
            deltas = [int(a) - int(b) for a, b in zip(after.split(), before.split())]
            per_host.append([d / int(data) for d in deltas])
        mean = [sum(h[i] for h in per_host) / len(per_host) for i in range(nodes)]
        print(f"{name.replace('_', '-'):>13}: " + "  ".join(f"nid{i + 1:03d} {m:5.2f}" for i, m in enumerate(mean)))
print()
if ratios:
    print(f"{collective}: hierarchical speed against the best peer across nodes: "
          f"min {min(ratios):.2f}x  mean {sum(ratios) / len(ratios):.2f}x  "
          f"at 4 KB {ratios[0]:.2f}x  at {sizes[-1] >> 20} MB {ratios[-1]:.2f}x  (above 1: faster)")
PY
