#!/usr/bin/env bash
# Collective bus bandwidth, side by side in one run, RANKS ranks on this
# node (2 by default: one a core here; RANKS=4 oversubscribes this 2-core
# machine, which shows the algorithms for more ranks, not their speed):
#   distrun's gloo backend  vs  PyTorch's torch.distributed (gloo) and a bare
#     Open MPI loop (MPI_Allreduce, MPI_Bcast, ...: Open MPI's own shared
#     memory), distrun with its shared-memory collectives (the default on one
#     node) and with TCP only (DISTRUN_COMM_SHM=0), as PyTorch's gloo is
#   distrun's mpi backend   vs  the bare Open MPI loop under mpirun
# and this machine's memory copy bandwidth as the physical limit. Floats,
# 4 KB to 256 MB (nccl-tests' sizes: the whole array of every rank's block
# for all_gather, reduce_scatter and alltoall): up to 1 MB with WARMUP +
# ITERS_SMALL calls per size (short calls need long loops to rise above
# timer and scheduler noise), from 4 MB with WARMUP + ITERS; each contender
# runs ROUNDS times, interleaved with its peers in alternating order, and
# keeps its best time per size. all_reduce is timed in place (as DDP calls
# it), broadcast too (MPI's and PyTorch's have one buffer), the others out
# of place. Ratios last. Targets (issue 31): distrun
# gloo >= 1.0x the best peer at every size; the mpi backend >= 0.97x bare
# MPI.
#   [RANKS=N] bench/collectives.sh [BUILD_DIR] [ROUNDS] [COLLECTIVE|every]
#   report: bench/results/collectives.txt
# COLLECTIVE: all_reduce (default), broadcast, all_gather, reduce_scatter,
# alltoall or sendrecv (a ring shift of SIZE bytes: send to the next rank
# while receiving from the previous; MPI_Sendrecv, PyTorch's
# batch_isend_irecv); `every` runs each in turn and ends with one line per
# collective.
set -euo pipefail
build=${1:-build}
rounds=${2:-6}
collective=${3:-all_reduce}
ranks=${RANKS:-2}
if [[ ! $ranks =~ ^[1-9][0-9]*$ ]] || ((ranks < 2)); then
  echo "collectives.sh: RANKS '$ranks': expected a whole number of ranks, at least 2" >&2
  exit 64
fi
# The report also goes to bench/results/collectives.txt (RESULTS=FILE
# elsewhere), dated and with the command, which the docs link; the runs
# that `every` starts (BENCH_SUMMARY set) write into their caller's.
if [[ -z ${BENCH_SUMMARY:-} ]]; then
  results=${RESULTS:-$(dirname "$0")/results/collectives.txt}
  mkdir -p "$(dirname "$results")"
  exec > >(tee "$results")
  echo "# ${RANKS:+RANKS=$RANKS }${ITERS:+ITERS=$ITERS }${ITERS_SMALL:+ITERS_SMALL=$ITERS_SMALL }bench/collectives.sh $build $rounds $collective, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1))"
fi
if [[ $collective == every ]]; then
  summaries=$(mktemp)
  trap 'rm -f "$summaries"' EXIT
  for c in all_reduce broadcast all_gather reduce_scatter alltoall sendrecv; do
    BENCH_SUMMARY=$summaries "$0" "$build" "$rounds" "$c"
    echo
  done
  echo "# every collective, $ranks ranks: distrun gloo against the best peer, and the mpi backend"
  cat "$summaries"
  exit 0
fi
iters=${ITERS:-20}
iters_small=${ITERS_SMALL:-200}
warmup=${WARMUP:-5}
bin=$build/bin
. "$(dirname "$0")/checks.sh"
need_built "$build" distrun distrun-bench copy_bandwidth
case $collective in
  all_reduce|broadcast) column=13 ;;  # in place (a broadcast has one buffer in MPI and PyTorch)
  all_gather|reduce_scatter|alltoall|sendrecv) column=9 ;;  # out of place
  *) echo "collectives.sh: COLLECTIVE '$collective': expected all_reduce, broadcast, all_gather, reduce_scatter, alltoall, sendrecv or every" >&2; exit 64 ;;
