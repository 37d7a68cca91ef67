#!/usr/bin/env bash
# Launcher start-up, side by side: time from invocation until every worker
# has started, and total wall time, for two trivial workers on this node.
# distrun run against Open MPI's mpirun and against torchrun where it runs
# (Debian's torchrun crashes on Python 3.11; then the floor of its start-up,
# importing torch.distributed.run, is measured instead and said so).
# Median of RUNS runs each; ratios last.
#   bench/launch.sh [BUILD_DIR] [RUNS]
set -euo pipefail
build=${1:-build}
runs=${2:-30}
distrun=$build/bin/distrun
[[ -x $distrun ]] || { echo "build first: cmake --build $build" >&2; exit 1; }
python=/usr/bin/python3

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The worker: record when it started (ns), nothing else.
cat >"$tmp/worker" <<'W'
#!/bin/sh
date +%s%N >>"$STAMPS"
W
chmod +x "$tmp/worker"
export STAMPS=$tmp/stamps

now() { date +%s%N; }
median() { sort -n | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

# measure NAME CMD...: fills start_<NAME> and wall_<NAME> (ms, medians).
measure() {
  local name=$1; shift
  : >"$tmp/start.$name"; : >"$tmp/wall.$name"
  for ((i = 0; i < runs; i++)); do
    : >"$STAMPS"
    local t0 t1
    t0=$(now)
    "$@" >/dev/null 2>&1
    t1=$(now)
    [[ $(wc -l <"$STAMPS") -eq 2 ]] || { echo "$name: expected 2 workers to start" >&2; exit 1; }
    echo $(( ($(sort -n "$STAMPS" | tail -1) - t0) / 1000 )) >>"$tmp/start.$name"
    echo $(( (t1 - t0) / 1000 )) >>"$tmp/wall.$name"
  done
  printf -v "start_$name" '%s' "$(median <"$tmp/start.$name")"
  printf -v "wall_$name" '%s' "$(median <"$tmp/wall.$name")"
}

ms() { awk -v us="$1" 'BEGIN{printf "%8.1f ms", us/1000}'; }

measure distrun "$distrun" run --nproc-per-node 2 "$tmp/worker"
measure mpirun mpirun --allow-run-as-root --oversubscribe -np 2 "$tmp/worker"

torchrun_note=""
if /usr/bin/torchrun --standalone --nproc_per_node 2 --no_python "$tmp/worker" >"$tmp/torchrun.log" 2>&1 \
   && [[ $(wc -l <"$STAMPS") -ge 2 ]]; then
  measure torchrun /usr/bin/torchrun --standalone --nproc_per_node 2 --no_python "$tmp/worker"
else
  torchrun_note="Debian's torchrun does not run here: $(grep -m1 -E 'Error' "$tmp/torchrun.log" || tail -1 "$tmp/torchrun.log")"
  : >"$tmp/wall.floor"
  for ((i = 0; i < runs; i++)); do
    t0=$(now); "$python" -c 'import torch.distributed.run' >/dev/null 2>&1; t1=$(now)
    echo $(( (t1 - t0) / 1000 )) >>"$tmp/wall.floor"
  done
  start_torchrun=$(median <"$tmp/wall.floor")
  wall_torchrun=$start_torchrun
fi

echo "two trivial workers, median of $runs runs"
printf '%-10s %14s %14s\n' launcher "all started" "wall time"
printf '%-10s %14s %14s\n' distrun "$(ms "$start_distrun")" "$(ms "$wall_distrun")"
printf '%-10s %14s %14s\n' mpirun "$(ms "$start_mpirun")" "$(ms "$wall_mpirun")"
if [[ -n $torchrun_note ]]; then
  printf '%-10s %14s %14s   (floor: python3 -c "import torch.distributed.run")\n' torchrun \
    "$(ms "$start_torchrun")" "$(ms "$wall_torchrun")"
  echo "$torchrun_note"
else
  printf '%-10s %14s %14s\n' torchrun "$(ms "$start_torchrun")" "$(ms "$wall_torchrun")"
fi
echo
awk -v d="$start_distrun" -v m="$start_mpirun" -v t="$start_torchrun" \
    -v dw="$wall_distrun" -v mw="$wall_mpirun" -v floor="${torchrun_note:+ (against its floor)}" 'BEGIN{
  printf "start-up: distrun is %.1fx faster than mpirun (target >= 2x)\n", m/d
  printf "start-up: distrun is %.1fx faster than torchrun%s (target >= 20x)\n", t/d, floor
  printf "wall time: distrun is %.1fx faster than mpirun\n", mw/dw }'
