#!/usr/bin/env bash
# Elastic recovery: how long from a node's death to training again.
# Three agents as three nodes of this machine (distrun run --nnodes 2:3, each
# with a loopback address of its own, 127.0.0.12-14, meeting at 127.0.0.1) run
# distrun-train linear with a snapshot every 20 steps. Mid-training one agent
# is SIGKILLed (its worker dies with it, as on a node that fails): node 2's,
# or node 0's, which hosts the rendezvous store. The time measured is from the
# kill to the line of the re-formed job's rank 0 saying it resumes from the
# snapshot (the rendezvous, the new workers' start, DDP's set-up and the
# snapshot's load are in it; the first step is next). Each case REPEATS times
# (default 3); the median is printed, the last line the summary.
#   bench/elastic.sh [BUILD_DIR] [REPEATS]       BUILD_DIR: build
# torchrun is measured where it runs: Debian's (python3-torch under Python
# 3.11) fails before starting any worker, which the script checks and says;
# PyPI's torchrun 2.x (scripts/torch-venv) runs the same three nodes and
# kills side by side, and the ratios come last.
#   report: bench/results/elastic.txt
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
repeats=${2:-3}
bin=$build/bin
tmp=$(mktemp -d)
agents=()
trap 'kill -9 "${agents[@]}" 2>/dev/null || true; [[ -n ${KEEP:-} ]] || rm -rf "$tmp"' EXIT
[[ -x $bin/distrun && -x $bin/distrun-train ]] || {
  echo "elastic.sh: no distrun in $bin: build it first (cmake --build $build)" >&2; exit 1; }

