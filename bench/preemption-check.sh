#!/usr/bin/env bash
# What distrun-train's preemption check costs a step (docs/training.md,
# "Preemption"): the linear workload on 2 ranks x 1 thread (32 steps an
# epoch), 200 epochs, each run's figure the median epoch (2-200) over its
# 32 steps, in microseconds. The binaries run in turn, ROUNDS times; the
# report gives each one's median and range over the rounds. Compare a
# build without the check (the commit before it) with this one:
#   bench/preemption-check.sh build 8 /tmp/before/bin/distrun-train build/bin/distrun-train
#   report: bench/results/preemption-check.txt
# (mnist: bench/train-ab.sh build 5 TRAIN=/tmp/before/bin/distrun-train "")
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: bench/preemption-check.sh BUILD_DIR ROUNDS TRAIN..." >&2; exit 64; }
build=$1 rounds=$2
shift 2
. "$(dirname "$0")/checks.sh"
need_built "$build" distrun
# The report also goes to bench/results/preemption-check.txt (RESULTS=FILE elsewhere),
# dated and with the command, which the docs link.
results=${RESULTS:-$(dirname "$0")/results/preemption-check.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# bench/preemption-check.sh $build $rounds $*, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1))"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for round in $(seq 1 "$rounds"); do
  for train in "$@"; do
    "$build/bin/distrun" run --nproc-per-node 2 "$train" linear --epochs 200 \
      --threads-per-rank 1 --progress none --metrics "$tmp/m.json" >/dev/null
    python3 -c '
import json, statistics, sys
epochs = json.load(open(sys.argv[1]))["epochs"][1:]
print(sys.argv[2], statistics.median(e["seconds"] for e in epochs) / 32 * 1e6)
' "$tmp/m.json" "$train" >>"$tmp/results"
  done
done
python3 -c '
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    train, us = line.rsplit(" ", 1)
    runs[train].append(float(us))
print(f"# linear, 2 ranks x 1 thread, us per step (median epoch / 32), {sys.argv[2]} rounds")
for train, us in runs.items():
    print(f"{train:48s} median {statistics.median(us):7.1f}  [{min(us):.1f}-{max(us):.1f}]")
' "$tmp/results" "$rounds"
