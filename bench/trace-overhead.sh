#!/usr/bin/env bash
# What recording a trace costs (docs/observability.md, "Recording a
# trace"): the mnist CNN on 2 ranks, `distrun train --nproc-per-node 2
# mnist`, with tracing off and on (--trace DIR) in turn, ROUNDS rounds in
# one run, the order swapped every round, so that the machine's drift falls
# on both alike. Each run's figure is the mean samples/s of its epochs
# after the first (which warms up), from its --metrics file; each round
# gives the ratio on/off of its two runs. The report: both sides' median
# samples/s, the trace's size, and last the median of the rounds' ratios.
#   bench/trace-overhead.sh [BUILD_DIR] [ROUNDS]      (default: build 6)
#   report: bench/results/trace-overhead.txt
# SAMPLES=N training samples an epoch (default 6000), EPOCHS=N (default 3),
# DATA=DIR the digits (default ./data, scripts/prepare-mnist).
set -euo pipefail
build=build
[[ $# -gt 0 && ! $1 =~ ^[0-9]+$ ]] && { build=$1; shift; }
rounds=${1:-6}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || {
  echo "usage: bench/trace-overhead.sh [BUILD_DIR] [ROUNDS]" >&2; exit 64; }
data=${DATA:-data}
. "$(dirname "$0")/checks.sh"
need_built "$build" distrun distrun-train
need_mnist "$data"
# The report also goes to bench/results/trace-overhead.txt (RESULTS=FILE elsewhere),
# dated and with the command, which the docs link.
results=${RESULTS:-$(dirname "$0")/results/trace-overhead.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# ${DATA:+DATA=$DATA }${SAMPLES:+SAMPLES=$SAMPLES }${EPOCHS:+EPOCHS=$EPOCHS }bench/trace-overhead.sh $build $rounds, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1))"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# one SIDE ROUND: a run with tracing off or on, metrics in $tmp/SIDE.ROUND.json.
one() {
  local trace=()
  [[ $1 == on ]] && trace=(--trace "$tmp/trace.$2")
  "$build/bin/distrun" train --nproc-per-node 2 "${trace[@]}" mnist --data "$data" \
    --epochs "${EPOCHS:-3}" --limit-train "${SAMPLES:-6000}" --limit-test 200 \
    --threads-per-rank 1 --progress none --metrics "$tmp/$1.$2.json" >/dev/null
}

for round in $(seq "$rounds"); do
  echo "round $round of $rounds" >&2
  if ((round % 2)); then
    one off "$round"; one on "$round"
  else
    one on "$round"; one off "$round"
  fi
  du -sb "$tmp/trace.$round" | cut -f1 >"$tmp/bytes.$round"
  rm -rf "$tmp/trace.$round"
done
/usr/bin/python3 - "$tmp" "$rounds" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], range(1, int(sys.argv[2]) + 1)

def samples_per_second(side, r):  # mean of the epochs after the first
    epochs = json.load(open(f"{tmp}/{side}.{r}.json"))["epochs"]
    return statistics.mean(e["samples_per_second"] for e in epochs[1:])

off = [samples_per_second("off", r) for r in rounds]
on = [samples_per_second("on", r) for r in rounds]
ratios = [b / a for a, b in zip(off, on)]
size = statistics.median(int(open(f"{tmp}/bytes.{r}").read()) for r in rounds)
print(f"# mnist CNN, 2 ranks x 1 thread, samples/s (epochs after the first), {len(off)} rounds")
print(f"tracing off  median {statistics.median(off):8.1f}  [{min(off):.1f}-{max(off):.1f}]")
print(f"tracing on   median {statistics.median(on):8.1f}  [{min(on):.1f}-{max(on):.1f}]"
      f"  trace {size / 1e6:.2f} MB a run (all files)")
print("on/off per round: " + " ".join(f"{x:.3f}" for x in ratios))
ratio = statistics.median(ratios)
change = f"{(1 - ratio) * 100:.1f}% slower" if ratio < 1 else f"{(ratio - 1) * 100:.1f}% faster"
print(f"on/off: median {ratio:.3f} ({change} with tracing; the target: under 2% slower)")
PY
