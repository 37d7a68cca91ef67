#!/usr/bin/env bash
# N agents (threads, one connection each) join one rendezvous store hosted by
# a separate process (docs/launcher.md, "Speed"):
#   fixed:   joinRound (every node has its --node-rank), N = 16 ... 10000;
#   elastic: joinElasticRound (--nnodes N-1:N, closed by the N-th arrival),
#            then a re-formation: one agent leaves, the other N-1 (still
#            connected) join round 1, closed by lastCall (LAST_CALL_MS,
#            default 1000), N = 1024, 4096, 10000.
# Seconds until every agent knows its ranks, per agent, and the store's own
# CPU time per agent (flat = the store's cost does not grow with N). Target:
# 10000 agents in under 2 s on a 2-core machine, re-forming included.
#   bench/rendezvous.sh [BUILD_DIR] [LAST_CALL_MS]     report: bench/results/rendezvous.txt
set -euo pipefail
build=${1:-build}
lastCallMs=${2:-1000}
bin=$build/bin/rendezvous_bench
[[ -x $bin ]] || { echo "build first: cmake --build $build --target rendezvous_bench" >&2; exit 1; }
# The report also goes to bench/results/rendezvous.txt (RESULTS=FILE elsewhere),
# dated and with the command, which the docs link.
results=${RESULTS:-$(dirname "$0")/results/rendezvous.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# bench/rendezvous.sh $build $lastCallMs, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1))"

field() { sed -E "s/.*\"$1\": ([0-9.]+).*/\\1/" <<<"$2"; }

# The best of three runs (the machine is shared), by the round's seconds.
best() {
  local bestLine="" bestS=""
  for try in 1 2 3; do
    local line s
    line=$("$bin" "$@")
    s=$(field seconds "$line")
    if [[ -z $bestS ]] || awk "BEGIN{exit !($s < $bestS)}"; then bestS=$s; bestLine=$line; fi
  done
  echo "$bestLine"
}

echo "fixed rendezvous (joinRound):"
printf '%8s %10s %10s %16s %16s\n' agents seconds "us/agent" "store us/agent" "store RSS (MiB)"
declare -A fixed
for n in 16 64 256 1024 4096 10000; do
  line=$(best "$n" fixed)
  fixed[$n]=$(field seconds "$line")
  awk -v n="$n" -v s="${fixed[$n]}" -v c="$(field store_cpu_seconds "$line")" \
      -v r="$(field store_peak_rss_kb "$line")" \
      'BEGIN{printf "%8d %10.3f %10.1f %16.1f %16.1f\n", n, s, s*1e6/n, c*1e6/n, r/1024}'
done

echo
echo "elastic rendezvous (joinElasticRound, --nnodes N-1:N), then re-forming with N-1" \
     "(lastCall $((lastCallMs)) ms):"
printf '%8s %10s %10s %16s | %10s %14s %10s %16s\n' agents seconds "us/agent" "store us/agent" \
       "re-form s" "- lastCall s" "us/agent" "store us/agent"
declare -A elastic reform
for n in 1024 4096 10000; do
  line=$(best "$n" elastic "$lastCallMs")
  elastic[$n]=$(field seconds "$line")
  reform[$n]=$(field reform_seconds "$line")
  awk -v n="$n" -v s="${elastic[$n]}" -v c="$(field store_cpu_seconds "$line")" \
      -v rs="${reform[$n]}" -v rc="$(field reform_store_cpu_seconds "$line")" \
      -v lc="$(field last_call_seconds "$line")" 'BEGIN{
    printf "%8d %10.3f %10.1f %16.1f | %10.3f %14.3f %10.1f %16.1f\n",
           n, s, s*1e6/n, c*1e6/n, rs, rs-lc, (rs-lc)*1e6/(n-1), rc*1e6/(n-1) }'
done
echo
awk -v a="${fixed[1024]}" -v b="${fixed[10000]}" -v e="${elastic[10000]}" -v r="${reform[10000]}" \
    'BEGIN{
  printf "fixed growth 1024 -> 10000 agents: %.2fx time for 9.77x agents (linear: 9.77x)\n", b/a
  printf "fixed, 10000 agents: %.3f s (target < 2 s): %s\n", b, (b < 2 ? "met" : "NOT met")
  printf "elastic, 10000 agents: %.3f s, re-forming %.3f s (target < 2 s each): %s\n", e, r,
         (e < 2 && r < 2 ? "met" : "NOT met") }'
