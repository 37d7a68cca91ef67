"""A Python job's PyTorch profile in distrun's merged trace.

Each rank profiles a few all_reduce calls with PyTorch's profiler and
writes $DISTRUN_TRACE/torch-rank<RANK>.json in the object form that
`distrun trace merge` places exactly on one host (docs/observability.md,
"Python jobs"). Run it:

    DISTRUN_TRACE=traces distrun run --nproc-per-node 2 examples/python/profiled_allreduce.py
    distrun trace merge traces      # writes traces/trace.json
"""
import json
import os
import socket
import time

import torch
import torch.distributed as dist


def save_profile(prof, clock, wall):
    """Writes torch-rank<RANK>.json: the export and when the profiler started."""
    path = os.path.join(os.environ["DISTRUN_TRACE"], f"torch-rank{os.environ['RANK']}.json")
    prof.export_chrome_trace(path + ".tmp")
    with open(path + ".tmp") as f:
        events = json.load(f)
    with open(path + ".tmp", "w") as f:
        json.dump({"traceEvents": events, "distrunClockStartUs": clock,
                   "distrunRealtimeStartUs": wall, "distrunHost": socket.gethostname()}, f)
    os.replace(path + ".tmp", path)


def main():
    dist.init_process_group("gloo")  # MASTER_ADDR, RANK, ... from distrun run
    rank, world = dist.get_rank(), dist.get_world_size()
    clock, wall = time.monotonic() * 1e6, time.time() * 1e6
    with torch.autograd.profiler.profile() as prof:
        for _ in range(3):
            t = torch.full((1024,), float(rank + 1))
            dist.all_reduce(t)
    expected = world * (world + 1) / 2
    assert t[0].item() == expected, f"all_reduce gave {t[0].item()}, expected {expected}"
    if "DISTRUN_TRACE" in os.environ:
        save_profile(prof, clock, wall)
    print(f"profiled_allreduce: rank {rank} of {world}: all_reduce ok", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
