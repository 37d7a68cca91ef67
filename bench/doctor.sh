#!/usr/bin/env bash
# distrun doctor against the checks users run by hand today, side by side on
# a local Slurm cluster of NODES nodes (distrun/testing/local_slurm.sh): the
# doctor with all of its 18 checks, and the pile it replaces, run as people
# run it: `srun python3 -c 'import torch'` on every node, an nccl-tests-style
# allreduce (`distrun bench all_reduce`, the same sizes the doctor measures),
# and `srun` of df/ulimit/ip to look at space, limits and interfaces.
# Median wall time of RUNS runs each; the ratio last. Needs root (munge,
# slurmd) and Debian's python3-torch.
#   bench/doctor.sh [BUILD_DIR] [RUNS] [NODES]    report: bench/results/doctor.txt
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/checks.sh"
build=${1:-build}
runs=${2:-5}
nodes=${3:-3}
need_built "$build" distrun distrun-doctor distrun-bench
need_torch /usr/bin/python3
# The report also goes to bench/results/doctor.txt (RESULTS=FILE elsewhere),
# dated and with the command, which the docs link.
results=${RESULTS:-$(dirname "$0")/results/doctor.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# bench/doctor.sh $build $runs $nodes, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1))"
distrun=$(cd "$build/bin" && pwd)/distrun
cluster=$here/../distrun/testing/local_slurm.sh

tmp=$(mktemp -d)
trap '"$cluster" stop "$tmp/slurm" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
eval "$("$cluster" start "$tmp/slurm" "$nodes")"

now() { date +%s%N; }
median() { sort -n | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
srun_nodes=(srun -N "$nodes" --ntasks-per-node=1 --cpus-per-task="$(nproc)" --cpu-bind=none)

doctor() {
  # The local nodes share this machine's cores: their matrix products
  # take turns, so only a node far slower than the others is a straggler.
  "${srun_nodes[@]}" "$distrun" doctor --python /usr/bin/python3 --straggler-margin 300 \
    --format json >"$tmp/report.json" ||
    { /usr/bin/python3 -m json.tool "$tmp/report.json" | grep -B2 -A3 '"fail"' >&2; return 1; }
}
by_hand() {
  "${srun_nodes[@]}" /usr/bin/python3 -c 'import torch; print(torch.__version__)'
  "${srun_nodes[@]}" "$distrun" bench all_reduce -b 1M -e 64M -f 4 -n 5 -w 2
  "${srun_nodes[@]}" sh -c 'df -h "${TMPDIR:-/tmp}" /dev/shm; ulimit -l -n; ip -br link'
}

# measure NAME FUNCTION: the median wall time in ms, in wall_<NAME>.
measure() {
  local name=$1 fn=$2 t0 t1
  : >"$tmp/wall.$name"
  for ((i = 0; i < runs; i++)); do
    t0=$(now)
    "$fn" >/dev/null 2>"$tmp/err.$name" || { echo "$name failed:" >&2; cat "$tmp/err.$name" >&2; exit 1; }
    t1=$(now)
    echo $(((t1 - t0) / 1000000)) >>"$tmp/wall.$name"
  done
  printf -v "wall_$name" '%s' "$(median <"$tmp/wall.$name")"
}

measure doctor doctor
measure by_hand by_hand

echo "distrun doctor on $nodes local Slurm nodes, median of $runs runs"
/usr/bin/python3 - "$tmp/report.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
print(f"  {len(report['checks'])} checks, state {report['state']}; slowest checks (max over nodes):")
rows = sorted(((max(r["seconds"] for r in c["results"]), c["name"]) for c in report["checks"]),
              reverse=True)
for seconds, name in rows[:5]:
    print(f"    {name:<14} {seconds * 1000:8.1f} ms")
PY
printf '  %-48s %8d ms\n' "distrun doctor (18 checks)" "$wall_doctor"
printf '  %-48s %8d ms\n' "by hand (import torch, allreduce, df/ulimit/ip)" "$wall_by_hand"
awk -v d="$wall_doctor" -v h="$wall_by_hand" \
  'BEGIN{printf "doctor / by hand wall time: %.2fx (18 checks against 3)\n", d/h}'
