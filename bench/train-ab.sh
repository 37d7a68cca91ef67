#!/usr/bin/env bash
# A/B of distrun-train configurations on the mnist CNN, 2 ranks x 1 thread:
# the configurations run in turn, RUNS times each, the order rotated by one
# each run, so that the machine's drift and any position in the turn fall
# on all of them alike; each run's figure is the mean samples/s of epochs
# 2-3 (epoch 1 warms up), and the report gives each configuration's
# median, mean and range over the runs.
#   bench/train-ab.sh [BUILD_DIR] RUNS CONFIG...
# A CONFIG is one word list: BIND=none|cores picks `distrun run --cpu-bind`
# for it (default: $BIND, else none), other VAR=VALUE words set the
# environment, the other words are distrun-train flags. For example the
# shared-memory allreduce against TCP, and overlap on against off:
#   bench/train-ab.sh build 5 DISTRUN_COMM_SHM=1 DISTRUN_COMM_SHM=0
#   bench/train-ab.sh build 5 "--bucket-cap-mb 25" "--no-overlap"
# EFFICIENCY=1 adds to each turn one rank alone on core 0 and one alone on
# core 1 (taskset) and reports each configuration's scaling efficiency
# per run: its samples/s over the sum of that turn's two lone ranks.
# SAMPLES=N trains on N samples an epoch (default 3000).
#   EFFICIENCY=1 bench/train-ab.sh build 8 "" BIND=cores "--balance-load"
set -euo pipefail
build=build
[[ $# -gt 0 && ! $1 =~ ^[0-9]+$ ]] && { build=$1; shift; }
[[ $# -ge 2 && $1 =~ ^[0-9]+$ ]] || {
  echo "usage: bench/train-ab.sh [BUILD_DIR] RUNS CONFIG..." >&2; exit 64; }
runs=$1; shift
bin=$build/bin
for b in distrun distrun-train; do
  [[ -x $bin/$b ]] || { echo "build first: cmake --build $build" >&2; exit 1; }
done
workload=(mnist --epochs 3 --limit-train "${SAMPLES:-3000}" --limit-test 200
          --threads-per-rank 1 --progress none)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# one_config K CONFIG RUN: configuration K on 2 ranks, metrics in $tmp/K.RUN.json.
one_config() {
  local words env_words=() flags=() bind=${BIND:-none}
  read -r -a words <<<"$2"
  for w in "${words[@]}"; do
    if [[ $w == BIND=* ]]; then bind=${w#BIND=}
    elif [[ $w =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; then env_words+=("$w")
    else flags+=("$w"); fi
  done
  env "${env_words[@]}" "$bin/distrun" run --cpu-bind "$bind" --nproc-per-node 2 \
    "$bin/distrun-train" "${workload[@]}" "${flags[@]}" --metrics "$tmp/$1.$3.json" >/dev/null
}

# lone CORE RUN: one rank alone on CORE, metrics in $tmp/lone.CORE.RUN.json.
lone() {
  taskset -c "$1" "$bin/distrun" run --nproc-per-node 1 "$bin/distrun-train" "${workload[@]}" \
    --metrics "$tmp/lone.$1.$2.json" >/dev/null
}

configs=("$@")
turn=()
[[ ${EFFICIENCY:-0} == 1 ]] && turn+=(lone0 lone1)
for k in "${!configs[@]}"; do turn+=("$k"); done
for run in $(seq "$runs"); do
  echo "run $run of $runs" >&2
  for i in "${!turn[@]}"; do
    t=${turn[$(((i + run - 1) % ${#turn[@]}))]}
    case $t in
      lone0) lone 0 "$run" ;;
      lone1) lone 1 "$run" ;;
      *) one_config "$t" "${configs[$t]}" "$run" ;;
    esac
  done
done
/usr/bin/python3 - "$tmp" "$runs" "${EFFICIENCY:-0}" "$@" <<'PY'
import json, statistics, sys
tmp, runs, efficiency, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4:]

def samples_per_second(name, run):  # mean of epochs 2-3
    epochs = json.load(open(f"{tmp}/{name}.{run}.json"))["epochs"]
    return statistics.mean(e["samples_per_second"] for e in epochs[1:])

def summary(v, digits):
    return (f"median {statistics.median(v):7.{digits}f}  mean {statistics.mean(v):7.{digits}f}"
            f"  [{min(v):.{digits}f}-{max(v):.{digits}f}]")

every = range(1, runs + 1)
print(f"# mnist, 2 ranks x 1 thread, samples/s (mean of epochs 2-3), {runs} runs each")
for k, config in enumerate(configs):
    print(f"{config or '(defaults)':40s} {summary([samples_per_second(k, r) for r in every], 1)}")
if efficiency:
    lone = {r: samples_per_second("lone.0", r) + samples_per_second("lone.1", r) for r in every}
    print(f"{'1 rank on core 0 + 1 rank on core 1':40s} {summary(list(lone.values()), 1)}")
    print("# scaling efficiency: 2 ranks over the two lone ranks of the same turn, per run")
    for k, config in enumerate(configs):
        e = [samples_per_second(k, r) / lone[r] for r in every]
        print(f"{config or '(defaults)':40s} {summary(e, 3)}  " + " ".join(f"{x:.3f}" for x in e))
PY
