#!/usr/bin/env bash
# Every GPU check and measurement of the nccl backend and the staged path, in
# one run on a machine with a GPU (the device tool's H200: CUDA, PyTorch with
# its NCCL, no network, none of distrun's packages). It runs what
# scripts/gpu-kit packed here (BUILD_DIR/gpu-kit, carried to the machine)
# through the kit's own glibc loader, so that it needs nothing of the
# machine but its driver, CUDA runtime and NCCL:
#   1. the GPU tests of comm_nccl_test: the contract suite on NCCL (world
#      size 1) and on the staged path (2 and 4 ranks on one GPU), and the
#      loaders against the machine's real NCCL and CUDA runtime;
#   2. distrun bench all_reduce --device cuda on NCCL, 1 rank, 8 B to 1 GiB;
#   3. the same through the staged path, 2 and 4 ranks sharing the GPU;
#   4. nccl-tests' all_reduce_perf, built here from the kit's source against
#      the same NCCL, over the same sizes: the peer, side by side;
#   5. nvidia-smi's view, the doctor's gpu and cpu-binding checks against it,
#      and the binding plan `distrun run --explain` makes of this topology.
# Writes OUT_DIR/gpu-check.json (each step's exit code and seconds, the
# numbers) and OUT_DIR/gpu-check.log, the ratio last. Under 8 minutes: each
# step has a time limit.
#   bench/gpu-check.sh [KIT] [OUT_DIR]   (KIT: build/gpu-kit; OUT_DIR: $OUT, else /tmp/gpu-check)
set -uo pipefail
kit=$(cd "${1:-build/gpu-kit}" && pwd) || { echo "gpu-check: no kit (scripts/gpu-kit)" >&2; exit 1; }
out=${2:-${OUT:-/tmp/gpu-check}}
mkdir -p "$out"
log=$out/gpu-check.log
exec > >(tee "$log") 2>&1
steps=$out/steps.tsv
: >"$steps"
work=$(mktemp -d)
echo "# bench/gpu-check.sh $kit, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(hostname)"

# step NAME SECONDS COMMAND...: runs it with a time limit, output in
# OUT_DIR/NAME.txt, and records its exit code and time.
step() {
  local name=$1 limit=$2 start=$SECONDS rc
  shift 2
  echo "== $name (at most $limit s): $*"
  # bash -c: the command may be one of this script's functions (exported below).
  timeout "$limit" bash -c '"$@"' step "$@" >"$out/$name.txt" 2>&1
  rc=$?
  tail -n 25 "$out/$name.txt"
  printf '%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - start))" >>"$steps"
  echo "== $name: exit $rc after $((SECONDS - start)) s"
}

# The kit's programs under the kit's loader and libraries.
kitrun() {
  local program=$1
  shift
  "$kit/lib/ld-linux-x86-64.so.2" --library-path "$kit/lib" "$kit/bin/$program" "$@"
}

