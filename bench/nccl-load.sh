#!/usr/bin/env bash
# What loading the GPU libraries at run time costs the nccl backend
# (docs/comm.md, "NCCL and RCCL"): dlopen with RTLD_NOW | RTLD_LOCAL, as
# distrun/comm/nccl/loaded_library.cc opens them, of libnccl.so.2 and
# libcudart.so.13, each in a fresh process, median of RUNS. Needs no GPU.
#   bench/nccl-load.sh [RUNS]   (RUNS: 21)
#   report: bench/results/nccl-load.txt
set -euo pipefail
runs=${1:-21}
results=${RESULTS:-$(dirname "$0")/results/nccl-load.txt}
mkdir -p "$(dirname "$results")"
exec > >(tee "$results")
echo "# bench/nccl-load.sh $runs, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
/usr/bin/python3 - "$runs" <<'PY'
import ctypes, os, statistics, subprocess, sys
runs = int(sys.argv[1])
probe = """
import ctypes, os, sys, time
t = time.perf_counter()
lib = ctypes.CDLL(sys.argv[1], os.RTLD_NOW | os.RTLD_LOCAL)
print((time.perf_counter() - t) * 1e3)
"""
for name in ("libnccl.so.2", "libcudart.so.13"):
    try:
        ctypes.CDLL(name)
    except OSError as e:
        print(f"{name:16s} not loadable here: {e}")
        continue
    times = [float(subprocess.check_output([sys.executable, "-c", probe, name])) for _ in range(runs)]
    print(f"{name:16s} dlopen: median {statistics.median(times):6.2f} ms, "
          f"min {min(times):6.2f} ms, max {max(times):6.2f} ms ({runs} fresh processes)")
PY
