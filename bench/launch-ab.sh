#!/usr/bin/env bash
# Start-up of two builds of distrun, interleaved run by run so that a noisy
# machine slows both alike: the time until every trivial worker has started
# (bench/launch.sh's measure), for 2 and 16 workers, median of RUNS each.
# For a change to the start-up path: BEFORE is a build of the commit before
# it (git worktree add /tmp/before HEAD~1 && cmake ... && cmake --build ...).
#   bench/launch-ab.sh BEFORE_BUILD AFTER_BUILD [RUNS]   (RUNS: 30)
#   report: bench/results/launch-ab.txt
set -euo pipefail
before=${1:?usage: bench/launch-ab.sh BEFORE_BUILD AFTER_BUILD [RUNS]}
after=${2:?usage: bench/launch-ab.sh BEFORE_BUILD AFTER_BUILD [RUNS]}
runs=${3:-30}
for b in "$before" "$after"; do
  [[ -x $b/bin/distrun ]] || { echo "launch-ab.sh: no $b/bin/distrun: build it first" >&2; exit 1; }
done
results=${RESULTS:-$(dirname "$0")/results/launch-ab.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# bench/launch-ab.sh $before $after $runs, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores;" \
  "before: $("$before/bin/distrun" --version | head -1), after: $("$after/bin/distrun" --version | head -1)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#!/bin/sh\ndate +%%s%%N >>"$STAMPS"\n' >"$tmp/worker"
chmod +x "$tmp/worker"
export STAMPS=$tmp/stamps
# one BUILD N: microseconds until the last of N workers started.
one() {
  : >"$STAMPS"
  local t0
  t0=$(date +%s%N)
  "$1/bin/distrun" run --nproc-per-node "$2" --no-python "$tmp/worker" >/dev/null 2>&1
  [[ $(wc -l <"$STAMPS") -eq $2 ]] || { echo "launch-ab.sh: $1: expected $2 workers" >&2; exit 1; }
  echo $(( ($(sort -n "$STAMPS" | tail -1) - t0) / 1000 ))
}
median() { sort -n | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
for n in 2 16; do
  : >"$tmp/a"; : >"$tmp/b"
  for ((i = 0; i < runs; i++)); do
    one "$before" "$n" >>"$tmp/a"
    one "$after" "$n" >>"$tmp/b"
  done
  a=$(median <"$tmp/a"); b=$(median <"$tmp/b")
  awk -v n="$n" -v a="$a" -v b="$b" 'BEGIN {
    printf "%2d workers: before %6.1f ms, after %6.1f ms: after/before %.2f\n", n, a / 1000, b / 1000, b / a }'
done
