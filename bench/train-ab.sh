#!/usr/bin/env bash
# A/B of distrun-train configurations on the mnist CNN, 2 ranks x 1 thread:
# the configurations run in turn, RUNS times each, so that the machine's
# drift falls on all of them alike; each run's figure is the mean
# samples/s of epochs 2-3 (epoch 1 warms up), and the report gives each
# configuration's median, mean and range over the runs.
#   bench/train-ab.sh [BUILD_DIR] RUNS CONFIG...       (BIND=cores pins each rank)
# A CONFIG is one word list: VAR=VALUE words set the environment, the
# other words are distrun-train flags. For example the shared-memory
# allreduce against TCP, and overlap on against off:
#   bench/train-ab.sh build 5 DISTRUN_COMM_SHM=1 DISTRUN_COMM_SHM=0
#   bench/train-ab.sh build 5 "--bucket-cap-mb 25" "--no-overlap"
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
workload=(mnist --epochs 3 --limit-train 3000 --limit-test 200 --threads-per-rank 1
          --progress none)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for run in $(seq "$runs"); do
  echo "run $run of $runs" >&2
  k=0
  for config in "$@"; do
    read -r -a words <<<"$config"
    env_words=() flags=()
    for w in "${words[@]}"; do
      if [[ $w =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; then env_words+=("$w"); else flags+=("$w"); fi
    done
    env "${env_words[@]}" "$bin/distrun" run --cpu-bind "${BIND:-none}" --nproc-per-node 2 \
      "$bin/distrun-train" "${workload[@]}" "${flags[@]}" --metrics "$tmp/$k.$run.json" >/dev/null
    k=$((k + 1))
  done
done
/usr/bin/python3 - "$tmp" "$runs" "$@" <<'PY'
import json, statistics, sys
tmp, runs, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
print(f"# mnist, 2 ranks x 1 thread, samples/s (mean of epochs 2-3), {runs} runs each")
for k, config in enumerate(configs):
    v = []
    for run in range(1, runs + 1):
        epochs = json.load(open(f"{tmp}/{k}.{run}.json"))["epochs"]
        v.append(statistics.mean(e["samples_per_second"] for e in epochs[1:]))
    print(f"{config:40s} median {statistics.median(v):7.1f}  mean {statistics.mean(v):7.1f}"
          f"  [{min(v):.1f}-{max(v):.1f}]")
PY
