#!/usr/bin/env bash
# The collectives of two builds of distrun, interleaved round by round so
# that a noisy machine slows both alike: distrun-bench's time per call of
# every collective at 4 KB, 64 KB, 1 MB and 16 MB, the best of ROUNDS, on 2
# ranks of one node (the shared-memory engine) and on two nodes of 1 rank
# each on this machine (two agents: the TCP path between them) and of 2 ranks
# each (the hierarchical path). For a change to a collective's code: BEFORE
# is a build of the commit before it (git worktree add /tmp/before HEAD~1 &&
# cmake ... && cmake --build ... --target distrun distrun-bench).
#   [SHAPES="node nodes_1 nodes_2"] bench/collectives-ab.sh BEFORE_BUILD AFTER_BUILD [ROUNDS]
#   (ROUNDS: 5; SHAPES: the shapes below to run, all by default)
#   report: bench/results/collectives-ab.txt
# The ratio is before's time / after's: above 1 the new build is faster.
set -euo pipefail
before=${1:?usage: bench/collectives-ab.sh BEFORE_BUILD AFTER_BUILD [ROUNDS]}
after=${2:?usage: bench/collectives-ab.sh BEFORE_BUILD AFTER_BUILD [ROUNDS]}
rounds=${3:-5}
for b in "$before" "$after"; do
  for p in distrun distrun-bench; do
    [[ -x $b/bin/$p ]] || { echo "collectives-ab.sh: no $b/bin/$p: build it first" >&2; exit 1; }
  done
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || {
  echo "collectives-ab.sh: ROUNDS '$rounds': expected a whole number, at least 1" >&2
  exit 64
}
results=${RESULTS:-$(dirname "$0")/results/collectives-ab.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# bench/collectives-ab.sh $before $after $rounds, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores;" \
  "before: $("$before/bin/distrun" --version | head -1), after: $("$after/bin/distrun" --version | head -1)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
collectives=(all_reduce broadcast all_gather reduce_scatter alltoall)
band=(-b 4K -e 16M -f 16 -w 5 -n 20 --format csv)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# one BUILD SHAPE COLLECTIVE: "size,time_us" lines (all_reduce and broadcast
# in place, as DDP calls them; the others out of place).
one() {
  local b=$1 shape=$2 coll=$3 column=9 out=$tmp/raw
  [[ $coll == all_reduce || $coll == broadcast ]] && column=13
  case $shape in
    node) "$b/bin/distrun-bench" --nproc-per-node 2 "${band[@]}" "$coll" >"$out" ;;
    *)
      local per=${shape#nodes_} port pids=() n
      port=$(free_port)
      # Node ranks given: node 0 hosts the store (by arrival, a port taken
      # meanwhile by another process's outgoing socket left both waiting).
      for n in 0 1; do
        DISTRUN_TOKEN=ab "$b/bin/distrun" run --nnodes 2 --node-rank "$n" --nproc-per-node "$per" --log-prefix '' \
          --cpu-bind none --rdzv-endpoint "127.0.0.1:$port" \
          "$b/bin/distrun-bench" "${band[@]}" "$coll" >"$tmp/node$n.out" &
        pids+=($!)
      done
      wait "${pids[@]}"
      cat "$tmp/node0.out" "$tmp/node1.out" >"$out"
      ;;
  esac
  awk -F, -v c="$column" '$1 ~ /^[a-z_]+$/ && $2 == "gloo" {print $4 "," $c}' "$out"
}
read -r -a shapes <<<"${SHAPES:-node nodes_1 nodes_2}"
for shape in "${shapes[@]}"; do
  [[ $shape =~ ^(node|nodes_1|nodes_2)$ ]] || {
    echo "collectives-ab.sh: SHAPES: '$shape' is not one of: node, nodes_1, nodes_2" >&2
    exit 64
  }
done
for ((r = 0; r < rounds; r++)); do
  order=("$before" "$after")
  ((r % 2)) && order=("$after" "$before")
  for shape in "${shapes[@]}"; do
    for coll in "${collectives[@]}"; do
      for b in "${order[@]}"; do
        tag=after
        [[ $b == "$before" ]] && tag=before
        one "$b" "$shape" "$coll" >>"$tmp/$tag.$shape.$coll"
      done
    done
  done
done
# best SHAPE COLLECTIVE TAG: "size time" lines, the least time per size.
best() {
  sort -t, -k1,1n -k2,2g "$tmp/$3.$1.$2" | awk -F, '!seen[$1]++ {print $1, $2}'
}
echo "time per call, best of $rounds rounds (us); ratio = before / after"
printf '%-8s %-15s %10s %12s %12s %7s\n' shape collective bytes before after ratio
ratios=$tmp/ratios
for shape in "${shapes[@]}"; do
  for coll in "${collectives[@]}"; do
    join <(best "$shape" "$coll" before) <(best "$shape" "$coll" after) |
      while read -r size tb ta; do
        ratio=$(awk -v b="$tb" -v a="$ta" 'BEGIN {printf "%.2f", b / a}')
        printf '%-8s %-15s %10s %12s %12s %7s\n' "$shape" "$coll" "$size" "$tb" "$ta" "$ratio"
        echo "$shape $ratio" >>"$ratios"
      done
  done
done
echo
echo "shapes: node = 2 ranks of one node (shared memory), nodes_1 = 2 nodes of 1 rank (TCP),"
echo "        nodes_2 = 2 nodes of 2 ranks on this machine (hierarchical)"
for shape in "${shapes[@]}"; do
  awk -v s="$shape" '$1 == s {l += log($2); n++}
    END {printf "collectives: the new build is %.2fx the old on %s (geometric mean of %d ratios)\n", exp(l / n), s, n}' "$ratios"
done
