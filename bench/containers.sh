#!/usr/bin/env bash
# Containers, side by side in one run. The container wrapper's case: a
# Python stack of many small files (Debian's python3-torch and everything
# it needs) used straight from a folder versus from the one image file
# `distrun wrap` made of it:
#   - files on the file system: the folder's count against 1;
#   - `import torch` cold (page cache dropped before each run) and warm,
#     both run through bubblewrap with the stack as / (the folder bound,
#     or the image entered by `distrun enter`), so storage is the only
#     difference;
#   - the cost of entering: 8 trivial workers started by `distrun run`,
#     with and without --container (the node's one mount included).
# Medians of RUNS runs (cold: COLD_RUNS); ratios last. The images are built
# once into $DISTRUN_BENCH_CACHE (/var/tmp/distrun-bench). Needs root (to drop
# the page cache) and the container tools (scripts/install-deps).
#   bench/containers.sh [BUILD_DIR] [RUNS] [COLD_RUNS]
#   report: bench/results/containers.txt
set -euo pipefail
build=${1:-build}
runs=${2:-20}
cold_runs=${3:-5}
distrun=$(realpath "$build/bin/distrun")
[[ -x $distrun ]] || { echo "build first: cmake --build $build" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || { echo "containers.sh: run as root (it drops the page cache)" >&2; exit 1; }
# The report also goes to bench/results/containers.txt (RESULTS=FILE elsewhere),
# dated and with the command, which the docs link.
results=${RESULTS:-$(dirname "$0")/results/containers.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# bench/containers.sh $build $runs $cold_runs, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1))"

cache=${DISTRUN_BENCH_CACHE:-/var/tmp/distrun-bench}
mkdir -p "$cache"
# Bare SquashFS images (a SIF holds the same file system behind a 32 KiB
# header and is read at its offset just the same): the default compression
# (zstd:3) and the fastest to unpack (lz4), the second made from the first
# by distrun wrap --base; and the folder of the very same files.
image=$cache/torch-zstd3.sqfs
image_lz4=$cache/torch-lz4.sqfs
tree=$cache/torch-tree
if [[ ! -f $image ]]; then
  echo "building $image (distrun wrap --apt python3-torch; minutes, once)" >&2
  "$distrun" wrap -o "$image" --format squashfs --apt python3-torch >&2
fi
if [[ ! -f $image_lz4 ]]; then
  "$distrun" wrap -q -o "$image_lz4" --format squashfs --compression lz4 --base "$image" >&2
fi
if [[ ! -d $tree ]]; then
  rm -rf "$tree.partial"
  unsquashfs -q -d "$tree.partial" "$image" >/dev/null
  mv "$tree.partial" "$tree"
fi

# shellcheck source=bench/timing.sh
source "$(dirname "$0")/timing.sh"

import_torch=(python3 -c 'import torch')
from_folder() {
  bwrap --ro-bind "$tree" / --proc /proc --dev /dev --tmpfs /tmp "${import_torch[@]}"
}
from_image() { "$distrun" enter --container-runtime distrun "$image" -- "${import_torch[@]}"; }
from_lz4() { "$distrun" enter --container-runtime distrun "$image_lz4" -- "${import_torch[@]}"; }

files_folder=$(find "$tree" | wc -l)
bytes_folder=$(du -sb "$tree" | awk '{print $1}')
bytes_image=$(stat -c %s "$image")
bytes_lz4=$(stat -c %s "$image_lz4")

# The images stay mounted while their imports are timed, as they stay
# mounted for a job's ranks (one holder each, joined by every `enter`):
# else every run would mount anew and the page cache would go with each
# unmount. Mounting is in the start-up measurement below.
holders=()
hold() { "$distrun" enter --container-runtime distrun "$1" -- sleep 100000 & holders+=($!); }
release() {
  [[ ${#holders[@]} -eq 0 ]] && return 0
  kill "${holders[@]}" 2>/dev/null || true
  wait "${holders[@]}" 2>/dev/null || true
  holders=()
}
trap release EXIT
hold "$image"
hold "$image_lz4"
sleep 1
cold_folder=$(time_median "$cold_runs" 1 from_folder)
cold_image=$(time_median "$cold_runs" 1 from_image)
cold_lz4=$(time_median "$cold_runs" 1 from_lz4)
warm_folder=$(time_median "$runs" 0 from_folder)
warm_image=$(time_median "$runs" 0 from_image)
warm_lz4=$(time_median "$runs" 0 from_lz4)
release

workers=8
plain() { "$distrun" run --nproc-per-node $workers --cpu-bind none --no-python /bin/true; }
contained() {
  "$distrun" run --nproc-per-node $workers --cpu-bind none --container "$image" \
    --container-runtime distrun --no-python /bin/true
}
start_plain=$(time_median "$runs" 0 plain)
start_contained=$(time_median "$runs" 0 contained)

echo "Python stack: Debian's python3-torch and its dependencies ($(nproc) cores)"
printf '%-34s %12s %12s %12s\n' "" "folder" "image zstd:3" "image lz4"
printf '%-34s %12s %12s %12s\n' "files on the file system" "$files_folder" 1 1
printf '%-34s %s %s %s\n' "bytes" "$(mb "$bytes_folder")" "$(mb "$bytes_image")" "$(mb "$bytes_lz4")"
printf '%-34s %s %s %s\n' "import torch, cold (median of $cold_runs)" "$(ms "$cold_folder")" \
  "$(ms "$cold_image")" "$(ms "$cold_lz4")"
printf '%-34s %s %s %s\n' "import torch, warm (median of $runs)" "$(ms "$warm_folder")" \
  "$(ms "$warm_image")" "$(ms "$warm_lz4")"
printf '%-34s %s %s\n' "$workers trivial workers (distrun run)" "$(ms "$start_plain")" \
  "$(ms "$start_contained")"
echo
echo "ratios (image / folder; lower is better):"
awk -v f="$files_folder" 'BEGIN{printf "  files:               1 / %d = %.6f\n", f, 1/f}'
awk -v a="$cold_image" -v l="$cold_lz4" -v b="$cold_folder" \
  'BEGIN{printf "  cold import torch:   %.2f (zstd:3), %.2f (lz4)\n", a/b, l/b}'
awk -v a="$warm_image" -v l="$warm_lz4" -v b="$warm_folder" \
  'BEGIN{printf "  warm import torch:   %.2f (zstd:3), %.2f (lz4)\n", a/b, l/b}'
awk -v a="$start_contained" -v b="$start_plain" -v n=$workers \
  'BEGIN{printf "  entering the container: %+.1f ms per worker (%.2fx the start of %d workers)\n", (a-b)/n/1e6, a/b, n}'