esac
python=/usr/bin/python3
small=(4096 16384 65536 262144 1048576)
large=(4194304 16777216 67108864 268435456)
mpirun=(mpirun --oversubscribe -np "$ranks")
[[ $(id -u) == 0 ]] && mpirun+=(--allow-run-as-root)
have_mpi=1
command -v mpirun >/dev/null && [[ -x $bin/mpi_collective_bench ]] || have_mpi=0
have_torch=1
$python -c 'import torch.distributed' 2>/dev/null || have_torch=0

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Each contender appends "bytes,time_us" lines to $tmp/NAME.ROUND, for
# the band of sizes ITERS and SIZES name.
distrun_gloo() {
  # shellcheck disable=SC2046
  "$bin/distrun" bench "$collective" $(bench_band "$warmup" "$2" "${@:3}") --nproc-per-node "$ranks" |
    awk -F, -v c="$column" 'NR>1 {print $4 "," $c}' >>"$tmp/distrun_gloo.$1"
}
distrun_tcp() {
  # shellcheck disable=SC2046
  DISTRUN_COMM_SHM=0 "$bin/distrun" bench "$collective" $(bench_band "$warmup" "$2" "${@:3}") --nproc-per-node "$ranks" |
    awk -F, -v c="$column" 'NR>1 {print $4 "," $c}' >>"$tmp/distrun_tcp.$1"
}
torch_gloo() {
  BENCH_ITERS=$2 BENCH_WARMUP=$warmup DISTRUN_PYTHON=$python \
    "$bin/distrun" run --log-prefix '' --cpu-bind none --nproc-per-node "$ranks" \
    "$(dirname "$0")/peers/torch_collective.py" "$collective" "${@:3}" >>"$tmp/torch_gloo.$1"
}
distrun_mpi() {
  # shellcheck disable=SC2046
  "${mpirun[@]}" "$bin/distrun" bench "$collective" $(bench_band "$warmup" "$2" "${@:3}") --backend mpi |
    awk -F, -v c="$column" 'NR>1 {print $4 "," $c}' >>"$tmp/distrun_mpi.$1"
}
bare_mpi() {
  "${mpirun[@]}" "$bin/mpi_collective_bench" "$collective" "$2" "$warmup" "${@:3}" >>"$tmp/bare_mpi.$1"
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
# What goes through the slots moves from one core's cache to another's;
# on a VM that speed changes as the host places its vCPUs
# (bench/results/between-cores.txt), and the slots' speed with it.
echo "# from one core's cache to another's: $("$bin/copy_bandwidth" --between-cores)"
# Large allgather and alltoall blocks and large messages are read from the
# peers with process_vm_readv: the kernel's copy between processes, whose
# speed beside memcpy's bounds them.
case $collective in
  all_gather | alltoall | sendrecv)
    echo "# one copy between processes: $("$bin/copy_bandwidth" --cross-process)"
    ;;
  all_reduce)
    # Every rank reads its input and writes its output at the same time:
    # what each has of the memory system then bounds a large allreduce.
    echo "# every rank copying at once: $("$bin/copy_bandwidth" --at-once "$ranks")"
    ;;
esac

$python - "$tmp" "$copy" "$collective" "${BENCH_SUMMARY:-}" "$ranks" <<'PY'
import glob, os, sys
tmp, copy, collective, summary_file = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
ranks = int(sys.argv[5])

def best(name):
    times = {}
    for path in glob.glob(os.path.join(tmp, name + ".*")):
        for line in open(path):
            size, us = line.strip().split(",")
            size, us = int(size), float(us)
            times[size] = min(times.get(size, us), us)
    return times

names = ("distrun_gloo", "distrun_tcp", "torch_gloo", "distrun_mpi", "bare_mpi")
runs = {n: best(n) for n in names}
sizes = sorted(runs["distrun_gloo"])
# Bus bandwidth, GB/s, as nccl-tests and distrun bench compute it: the
# algorithm bandwidth times 2(n-1)/n for all_reduce, (n-1)/n for all_gather,
# reduce_scatter and alltoall, 1 for broadcast and sendrecv.
share = (ranks - 1) / ranks
factor = {"all_reduce": 2 * share, "broadcast": 1.0, "sendrecv": 1.0}.get(collective, share)
bw = lambda n, s: s / runs[n][s] / 1e3 * factor if s in runs[n] else None
fmt = lambda v: f"{v:8.3f}" if v is not None else "     n/a"
ratio = lambda a, b: a / b if a and b else None
def best_peer(s):
    peers = [v for v in (bw("torch_gloo", s), bw("bare_mpi", s)) if v is not None]
    return max(peers) if peers else None
form = "in place" if collective in ("all_reduce", "broadcast") else "out of place"
print(f"# {collective}, {ranks} ranks, floats, {form}; busbw GB/s (best of rounds); copy limit {copy:.2f} GB/s")
print("# distrun-gloo: shared memory on one node (the default); gloo-tcp: DISTRUN_COMM_SHM=0;"
      " bare-mpi: Open MPI's own call (its shared memory)")
print("#     bytes  distrun-gloo  gloo-tcp  torch-gloo  bare-mpi  vs-best  tcp/torch  distrun-mpi   ratio  gloo/copy")
for s in sizes:
    g, c, t, m, b = (bw(n, s) for n in names)
    print(f"{s:11d}      {fmt(g)}  {fmt(c)}    {fmt(t)}  {fmt(b)} {fmt(ratio(g, best_peer(s)))}   {fmt(ratio(c, t))}"
          f"     {fmt(m)} {fmt(ratio(m, b))}   {fmt(g / copy if g else None)}")

lines = []
def summary(label, pairs, target):
    pairs = [p for p in pairs if p is not None]
    if not pairs:
        line = f"{collective:>14} {label}: not measured (peer missing)"
    else:
        line = (f"{collective:>14} {label}: min {min(pairs):.2f}x  mean {sum(pairs) / len(pairs):.2f}x"
                f"  (target >= {target}x)")
    print(line)
    lines.append(line)

print()
if collective == "all_reduce":
    summary("gloo-tcp/PyTorch, >= 1 MB", [ratio(bw("distrun_tcp", s), bw("torch_gloo", s)) for s in sizes if s >= 1 << 20], 1.0)
top = max(sizes)
print(f"share of copy limit at {top >> 20} MB: gloo {bw('distrun_gloo', top) / copy:.2f}")
summary("gloo/best peer, every size", [ratio(bw("distrun_gloo", s), best_peer(s)) for s in sizes], 1.0)
summary("mpi/bare MPI, every size  ", [ratio(bw("distrun_mpi", s), bw("bare_mpi", s)) for s in sizes], 0.97)
if summary_file:
    with open(summary_file, "a") as f:
        f.write("\n".join(lines[-2:]) + "\n")
PY
