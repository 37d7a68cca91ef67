#!/usr/bin/env bash
# The pip case of bench/containers.sh: PyPI's PyTorch 2.x (the version of
# scripts/torch-venv, the CUDA build with its NVIDIA wheels) in an image made
# by `distrun wrap --apt python3,python3-venv,libstdc++6 --pip torch==V`
# (PyPI's wheels load the system's libstdc++, which Debian's python3 does not
# pull in: without it `import torch` fails with "libstdc++.so.6: cannot open
# shared object file"), side by side
# with the very same environment as a folder (the image's files unpacked on
# the same disk):
#   - files on the file system, bytes, and the build's time (its report);
#   - `import torch` cold (page cache dropped before each run) and warm,
#     through bubblewrap with the tree as / or `distrun enter` of the image,
#     so storage is the only difference;
#   - a 2-rank DDP job inside the image (examples/python/ddp_check.py, which
#     checks torchrun's environment contract on every rank, trains with gloo
#     and compares the ranks' parameters), as a site runs it:
#     `distrun run --container IMAGE`.
# Medians of RUNS runs (cold: COLD_RUNS); ratios last. The image is built
# once into $DISTRUN_BENCH_CACHE (/var/tmp/distrun-bench), reusing the host's
# pip cache. Needs root (the page cache; --apt) and the container tools.
#   bench/containers-pip.sh [BUILD_DIR] [RUNS] [COLD_RUNS]
#   report: bench/results/containers-pip.txt
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
runs=${2:-10}
cold_runs=${3:-3}
distrun=$(realpath "$build/bin/distrun")
[[ -x $distrun ]] || { echo "build first: cmake --build $build" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || { echo "containers-pip.sh: run as root" >&2; exit 1; }
torch_version=$("$root/scripts/torch-venv" --print-version)
results=${RESULTS:-$root/bench/results/containers-pip.txt}

cache=${DISTRUN_BENCH_CACHE:-/var/tmp/distrun-bench}
mkdir -p "$cache"
image=$cache/torch-$torch_version-pip.sqfs  # bare SquashFS, as bench/containers.sh
tree=$cache/torch-$torch_version-pip-tree
report=$cache/torch-$torch_version-pip.build.txt
if [[ ! -f $image ]]; then
  echo "building $image (distrun wrap --pip torch==$torch_version; minutes, once)" >&2
  "$distrun" wrap -o "$image" --format squashfs --apt python3,python3-venv,libstdc++6 \
    --pip "torch==$torch_version" \
    --pip 'numpy<3' 2>&1 | tee "$report" >&2
fi
if [[ ! -d $tree ]]; then
  rm -rf "$tree.partial"
  unsquashfs -q -d "$tree.partial" "$image" >/dev/null
  mv "$tree.partial" "$tree"
fi

# shellcheck source=bench/timing.sh
source "$(dirname "$0")/timing.sh"

import_torch=(/opt/env/bin/python -c 'import torch')
from_folder() {
  bwrap --ro-bind "$tree" / --proc /proc --dev /dev --tmpfs /tmp "${import_torch[@]}"
}
from_image() { "$distrun" enter --container-runtime distrun "$image" -- "${import_torch[@]}"; }

holder=""
release() { [[ -n $holder ]] && { kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null; } || true; }
trap release EXIT
"$distrun" enter --container-runtime distrun "$image" -- sleep 100000 &
holder=$!
sleep 1
cold_folder=$(time_median "$cold_runs" 1 from_folder)
cold_image=$(time_median "$cold_runs" 1 from_image)
warm_folder=$(time_median "$runs" 0 from_folder)
warm_image=$(time_median "$runs" 0 from_image)
release

ddp_out=$(cd "$root/examples/python" &&
  "$distrun" run --nproc-per-node 2 --container "$image" --container-runtime distrun \
    ddp_check.py 2>&1) || { echo "the DDP job in the image failed: $ddp_out" >&2; exit 1; }
ranks=$(grep -c '^\[[0-9]*:[0-9]*\] {' <<<"$ddp_out" || true)
[[ $ranks -eq 2 ]] || { echo "expected a JSON line from each of 2 ranks: $ddp_out" >&2; exit 1; }
in_image=$("$distrun" enter "$image" -- /opt/env/bin/python -c 'import torch; print(torch.__version__)')

mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# bench/containers-pip.sh $build $runs $cold_runs, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
files_folder=$(find "$tree" | wc -l)
bytes_folder=$(du -sb "$tree" | awk '{print $1}')
bytes_image=$(stat -c %s "$image")
built=$(grep -m1 'built in' "$report" 2>/dev/null | sed 's/^distrun wrap: //' || echo "built earlier")
echo "PyPI's torch $in_image in /opt/env, distrun wrap --pip ($(nproc) cores, $(date -u +%F))"
echo "image: $built"
printf '%-34s %12s %12s\n' "" "folder" "image zstd:3"
printf '%-34s %12s %12s\n' "files on the file system" "$files_folder" 1
printf '%-34s %s %s\n' "bytes" "$(mb "$bytes_folder")" "$(mb "$bytes_image")"
printf '%-34s %s %s\n' "import torch, cold (median of $cold_runs)" "$(ms "$cold_folder")" \
  "$(ms "$cold_image")"
printf '%-34s %s %s\n' "import torch, warm (median of $runs)" "$(ms "$warm_folder")" \
  "$(ms "$warm_image")"
echo "2-rank DDP job in the image (ddp_check.py, the contract checked on each rank): passed"
echo
echo "ratios (image / folder; lower is better):"
awk -v f="$files_folder" 'BEGIN{printf "  files:               1 / %d = %.6f\n", f, 1/f}'
awk -v a="$cold_image" -v b="$cold_folder" 'BEGIN{printf "  cold import torch:   %.2f\n", a/b}'
awk -v a="$warm_image" -v b="$warm_folder" 'BEGIN{printf "  warm import torch:   %.2f\n", a/b}'
