#!/usr/bin/env bash
# A/B of distrun-train configurations on the mnist CNN, 2 ranks x 1 thread:
# the configurations run in turn, RUNS times each, the order rotated by one
# each run, so that the machine's drift and any position in the turn fall
# on all of them alike; each run's figure is the mean samples/s of epochs
# 2-3 (epoch 1 warms up), and the report gives each configuration's
# median, mean and range over the runs.
#   bench/train-ab.sh [BUILD_DIR] RUNS CONFIG...    report: bench/results/train-ab.txt
# A CONFIG is one word list: BIND=none|cores picks `distrun run --cpu-bind`
# for it (default: $BIND, else none), other VAR=VALUE words set the
# environment, the other words are distrun-train flags. For example the
# shared-memory allreduce against TCP, and overlap on against off:
#   bench/train-ab.sh build 5 DISTRUN_COMM_SHM=1 DISTRUN_COMM_SHM=0
#   bench/train-ab.sh build 5 "--bucket-cap-mb 25" "--no-overlap"
# EFFICIENCY=1 adds to each turn one rank alone on core 0 and one alone on
# core 1 (taskset) and reports each configuration's scaling efficiency
# per run: its samples/s over the sum of that turn's two lone ranks.
# SAMPLES=N trains on N samples an epoch (default 3000). TRAIN=PATH runs
# another build's distrun-train for that configuration (its lone ranks
# too), to compare two builds:
#   EFFICIENCY=1 bench/train-ab.sh build 8 "" BIND=cores "--balance-load"
#   EFFICIENCY=1 bench/train-ab.sh build 8 TRAIN=/tmp/before/bin/distrun-train ""
set -euo pipefail
build=build
[[ $# -gt 0 && ! $1 =~ ^[0-9]+$ ]] && { build=$1; shift; }
[[ $# -ge 2 && $1 =~ ^[0-9]+$ ]] || {
  echo "usage: bench/train-ab.sh [BUILD_DIR] RUNS CONFIG..." >&2; exit 64; }
runs=$1; shift
bin=$build/bin
. "$(dirname "$0")/checks.sh"
need_built "$build" distrun distrun-train
# The report also goes to bench/results/train-ab.txt (RESULTS=FILE elsewhere),
# dated and with the command, which the docs link.
results=${RESULTS:-$(dirname "$0")/results/train-ab.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# ${EFFICIENCY:+EFFICIENCY=$EFFICIENCY }${SAMPLES:+SAMPLES=$SAMPLES }${BIND:+BIND=$BIND }bench/train-ab.sh $build $runs ${*@Q}, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1))"
workload=(mnist --epochs 3 --limit-train "${SAMPLES:-3000}" --limit-test 200
          --threads-per-rank 1 --progress none)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The distrun-train binaries the configurations run (TRAIN=), each once;
# trains[K] is configuration K's index into them.
configs=("$@")
binaries=() trains=()
for k in "${!configs[@]}"; do
  b=$bin/distrun-train
  for w in ${configs[$k]}; do [[ $w == TRAIN=* ]] && b=${w#TRAIN=}; done
  [[ -x $b ]] || { echo "configuration '${configs[$k]}': no distrun-train at $b" >&2; exit 64; }
  i=0
  while ((i < ${#binaries[@]})) && [[ ${binaries[$i]} != "$b" ]]; do i=$((i + 1)); done
  ((i < ${#binaries[@]})) || binaries+=("$b")
  trains+=("$i")
done

# one_config K CONFIG RUN: configuration K on 2 ranks, metrics in $tmp/K.RUN.json.
one_config() {
  local words env_words=() flags=() bind=${BIND:-none}
  read -r -a words <<<"$2"
  for w in "${words[@]}"; do
    if [[ $w == BIND=* ]]; then bind=${w#BIND=}
    elif [[ $w == TRAIN=* ]]; then :
    elif [[ $w =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; then env_words+=("$w")
    else flags+=("$w"); fi
  done
  env "${env_words[@]}" "$bin/distrun" run --cpu-bind "$bind" --nproc-per-node 2 \
    "${binaries[${trains[$1]}]}" "${workload[@]}" "${flags[@]}" --metrics "$tmp/$1.$3.json" \
    >/dev/null
}

# lone B CORE RUN: binary B's one rank alone on CORE, metrics in
# $tmp/lone.B.CORE.RUN.json.
lone() {
  taskset -c "$2" "$bin/distrun" run --nproc-per-node 1 "${binaries[$1]}" "${workload[@]}" \
    --metrics "$tmp/lone.$1.$2.$3.json" >/dev/null
}

turn=()
if [[ ${EFFICIENCY:-0} == 1 ]]; then
  for b in "${!binaries[@]}"; do turn+=("lone $b 0" "lone $b 1"); done
fi
for k in "${!configs[@]}"; do turn+=("$k"); done
for run in $(seq "$runs"); do
  echo "run $run of $runs" >&2
  for i in "${!turn[@]}"; do
    t=${turn[$(((i + run - 1) % ${#turn[@]}))]}
    case $t in
      lone*) read -r _ b core <<<"$t"; lone "$b" "$core" "$run" ;;
      *) one_config "$t" "${configs[$t]}" "$run" ;;
    esac
  done
done
/usr/bin/python3 - "$tmp" "$runs" "${EFFICIENCY:-0}" "${trains[*]}" "$@" <<'PY'
import json, statistics, sys
tmp, runs, efficiency = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
trains, configs = [int(b) for b in sys.argv[4].split()], sys.argv[5:]

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
    lone = {(b, r): samples_per_second(f"lone.{b}.0", r) + samples_per_second(f"lone.{b}.1", r)
            for b in set(trains) for r in every}
    for b in sorted(set(trains)):
        owner = configs[trains.index(b)] or "(defaults)"
        name = "1 rank on core 0 + 1 rank on core 1" + (f", binary of {owner}"
                                                         if len(set(trains)) > 1 else "")
        print(f"{name:40s} {summary([lone[b, r] for r in every], 1)}")
    print("# scaling efficiency: 2 ranks over the two lone ranks of the same turn, per run")
    for k, config in enumerate(configs):
        e = [samples_per_second(k, r) / lone[trains[k], r] for r in every]
        print(f"{config or '(defaults)':40s} {summary(e, 3)}  " + " ".join(f"{x:.3f}" for x in e))
PY
