#!/usr/bin/env bash
# Fuzzes every target of fuzz/ long: EXECUTIONS (10^7) in all, split evenly
# over the targets, each stopped after DISTRUN_FUZZ_MAX_SECONDS (none) if
# it has not done its share by then, two targets at a time (one per core), each over a copy
# of its corpus kept in BUILD_DIR/fuzz-long/TARGET/corpus (the repository is
# never written), with -timeout=10 and -rss_limit_mb=2048. Prints a table:
# target, executions, exec/s, corpus size, crashes, leaks, time-outs; the
# total last. A target stops at its first finding: the table counts it and
# names the input libFuzzer saved (make it a regression: copy it to
# fuzz/regressions/TARGET/, docs/reliability.md "Fuzzing"). Exit 1 when
# anything was found.
#   bench/fuzz.sh [BUILD_DIR] [EXECUTIONS]     BUILD_DIR: build-fuzz
#   report: bench/results/fuzz.txt
# Environment: DISTRUN_FUZZ_TARGETS: the targets to run (all of them);
# DISTRUN_FUZZ_PARALLEL (2) targets at once;
# DISTRUN_FUZZ_MAX_SECONDS: a time limit per target (the table then says
# how many executions each did).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-fuzz}
executions=${2:-10000000}
parallel=${DISTRUN_FUZZ_PARALLEL:-2}
limit=()
[[ -n ${DISTRUN_FUZZ_MAX_SECONDS:-} ]] && limit=(-max_total_time="$DISTRUN_FUZZ_MAX_SECONDS")
build=$(mkdir -p "$build" && cd "$build" && pwd)

"$root/scripts/test-fuzz" "$build" --build-only >/dev/null
# The slow targets first, so that the fast ones fill in at the end.
kTargets=(job_layout store_frames store_bytes container_image site_profile hostlist
          snapshot idx tasks_per_node wire_decode)
if [[ -n ${DISTRUN_FUZZ_TARGETS:-} ]]; then
  read -ra kTargets <<<"$DISTRUN_FUZZ_TARGETS"
  for target in "${kTargets[@]}"; do
    [[ -f $root/fuzz/$target.cc ]] || { echo "fuzz.sh: no target $target in fuzz/" >&2; exit 2; }
  done
fi
readonly kTargets
runs=$((executions / ${#kTargets[@]}))
out=$build/fuzz-long

# fuzz_one TARGET: fuzzes it for $runs executions; writes TARGET/result.
fuzz_one() {
  local target=$1 dir=$out/$1 dict=()
  rm -rf "$dir" && mkdir -p "$dir/corpus" "$dir/artifacts"
  cp -r "$root/fuzz/corpus/$target/." "$dir/corpus/"
  [[ -f $root/fuzz/$target.dict ]] && dict=(-dict="$root/fuzz/$target.dict")
  local start
  start=$(date +%s.%N)
  (cd "$dir" && "$build/bin/fuzz_$target" -runs="$runs" "${limit[@]}" -timeout=10 \
    -rss_limit_mb=2048 "${dict[@]}" -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
    "$dir/corpus" >"$dir/log" 2>&1) || true
  summarize "$target" "$dir" "$(echo "$start $(date +%s.%N)" | awk '{print $2 - $1}')" \
    >"$dir/result"
}

# summarize TARGET DIR SECONDS: one tab-separated line for the table.
summarize() {
  local log=$2/log done execs rate corpus crashes=0 leaks=0 timeouts=0
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(awk -v e="${execs:-0}" -v s="$3" 'BEGIN {printf "%d", (s > 0 ? e / s : 0)}')
  if grep -q 'ERROR: LeakSanitizer' "$log"; then leaks=1
  elif grep -q 'ERROR: libFuzzer: timeout' "$log"; then timeouts=1
  elif grep -qE 'ERROR: (AddressSanitizer|libFuzzer)|runtime error:|fuzz finding:' "$log"; then
    crashes=1
  fi
  corpus=$(find "$2/corpus" -type f | wc -l)
  done=$(ls "$2/artifacts" 2>/dev/null | grep -v "^slow-unit-" | head -1 || true)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "${execs:-0}" "${rate:-0}" "$corpus" \
    "$crashes" "$leaks" "$timeouts" "$3" "${done:+$2/artifacts/$done}"
}

mkdir -p "$out"
echo "fuzz.sh: $executions executions over ${#kTargets[@]} targets ($runs each)," \
  "$parallel at a time; logs in $out/TARGET/log" >&2
for target in "${kTargets[@]}"; do
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
  fuzz_one "$target" &
done
wait

# The table also goes to bench/results/fuzz.txt (RESULTS=FILE elsewhere),
# dated and with the command, which the docs link. Only now: a bare `wait`
# above would also wait for the tee.
results=${RESULTS:-$root/bench/results/fuzz.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# bench/fuzz.sh $build $executions, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores" \
  "(${DISTRUN_FUZZ_TARGETS:+targets: $DISTRUN_FUZZ_TARGETS, }$parallel at a time)"
printf '%-16s %12s %8s %7s %8s %6s %10s %8s\n' target executions exec/s corpus crashes \
  leaks time-outs seconds
found=0
while IFS=$'\t' read -r target execs rate corpus crashes leaks timeouts secs artifact; do
  printf '%-16s %12s %8s %7s %8s %6s %10s %8.0f\n' "$target" "$execs" "$rate" "$corpus" \
    "$crashes" "$leaks" "$timeouts" "$secs"
  [[ -n $artifact ]] && echo "  finding: $artifact" && found=1
done < <(for t in "${kTargets[@]}"; do cat "$out/$t/result"; done)
awk -F'\t' '{e += $2; c += $4; k += $5; l += $6; t += $7; s += $8}
  END {printf "%-16s %12d %8s %7d %8d %6d %10d %8d\n", "total", e, "", c, k, l, t, s}' \
  < <(for t in "${kTargets[@]}"; do cat "$out/$t/result"; done)
exit $found
