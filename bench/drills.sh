#!/usr/bin/env bash
# Fault drills (docs/reliability.md, "Fault drills"): each fault is injected
# into a real job, distrun-train's linear workload (MNIST for the full
# disk when data/ has it), on 2 local ranks and on two agents as two nodes
# of this machine, and the script prints one table row per drill: the
# fault, the outcome expected, what happened, the seconds from injecting
# the fault to the job's end (or its report line), the processes of the
# job left after it ended, and whether a good snapshot was lost or a
# half-written one left. The last line gives the totals; the script exits 1
# when a drill fails. Needs root for the tmpfs of the full-disk and
# /dev/shm drills (skipped with the reason otherwise).
#   bench/drills.sh [BUILD_DIR]       report: bench/results/drills.txt
# DRILLS="agent_signals disk_full" runs some (the drill_* names), KEEP=1 keeps the logs.
set -uo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/checks.sh"
need_built "$build" distrun distrun-train
# The report also goes to bench/results/drills.txt (RESULTS=FILE elsewhere),
# dated and with the command, which the docs link.
results=${RESULTS:-$(dirname "$0")/results/drills.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# ${DRILLS:+DRILLS=\"$DRILLS\" }bench/drills.sh $build, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1))"
bin=$(cd "$build/bin" && pwd)
drills=$here/drills
data=${DISTRUN_DATA:-$here/../data}
tmp=$(mktemp -d /tmp/distrun-drills.XXXXXX)
mounts=()
helpers=()
cleanup() {
  local pid m
  for pid in "${helpers[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in $(python3 "$drills/procs.py" "$run_mark"); do kill -9 "$pid" 2>/dev/null; done
  for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null; done
  if [[ -n ${KEEP:-} ]]; then echo "the drills' logs: $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
run_mark=drills-$$  # every job's mark starts with it
limit=120           # seconds a job may take to end after its fault
term=5              # --term-timeout of every job: the grace before SIGKILL
train=("$bin/distrun-train" linear --epochs 100000 --batch-size 8 --threads-per-rank 1
  --progress epochs)
short=("$bin/distrun-train" linear --threads-per-rank 1) # 10 epochs, a job that ends by itself

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# ---- the table -------------------------------------------------------------
rows=() passed=0 failed=0 skipped=0 orphans_total=0 lost_total=0
# record FAULT JOB EXPECTED HAPPENED DETECT ORPHANS LOST VERDICT (pass|FAIL|n/a ...)
record() {
  rows+=("| $1 | $2 | $3 | $4 | $5 | $6 | $7 | $8 |")
  case $8 in pass) ((passed++)) ;; FAIL) ((failed++)) ;; *) ((skipped++)) ;; esac
  [[ $6 =~ ^[0-9]+$ ]] && ((orphans_total += $6))
  [[ $7 == yes* ]] && ((lost_total++))
  echo "drill: $1 ($2): $8 - $4" >&2
}
print_table() {
  echo "| fault | job | expected | what happened | detect (s) | orphans | data lost | result |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
  echo "drills passed: $passed of $((passed + failed + skipped))" \
    "($skipped not run), orphans: $orphans_total, data lost: $lost_total"
}

# ---- jobs ------------------------------------------------------------------
# Each drill's job gets DRILL_MARK=<mark> in its environment, which every
# agent, worker and worker's child inherits: procs.py finds them by it.
mark=""
new_mark() { mark=$run_mark-$1; }
pids_of() { python3 "$drills/procs.py" "$mark" "$@"; }
# start LOG CMD...: runs CMD with the mark in the background; $! is its pid.
# Bash starts background commands with SIGINT and SIGQUIT ignored (and
# reports those it kills): python gives them back their defaults first.
start() {
  local log=$1
  shift
  : >"$log" # now, before the background child opens it: no reader sees an older run's
  python3 -c 'import os, signal, sys
for s in (signal.SIGINT, signal.SIGQUIT): signal.signal(s, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' env DRILL_MARK="$mark" "$@" >"$log" 2>&1 &
}
run_flags() { echo --term-timeout "$term"; }
# node_flags NODE PORT [JOIN_TIMEOUT]: the flags of one of two agents on this machine.
node_flags() {
  echo --nnodes 2 --node-rank "$1" --rdzv-endpoint "127.0.0.1:$2" --local-addr 127.0.0.1 \
    --join-timeout "${3:-60}" --nproc-per-node 1 $(run_flags)
}
# wait_end PID...: waits (at most $limit s) until every PID ended; sets
# codes (their exit codes, in order; "hung" for one still running, which is
# then killed) and ended (the time the last one ended). Bash's own line for
# a job killed by a signal goes to /dev/null.
wait_end() { wait_end_of "$@" 2>/dev/null; }
wait_end_of() {
  local t0 pid
  t0=$(now)
  codes=()
  while :; do
    local alive=0
    for pid; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    awk -v s="$(since "$t0")" -v l=$limit 'BEGIN { exit !(s > l) }' && break
    sleep 0.05
  done
  ended=$(now)
  for pid; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -9 -- "-$pid" "$pid" 2>/dev/null
      { wait "$pid"; } 2>/dev/null
      codes+=(hung)
    else
      { wait "$pid"; } 2>/dev/null
      codes+=($?)
    fi
  done
}
# orphans: counts the job's processes still alive once it ended (after up
# to 5 s for the kernel's pdeathsig), then kills them for the next drill.
orphans() {
  local left i
  for ((i = 0; i < 50; i++)); do
    left=$(pids_of | wc -l)
    ((left == 0)) && break
    sleep 0.1
  done
  for i in $(pids_of); do kill -9 "$i" 2>/dev/null; done
  echo "$left"
}
# wait_for TEXT FILE [SECONDS]: until FILE holds TEXT; 1 when it never does.
wait_for() {
  local i
  for ((i = 0; i < ${3:-60} * 10; i++)); do
    grep -qF -- "$1" "$2" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# worker RANK: the pid of that rank's distrun-train, once it runs.
worker() {
  local i pid
  for ((i = 0; i < 600; i++)); do
    pid=$(pids_of "RANK=$1" distrun-train | head -1)
    [[ -n $pid ]] && { echo "$pid"; return 0; }
    sleep 0.1
  done
  return 1
}
# has LOG TEXT: LOG holds TEXT.
has() { grep -qF -- "$2" "$1"; }
# last_error LOG [TEXT]: the line a row shows: the first holding TEXT, else
# the first error, else the failure report's, else the first warning, else
# the last line (without temporary paths, the rank's prefix or the report's).
last_error() {
  { { [[ -n ${2:-} ]] && grep -m1 -F -- "$2" "$1"; } || grep -m1 'error:' "$1" ||
    grep -m1 'distrun: job .* failed' "$1" || grep -m1 'warning:' "$1" || tail -1 "$1"; } |
    sed "s|$tmp/||g; s/^\[[0-9]*:[0-9]*\] //; s/^distrun: job .* failed ([^)]*): //" |
    cut -c1-110 | tr '|' '/'
}
# reports_rank LOG RANK: LOG holds the failure report naming RANK as its cause.
reports_rank() { grep -qE "distrun: job .* failed .*rank $2 \(local rank [0-9]+\)" "$1"; }

. "$drills/faults.sh"
. "$drills/files.sh"

all="worker_exit worker_kill worker_stop agent_signals node_never_joins wrong_token garbage
  idle_connections disk_full kill_and_resume corrupt_snapshot port_taken small_shm"
for drill in ${DRILLS:-$all}; do
  "drill_$drill"
done
echo
print_table
((failed == 0))