# The machine's NCCL and CUDA runtime: the system's, else PyTorch's wheels'.
python=$(command -v python3 || command -v python || true)
find_lib() {  # find_lib NAME PYTHON_MODULE_DIR
  local found
  found=$(ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n {print $NF; exit}')
  if [[ -z $found && -n $python ]]; then
    found=$("$python" - "$1" "$2" <<'PY' 2>/dev/null
import glob, os, site, sys
for base in site.getsitepackages():
    for path in glob.glob(os.path.join(base, "nvidia", sys.argv[2], "lib", sys.argv[1])):
        print(path); raise SystemExit
PY
)
  fi
  [[ -z $found && -e /usr/local/cuda/lib64/$1 ]] && found=/usr/local/cuda/lib64/$1
  echo "$found"
}
nccl_lib=$(find_lib libnccl.so.2 nccl)
export kit out work nccl_lib
cudart_lib=$(find_lib libcudart.so.13 cuda_runtime)
[[ -z $cudart_lib ]] && cudart_lib=$(find_lib libcudart.so.12 cuda_runtime)
echo "NCCL: ${nccl_lib:-none found}; CUDA runtime: ${cudart_lib:-none found}"
[[ -n $nccl_lib ]] && export DISTRUN_NCCL_LIBRARY=$nccl_lib
[[ -n $cudart_lib ]] && export DISTRUN_GPU_RUNTIME=$cudart_lib

export -f kitrun
step nvidia_smi 30 nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total,driver_version --format=csv
step nvidia_smi_topo 30 nvidia-smi topo -m
# The doctor's GPU rows against the real nvidia-smi, and the binding plan
# from this machine's real topology (one rank a GPU).
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
((gpus > 0)) || gpus=1
step doctor_gpu 60 kitrun distrun-doctor --here --checks gpu,cpu-binding --nproc-per-node "$gpus"
step binding_plan 30 kitrun distrun run --explain --nproc-per-node "$gpus" true

step contract 150 kitrun comm_nccl_test \
  --gtest_filter='GpuRuntimeTest.*:NcclLibraryTest.Loads*:NcclContractTest.*:StagedGpuTest.*' \
  --gtest_output="json:$out/comm_nccl_test.json"

# rank_env RANK SIZE PORT: the variables a launcher gives a rank on this node.
rank_env() {
  echo "RANK=$1 WORLD_SIZE=$2 LOCAL_RANK=$1 LOCAL_WORLD_SIZE=$2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$3 DISTRUN_TOKEN=gpu-check"
}
# bench_ranks NAME SIZE ARGS...: SIZE ranks of distrun-bench, rank 0's JSON
# in OUT_DIR/NAME.json.
bench_ranks() {
  local name=$1 size=$2 port=$((29600 + RANDOM % 1000)) pids=() r rc=0
  shift 2
  for ((r = size - 1; r >= 0; r--)); do
    # shellcheck disable=SC2046
    env $(rank_env "$r" "$size" "$port") "$kit/lib/ld-linux-x86-64.so.2" --library-path "$kit/lib" \
      "$kit/bin/distrun-bench" all_reduce --device cuda "$@" --format json \
      >"$work/$name.$r.json" 2>"$work/$name.$r.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  cp "$work/$name.0.json" "$out/$name.json" 2>/dev/null
  cat "$work/$name".*.err
  return $rc
}
export -f rank_env bench_ranks
sizes=(-b 8 -e 1G -f 2)
step bench_nccl_1 120 bench_ranks bench_nccl_1 1 --backend nccl "${sizes[@]}"
step bench_staged_2 90 bench_ranks bench_staged_2 2 --backend gloo -b 8 -e 256M -f 4
step bench_staged_4 90 bench_ranks bench_staged_4 4 --backend gloo -b 8 -e 256M -f 4

# nccl-tests against the NCCL found above: its headers beside it (PyPI's
# nvidia-nccl has include/ and lib/), a libnccl.so link for -lnccl.
build_nccl_tests() {
  local root
  root=$(dirname "$(dirname "$nccl_lib")")
  mkdir -p "$work/nccl/lib"
  ln -sf "$nccl_lib" "$work/nccl/lib/libnccl.so"
  ln -sf "$nccl_lib" "$work/nccl/lib/libnccl.so.2"
  ln -sfn "$root/include" "$work/nccl/include"
  cp -r "$kit/nccl-tests" "$work/nccl-tests"
  make -C "$work/nccl-tests/src" -j"$(nproc)" build BIN_FILES_LIST=all_reduce MPI=0 \
    BUILDDIR="$work/nccl-tests/build" NCCL_HOME="$work/nccl" CUDA_HOME=/usr/local/cuda \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90"
}
export -f build_nccl_tests
if [[ -n $nccl_lib && -f $kit/nccl-tests/src/Makefile ]]; then
  step nccl_tests_build 200 build_nccl_tests
  LD_LIBRARY_PATH=$work/nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    step nccl_tests 90 "$work/nccl-tests/build/all_reduce_perf" "${sizes[@]}" -g 1
else
  echo "== nccl-tests: skipped (no NCCL found, or no source in the kit)"
fi

# The summary: every step, and the largest size's bus bandwidth of both.
"${python:-python3}" - "$out" "$steps" <<'PY'
import json, os, re, sys
out, steps = sys.argv[1], sys.argv[2]
summary = {"steps": [], "numbers": {}}
for line in open(steps):
    name, rc, seconds = line.rstrip("\n").split("\t")
    summary["steps"].append({"name": name, "exit": int(rc), "seconds": int(seconds)})
def ours(name):
    try:
        rows = json.load(open(os.path.join(out, name + ".json")))["results"]
    except (OSError, ValueError, KeyError):
        return None
    last = rows[-1]
    return {"bytes": last["size"], "busbw": last["out_of_place"]["bus_bw"],
            "time_us": last["out_of_place"]["time"]}
for name in ("bench_nccl_1", "bench_staged_2", "bench_staged_4"):
    summary["numbers"][name] = ours(name)
peer = None
try:
    for line in open(os.path.join(out, "nccl_tests.txt")):
        f = line.split()
        if len(f) >= 8 and f[0].isdigit():
            peer = {"bytes": int(f[0]), "time_us": float(f[5]), "busbw": float(f[7])}
except OSError:
    pass
summary["numbers"]["nccl_tests"] = peer
json.dump(summary, open(os.path.join(out, "gpu-check.json"), "w"), indent=2)
print(json.dumps(summary, indent=2))
a, b = summary["numbers"]["bench_nccl_1"], peer
if a and b and a["bytes"] == b["bytes"] and b["busbw"] > 0:
    print(f"gpu-check: distrun bench on NCCL is {a['busbw'] / b['busbw']:.2f}x nccl-tests' "
          f"all_reduce_perf busbw at {a['bytes']} bytes, 1 GPU")
else:
    print("gpu-check: no ratio (a side is missing; see the steps above)")
PY
rm -rf "$work"
