#!/usr/bin/env bash
# DDP's scaling efficiency with the host's drift taken out: distrun's
# (bench/ddp_efficiency.cc) and PyTorch's (bench/peers/torch_ddp_efficiency.py)
# side by side, 2 ranks x 1 thread of the mnist CNN, batch 64 a rank, gloo.
# Inside one job each cycle runs, a few seconds each, in rotating order:
# the pair (DDP), the two ranks training on their own but meeting after
# every step (lockstep), the two ranks independently at once, and each
# rank alone while the other waits blocked. Per cycle:
#   efficiency      pair / (rank 0 alone + rank 1 alone)   (issue 5: >= 0.95)
#   machine's own   independent / (the same sum): what two busy cores give
#   pair/independent  what training as one job costs beyond that, in two:
#   lockstep/independent  meeting every step: the pair runs at the pace of
#                   each step's slower rank
#   pair/lockstep   averaging the gradients (the all-reduce and DDP)
# The lone and pair figures are seconds apart, not minutes (bench/train.sh),
# so the host's slow drift falls on all of them alike; what is left is the
# step-to-step noise. Medians and quartiles over every cycle of every run.
#   bench/ddp-efficiency.sh [BUILD_DIR] [RUNS] [CYCLES]   (default build 2 12)
#   report: bench/results/ddp-efficiency.txt
# DATA=dir of MNIST/raw (default data), STEPS=steps a phase (default 20),
# BIND=cores|none for `distrun run --cpu-bind` (default cores, the launcher's).
set -euo pipefail
build=${1:-build}
runs=${2:-2}
cycles=${3:-12}
data=${DATA:-data}
bin=$build/bin
python=/usr/bin/python3
peer=$(dirname "$0")/peers/torch_ddp_efficiency.py
. "$(dirname "$0")/checks.sh"
need_built "$build" distrun ddp_efficiency_bench
need_mnist "$data"
need_torch "$python"
# The report also goes to bench/results/ddp-efficiency.txt (RESULTS=FILE elsewhere),
# dated and with the command, which the docs link.
results=${RESULTS:-$(dirname "$0")/results/ddp-efficiency.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# ${DATA:+DATA=$DATA }${STEPS:+STEPS=$STEPS }${BIND:+BIND=$BIND }bench/ddp-efficiency.sh $build $runs $cycles, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1))"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(--data "$data" --cycles "$cycles" --steps "${STEPS:-20}")
launch=("$bin/distrun" run --cpu-bind "${BIND:-cores}" --nproc-per-node 2)

for run in $(seq 1 "$runs"); do
  order=(distrun pytorch)
  ((run % 2)) || order=(pytorch distrun)
  for runtime in "${order[@]}"; do
    echo "run $run of $runs: $runtime" >&2
    out=$tmp/$runtime.$run.json
    if [[ $runtime == distrun ]]; then
      "${launch[@]}" "$bin/ddp_efficiency_bench" "${flags[@]}" --metrics "$out" >/dev/null
    else
      "${launch[@]}" --python "$python" "$peer" "${flags[@]}" --metrics "$out" >/dev/null
    fi
  done
done

$python - "$tmp" "$runs" "$cycles" "${BIND:-cores}" <<'PY'
import json, statistics, sys
tmp, runs, cycles, bind = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

def cycles_of(runtime):
    for r in range(1, runs + 1):
        with open(f"{tmp}/{runtime}.{r}.json") as f:
            yield from json.load(f)["cycles"]

def quartiles(values):  # "median [first quartile-third quartile]"
    q = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
    return f"{statistics.median(values):.3f} [{q[0]:.3f}-{q[2]:.3f}]"

print(f"# bench/ddp-efficiency.sh: {runs} runs x {cycles} cycles, 2 ranks x 1 thread "
      f"(--cpu-bind {bind}), mnist CNN, batch 64 a rank, gloo on loopback")
print("# median over all cycles [quartiles]")
medians = {}
for rt in ("distrun", "pytorch"):
    cs = list(cycles_of(rt))
    lone = [sum(c["lone"]) for c in cs]
    eff = [c["pair"] / l for c, l in zip(cs, lone)]
    own = [c["independent"] / l for c, l in zip(cs, lone)]
    cost = [c["pair"] / c["independent"] for c in cs]
    meeting = [c["lockstep"] / c["independent"] for c in cs]
    averaging = [c["pair"] / c["lockstep"] for c in cs]
    medians[rt] = (statistics.median(eff), statistics.median(c["pair"] for c in cs))
    print(f"\n## {rt}")
    print(f"  samples/s: pair {statistics.median(c['pair'] for c in cs):.1f}, lockstep "
          f"{statistics.median(c['lockstep'] for c in cs):.1f}, independent "
          f"{statistics.median(c['independent'] for c in cs):.1f}, "
          f"lone sum {statistics.median(lone):.1f}")
    print(f"  efficiency        {quartiles(eff)}")
    print(f"  machine's own     {quartiles(own)}")
    print(f"  pair/independent  {quartiles(cost)}")
    print(f"    lockstep/independent (meeting every step)  {quartiles(meeting)}")
    print(f"    pair/lockstep (averaging the gradients)     {quartiles(averaging)}")
    if "pair_wait_share" in cs[0]:
        for r in range(len(cs[0]["pair_wait_share"])):
            w = [100 * c["pair_wait_share"][r] for c in cs]
            print(f"  rank {r} waits for averaged gradients, % of the pair's time: "
                  f"{statistics.median(w):.1f} [{min(w):.1f}-{max(w):.1f}]")

print("\n## result")
print(f"  scaling efficiency (median cycle): distrun {medians['distrun'][0]:.3f} (target >= 0.95), "
      f"PyTorch {medians['pytorch'][0]:.3f}")
print(f"  pair samples/s, distrun / PyTorch: {medians['distrun'][1] / medians['pytorch'][1]:.2f}x")
PY
