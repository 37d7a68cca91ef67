#!/usr/bin/env bash
# Launcher start-up, side by side: time from invocation until every worker
# has started, and total wall time, for two trivial workers on this node.
# distrun run against Open MPI's mpirun and against torchrun where it runs
# (Debian's torchrun crashes on Python 3.11; then the floor of its start-up,
# importing torch.distributed.run, is measured instead and said so), and
# against PyPI's torchrun 2.x (scripts/torch-venv's environment, or the
# python in DISTRUN_TORCH2_PYTHON). Then 16 trivial workers (distrun,
# mpirun, torchrun 2.x), and 2 on a described node with 8 GPUs (an hwloc
# XML in DISTRUN_NODE_TOPOLOGY, as a site or a test describes a GPU node).
# Median of RUNS runs each; ratios last.
#   bench/launch.sh [BUILD_DIR] [RUNS]       report: bench/results/launch.txt
set -euo pipefail
build=${1:-build}
runs=${2:-30}
distrun=$build/bin/distrun
[[ -x $distrun ]] || { echo "build first: cmake --build $build" >&2; exit 1; }
python=/usr/bin/python3
# The report also goes to bench/results/launch.txt (RESULTS=FILE elsewhere),
# dated and with the command, which the docs link.
results=${RESULTS:-$(dirname "$0")/results/launch.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# bench/launch.sh $build $runs, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1))"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The worker: record when it started (ns), nothing else.
cat >"$tmp/worker" <<'W'
#!/bin/sh
date +%s%N >>"$STAMPS"
W
chmod +x "$tmp/worker"
export STAMPS=$tmp/stamps

now() { date +%s%N; }
median() { sort -n | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

# measure NAME CMD...: fills start_<NAME> and wall_<NAME> (ms, medians);
# $workers workers (default 2) must each start once a run.
measure() {
  local name=$1; shift
  : >"$tmp/start.$name"; : >"$tmp/wall.$name"
  for ((i = 0; i < runs; i++)); do
    : >"$STAMPS"
    local t0 t1
    t0=$(now)
    "$@" >/dev/null 2>&1
    t1=$(now)
    [[ $(wc -l <"$STAMPS") -eq ${workers:-2} ]] ||
      { echo "$name: expected ${workers:-2} workers to start" >&2; exit 1; }
    echo $(( ($(sort -n "$STAMPS" | tail -1) - t0) / 1000 )) >>"$tmp/start.$name"
    echo $(( (t1 - t0) / 1000 )) >>"$tmp/wall.$name"
  done
  printf -v "start_$name" '%s' "$(median <"$tmp/start.$name")"
  printf -v "wall_$name" '%s' "$(median <"$tmp/wall.$name")"
}

ms() { awk -v us="$1" 'BEGIN{printf "%8.1f ms", us/1000}'; }

# eight_gpu_node: an hwloc XML of a 2-core node with 8 NVIDIA GPUs, four on
# each socket's PCI bus, as `lstopo node.xml` exports a DGX-like node.
eight_gpu_node() {
  local pkg gpu bus=(1b 29 3d 4e 9a ab bd cc)
  printf '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n'
  printf '<topology version="2.0">\n<object type="Machine" os_index="0" cpuset="0x3" complete_cpuset="0x3" allowed_cpuset="0x3" nodeset="0x3" complete_nodeset="0x3" allowed_nodeset="0x3" gp_index="1">\n'
  for pkg in 0 1; do
    local set=$((1 << pkg)) g=$((100 + pkg * 10))
    printf '<object type="Package" os_index="%d" cpuset="0x%x" complete_cpuset="0x%x" nodeset="0x%x" complete_nodeset="0x%x" gp_index="%d">\n' "$pkg" "$set" "$set" "$set" "$set" "$g"
    printf '<object type="NUMANode" os_index="%d" cpuset="0x%x" complete_cpuset="0x%x" nodeset="0x%x" complete_nodeset="0x%x" gp_index="%d" local_memory="1000000"/>\n' "$pkg" "$set" "$set" "$set" "$set" "$((g + 1))"
    printf '<object type="Core" os_index="%d" cpuset="0x%x" complete_cpuset="0x%x" nodeset="0x%x" complete_nodeset="0x%x" gp_index="%d">\n' "$pkg" "$set" "$set" "$set" "$set" "$((g + 2))"
    printf '<object type="PU" os_index="%d" cpuset="0x%x" complete_cpuset="0x%x" nodeset="0x%x" complete_nodeset="0x%x" gp_index="%d"/>\n</object>\n' "$pkg" "$set" "$set" "$set" "$set" "$((g + 3))"
    for gpu in 0 1 2 3; do
      printf '<object type="PCIDev" gp_index="%d" pci_busid="0000:%s:00.0" pci_type="0302 [10de:2330] [10de:16c1] a1" pci_link_speed="0.000000"/>\n' "$((g + 4 + gpu))" "${bus[pkg * 4 + gpu]}"
    done
    printf '</object>\n'
  done
  printf '</object>\n</topology>\n'
}

measure distrun "$distrun" run --nproc-per-node 2 "$tmp/worker"
# The floor: a shell starting the same two workers and waiting for them,
# what any launcher costs at least on this machine (its fork and exec, the
# workers' own start); distrun's own cost is what it adds to it.
measure floor sh -c '"$1" & "$1" & wait' sh "$tmp/worker"
measure mpirun mpirun --allow-run-as-root --oversubscribe -np 2 "$tmp/worker"

torchrun_note=""
if /usr/bin/torchrun --standalone --nproc_per_node 2 --no_python "$tmp/worker" >"$tmp/torchrun.log" 2>&1 \
   && [[ $(wc -l <"$STAMPS") -ge 2 ]]; then
  measure torchrun /usr/bin/torchrun --standalone --nproc_per_node 2 --no_python "$tmp/worker"
else
  torchrun_note="Debian's torchrun does not run here: $(grep -m1 -E 'Error' "$tmp/torchrun.log" || tail -1 "$tmp/torchrun.log")"
  : >"$tmp/wall.floor"
  for ((i = 0; i < runs; i++)); do
    t0=$(now); "$python" -c 'import torch.distributed.run' >/dev/null 2>&1; t1=$(now)
    echo $(( (t1 - t0) / 1000 )) >>"$tmp/wall.floor"
  done
  start_torchrun=$(median <"$tmp/wall.floor")
  wall_torchrun=$start_torchrun
fi

echo "two trivial workers, median of $runs runs"
printf '%-10s %14s %14s\n' launcher "all started" "wall time"
printf '%-10s %14s %14s\n' distrun "$(ms "$start_distrun")" "$(ms "$wall_distrun")"
printf '%-10s %14s %14s\n' mpirun "$(ms "$start_mpirun")" "$(ms "$wall_mpirun")"
printf '%-10s %14s %14s   (sh -c "W & W & wait": the floor)\n' sh "$(ms "$start_floor")" "$(ms "$wall_floor")"
if [[ -n $torchrun_note ]]; then
  printf '%-10s %14s %14s   (floor: python3 -c "import torch.distributed.run")\n' torchrun \
    "$(ms "$start_torchrun")" "$(ms "$wall_torchrun")"
  echo "$torchrun_note"
else
  printf '%-10s %14s %14s\n' torchrun "$(ms "$start_torchrun")" "$(ms "$wall_torchrun")"
fi
echo
# PyPI's torchrun 2.x, and the larger cases.
torch2=${DISTRUN_TORCH2_PYTHON:-$("$(dirname "$0")/../scripts/torch-venv" || true)}
torchrun2=$(dirname "${torch2:-/nonexistent/python}")/torchrun
# torchrun 2.4, the oldest 2.x the sites' users run (scripts/torch-venv --torch 2.4.1).
torch24=${DISTRUN_TORCH24_PYTHON:-$("$(dirname "$0")/../scripts/torch-venv" --torch 2.4.1 || true)}
torchrun24=$(dirname "${torch24:-/nonexistent/python}")/torchrun
gpu_node=$tmp/eight_gpus.xml
eight_gpu_node >"$gpu_node"
DISTRUN_NODE_TOPOLOGY=$gpu_node measure distrun_gpus "$distrun" run --nproc-per-node 2 "$tmp/worker"
workers=16 measure distrun16 "$distrun" run --nproc-per-node 16 "$tmp/worker"
workers=16 measure mpirun16 mpirun --allow-run-as-root --oversubscribe -np 16 "$tmp/worker"
if [[ -x $torchrun2 ]]; then
  measure torchrun2 "$torchrun2" --standalone --nproc-per-node 2 --no-python "$tmp/worker"
  workers=16 measure torchrun2_16 "$torchrun2" --standalone --nproc-per-node 16 --no-python "$tmp/worker"
  torch2_version=$("$torch2" -c 'import torch; print(torch.__version__)')
else
  echo "no PyPI torchrun 2.x (scripts/torch-venv failed): its rows are left out"
fi
if [[ -x $torchrun24 ]]; then
  measure torchrun24 "$torchrun24" --standalone --nproc-per-node 2 --no-python "$tmp/worker"
  torch24_version=$("$torch24" -c 'import torch; print(torch.__version__)')
else
  echo "no PyPI torchrun 2.4 (scripts/torch-venv --torch 2.4.1 failed): its row is left out"
fi
echo
echo "larger cases, median of $runs runs"
printf '%-28s %14s %14s\n' case "all started" "wall time"
row() { printf '%-28s %14s %14s\n' "$1" "$(ms "$2")" "$(ms "$3")"; }
row "distrun, 8-GPU node, 2" "$start_distrun_gpus" "$wall_distrun_gpus"
row "distrun, 16 workers" "$start_distrun16" "$wall_distrun16"
row "mpirun, 16 workers" "$start_mpirun16" "$wall_mpirun16"
if [[ -x $torchrun2 ]]; then
  row "torchrun $torch2_version, 2 workers" "$start_torchrun2" "$wall_torchrun2"
  row "torchrun $torch2_version, 16 workers" "$start_torchrun2_16" "$wall_torchrun2_16"
fi
if [[ -x $torchrun24 ]]; then
  row "torchrun $torch24_version, 2 workers" "$start_torchrun24" "$wall_torchrun24"
fi
echo
if [[ -x $torchrun2 ]]; then
  awk -v d="$start_distrun" -v t="$start_torchrun2" -v d16="$start_distrun16" -v t16="$start_torchrun2_16" \
      -v v="$torch2_version" 'BEGIN{
    printf "start-up: distrun is %.1fx faster than torchrun %s, 2 workers\n", t/d, v
    printf "start-up: distrun is %.1fx faster than torchrun %s, 16 workers\n", t16/d16, v }'
fi
if [[ -x $torchrun24 ]]; then
  awk -v d="$start_distrun" -v t="$start_torchrun24" -v v="$torch24_version" 'BEGIN{
    printf "start-up: distrun is %.1fx faster than torchrun %s, 2 workers\n", t/d, v }'
fi
awk -v d16="$start_distrun16" -v m16="$start_mpirun16" -v g="$start_distrun_gpus" -v m="$start_mpirun" 'BEGIN{
  printf "start-up: distrun is %.1fx faster than mpirun, 16 workers\n", m16/d16
  printf "start-up: distrun on the described 8-GPU node is %.1fx faster than mpirun (2 workers; target >= 5x)\n", m/g }'
awk -v d="$start_distrun" -v f="$start_floor" 'BEGIN{
  printf "start-up: distrun adds %.1f ms to the floor (a shell starting the same workers: %.1f ms)\n", (d-f)/1000, f/1000 }'
awk -v d="$start_distrun" -v m="$start_mpirun" -v t="$start_torchrun" \
    -v dw="$wall_distrun" -v mw="$wall_mpirun" -v floor="${torchrun_note:+ (against its floor)}" 'BEGIN{
  printf "start-up: distrun is %.1fx faster than mpirun (target >= 5x)\n", m/d
  printf "start-up: distrun is %.1fx faster than torchrun%s (target >= 20x)\n", t/d, floor
  printf "wall time: distrun is %.1fx faster than mpirun\n", mw/dw }'
