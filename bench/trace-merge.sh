#!/usr/bin/env bash
# The speed of `distrun trace merge` on a synthetic trace folder of about
# SIZE_MB megabytes (default 100): RANKS rank files (default 4) of training
# steps as the recorder writes them (a data load, forward, backward, 8
# bucket all-reduces with their comm/seq, the optimizer; a counter), one
# agent file. Prints the input's size, the seconds (the best of 3 runs),
# MB/s and events/s, and the merge's peak memory, which stays flat as the
# input grows (it streams line by line: docs/observability.md, "Merging").
#   bench/trace-merge.sh [BUILD_DIR] [SIZE_MB] [RANKS]    report: bench/results/trace-merge.txt
set -euo pipefail
build=${1:-build}
sizeMb=${2:-100}
ranks=${3:-4}
bin=$build/bin/distrun
[[ -x $bin ]] || { echo "build first: cmake --build $build --target distrun" >&2; exit 1; }
# The report also goes to bench/results/trace-merge.txt (RESULTS=FILE elsewhere),
# dated and with the command, which the docs link.
results=${RESULTS:-$(dirname "$0")/results/trace-merge.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# bench/trace-merge.sh $build $sizeMb $ranks, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1))"
dir=$(mktemp -d "${TMPDIR:-/tmp}/trace-merge-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT

/usr/bin/python3 - "$dir" "$sizeMb" "$ranks" <<'PY'
import json, sys
folder, size_mb, ranks = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
per_rank = size_mb * 1e6 / ranks
dumps = lambda o: json.dumps(o, separators=(",", ":")) + "\n"
def header(rank, mono, process="worker"):
    return {"trace": "distrun", "version": 1, "rank": rank, "world_size": ranks,
            "local_rank": max(rank, 0), "node_rank": 0, "host": "node1", "pid": 4000 + rank,
            "process": process, "restart": 0, "clock": "monotonic_us", "monotonic_us": mono,
            "realtime_us": 1795529098020914.8 + mono}
def step_lines(step, t):
    yield {"name": "next batch", "cat": "data", "ph": "X", "ts": t, "dur": 120.5, "tid": "data"}
    yield {"name": "forward", "cat": "train", "ph": "X", "ts": t + 130, "dur": 900.25,
           "tid": "compute", "args": {"step": step}}
    yield {"name": "backward", "cat": "train", "ph": "X", "ts": t + 1040, "dur": 1800.75,
           "tid": "compute", "args": {"step": step}}
    for b in range(8):
        yield {"name": "allreduce", "cat": "comm", "ph": "X", "ts": t + 1100 + 200 * b,
               "dur": 150.5, "tid": "comm",
               "args": {"comm": 0, "seq": step * 8 + b, "bytes": 4718592, "type": "float",
                        "op": "sum", "algorithm": "ring", "bucket": b}}
    yield {"name": "optimizer", "cat": "train", "ph": "X", "ts": t + 2900, "dur": 210.0,
           "tid": "compute"}
    yield {"name": "samples/s", "ph": "C", "ts": t + 3120, "tid": "compute",
           "args": {"samples/s": 2048.0 + step % 17}}
for rank in range(ranks):
    mono = 1e6 + rank * 37.5
    with open(f"{folder}/rank{rank}.jsonl", "w") as f:
        written = f.write(dumps(header(rank, mono)))
        written += f.write(dumps({"clock_offset": {"to_rank": 0, "offset_us": -37.5 * rank,
                                                    "rtt_us": 40.0}}))
        step = 0
        while written < per_rank:
            for line in step_lines(step, mono + 1000 + step * 3200.0):
                written += f.write(dumps(line))
            step += 1
with open(f"{folder}/agent0.jsonl", "w") as f:
    f.write(dumps(header(-1, 5e5, "agent")))
    for rank in range(ranks):
        f.write(dumps({"name": "worker started", "cat": "launcher", "ph": "i", "ts": 9e5,
                       "tid": "launcher", "args": {"rank": rank}}))
PY

bytes=$(cat "$dir"/*.jsonl | wc -c)
best=""
for try in 1 2 3; do
  /usr/bin/time -f "%e %M" -o "$dir/time" "$bin" trace merge "$dir" -o "$dir/trace.json" \
    2>"$dir/summary"
  read -r seconds rssKb <"$dir/time"
  if [[ -z $best ]] || awk "BEGIN{exit !($seconds < $best)}"; then best=$seconds; bestRss=$rssKb; fi
done
events=$(sed -E 's/.* ([0-9]+) events;.*/\1/' "$dir/summary")
echo "$(sed 's/^distrun: trace merge: //' "$dir/summary")"
awk -v b="$bytes" -v s="$best" -v e="$events" -v r="$bestRss" -v o="$(wc -c <"$dir/trace.json")" \
  'BEGIN{printf "input %.1f MB (%d events) -> output %.1f MB in %.2f s (best of 3): %.1f MB/s, %.0f events/s, peak RSS %.1f MiB\n",
         b/1e6, e, o/1e6, s, b/1e6/s, e/s, r/1024}'