# The report also goes to bench/results/elastic.txt (RESULTS=FILE elsewhere),
# dated and with the command, which the docs link.
results=${RESULTS:-$root/bench/results/elastic.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# bench/elastic.sh $build $repeats, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"

now() { date +%s.%N; }

# start_node N PORT RUN: node N's agent in the background, its log RUN.N.log.
start_node() {
  DISTRUN_TOKEN=bench "$bin/distrun" run --nnodes 2:3 --rdzv-endpoint "127.0.0.1:$2" \
    --local-addr "127.0.0.1$(($1 + 2))" --max-restarts 3 \
    --rdzv-conf last_call_timeout=1,join_timeout=30 \
    "$bin/distrun-train" linear --epochs 400 --batch-size 8 --threads-per-rank 1 \
    --progress epochs --snapshot "$3.snap" --save-every-steps 20 >"$3.$1.log" 2>&1 &
  agents+=($!)
}

# wait_for TEXT FILE... : until one of the files holds TEXT (60 s at most).
wait_for() {
  local text=$1 i
  shift
  for ((i = 0; i < 6000; i++)); do
    grep -qs -- "$text" "$@" && return 0
    sleep 0.01
  done
  return 1
}

# one_run VICTIM: seconds from killing node VICTIM's agent to training again.
one_run() {
  local victim=$1 run=$tmp/run$RANDOM port killed resumed
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
  agents=()
  start_node 0 "$port" "$run"
  sleep 0.3  # node 0 binds the endpoint first: it hosts the store
  start_node 1 "$port" "$run"
  start_node 2 "$port" "$run"
  wait_for "epoch 2/" "$run".*.log || { echo "elastic.sh: the job did not train" >&2; exit 1; }
  killed=$(now)
  kill -9 "${agents[$victim]}"
  local survivors=()
  for n in 0 1 2; do [[ $n == "$victim" ]] || survivors+=("$run.$n.log"); done
  wait_for "] resum" "${survivors[@]}" || {
    echo "elastic.sh: the survivors did not resume:" >&2; tail -n 5 "${survivors[@]}" >&2; exit 1; }
  resumed=$(now)
  kill -9 "${agents[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  awk -v a="$killed" -v b="$resumed" 'BEGIN {printf "%.2f\n", b - a}'
}

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# PyPI's torchrun 2.x (scripts/torch-venv, or DISTRUN_TORCH2_PYTHON), the
# same three nodes and the same kill: a gloo all-reduce loop on the CPU
# whose restarted ranks print "resumed" after their first all-reduce in the
# new world. A node's death takes its workers: the agent and every process
# below it are SIGKILLed at once (torchrun's workers run in sessions of
# their own, so a process group is not enough).
# The pythons of PyPI's torch 2.15 (the latest) and 2.4 (the oldest 2.x the
# sites run), one a line, those that scripts/torch-venv has or can make.
torch2_pythons() {
  local py
  py=${DISTRUN_TORCH2_PYTHON:-$("$root/scripts/torch-venv" 2>/dev/null || true)}
  [[ -x $py ]] && echo "$py"
  py=${DISTRUN_TORCH24_PYTHON:-$("$root/scripts/torch-venv" --torch 2.4.1 2>/dev/null || true)}
  [[ -x $py ]] && echo "$py"
  return 0
}
cat >"$tmp/allreduce_loop.py" <<'PY'
import os, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
t, step = torch.ones(1000), 0
while True:
    dist.all_reduce(t)
    step += 1
    if step == 1 and restart > 0:
        print(f"resumed in a world of {dist.get_world_size()}", flush=True)
    if step % 20 == 0:
        print(f"step {step}", flush=True)
    time.sleep(0.01)
PY
torch2_agents=()
# PID and every process below it, SIGKILLed at once.
source "$root/scripts/process-tree.sh"
kill_tree() { kill -9 $(with_descendants "$1") 2>/dev/null || true; }
start_torch2_node() {
  "$(dirname "$4")/torchrun" --nnodes 2:3 --nproc-per-node 1 --rdzv-backend c10d \
    --rdzv-endpoint "127.0.0.1:$2" --rdzv-id bench --local-addr "127.0.0.1$(($1 + 2))" \
    --max-restarts 3 --rdzv-conf last_call_timeout=1,join_timeout=30 \
    "$tmp/allreduce_loop.py" >"$3.$1.log" 2>&1 &
  torch2_agents+=($!)
}
one_torch2_run() {
  local victim=$1 py=$2 run=$tmp/t2run$RANDOM port killed resumed n
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
  torch2_agents=()
  for n in 0 1 2; do start_torch2_node "$n" "$port" "$run" "$py"; [[ $n == 0 ]] && sleep 0.3; done
  wait_for "step 40" "$run".*.log || { echo "elastic.sh: torchrun 2.x did not train:" >&2; tail -n 5 "$run".*.log >&2; exit 1; }
  killed=$(now)
  kill_tree "${torch2_agents[$victim]}"
  local survivors=()
  for n in 0 1 2; do [[ $n == "$victim" ]] || survivors+=("$run.$n.log"); done
  if wait_for "resumed in a world" "${survivors[@]}"; then
    resumed=$(now)
    awk -v a="$killed" -v b="$resumed" 'BEGIN {printf "%.2f\n", b - a}'
  else
    echo "failed"
  fi
  for n in "${torch2_agents[@]}"; do kill_tree "$n"; done
  wait 2>/dev/null || true
}

# torchrun's c10d agent on one node, to see whether it runs at all here.
torchrun_note() {
  printf 'import os\n' >"$tmp/noop.py"
  if timeout 60 /usr/bin/python3 -m torch.distributed.run --nnodes 1 --nproc_per_node 1 \
       --rdzv_backend c10d --rdzv_endpoint 127.0.0.1:0 "$tmp/noop.py" >"$tmp/torchrun.log" 2>&1; then
    echo "runs (measuring it is not implemented)"
  else
    echo "not measured: it fails before starting a worker ($(grep -m1 -o 'AttributeError.*' "$tmp/torchrun.log" || tail -1 "$tmp/torchrun.log"))"
  fi
}

printf '%-34s %s\n' "case (3 nodes, --nnodes 2:3)" "seconds from the kill to training again, each run"
declare -A result
for victim in 2 0; do
  name=$([[ $victim == 0 ]] && echo "lose the store's node (node 0)" || echo "lose a node (node 2)")
  times=()
  for ((r = 0; r < repeats; r++)); do times+=("$(one_run "$victim")"); done
  result[$victim]=$(printf '%s\n' "${times[@]}" | median)
  printf '%-34s %s  (median %s)\n' "$name" "${times[*]}" "${result[$victim]}"
done
echo "Debian's torchrun: $(torchrun_note)"
pythons=$(torch2_pythons)
for py in $pythons; do
  version=$("$py" -c 'import torch; print(torch.__version__)')
  declare -A torch2
  for victim in 2 0; do
    name=$([[ $victim == 0 ]] && echo "torchrun $version, lose node 0" || echo "torchrun $version, lose node 2")
    times=()
    for ((r = 0; r < repeats; r++)); do times+=("$(one_torch2_run "$victim" "$py")"); done
    torch2[$victim]=$(printf '%s\n' "${times[@]}" | median)
    printf '%-34s %s  (median %s)\n' "$name" "${times[*]}" "${torch2[$victim]}"
  done
  awk -v d="${result[2]}" -v t="${torch2[2]}" -v d0="${result[0]}" -v t0="${torch2[0]}" -v v="$version" 'BEGIN {
    if (t + 0 > 0) printf "recovery: distrun is %.1fx faster than torchrun %s after losing a node\n", t / d, v
    if (t0 + 0 > 0) printf "recovery: distrun is %.1fx faster than torchrun %s after losing node 0\n", t0 / d0, v
    else print "recovery: torchrun " v " did not train again after losing node 0 (its store is that agent'"'"'s)" }'
done
[[ -n $pythons ]] || echo "torchrun 2.x: not measured: no PyPI PyTorch environment (scripts/torch-venv)"

echo "distrun: back to training ${result[2]} s after losing a node, ${result[0]} s after losing the store's node (median of $repeats; last_call_timeout=1)"
