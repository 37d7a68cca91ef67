"""PyTorch's all_reduce over gloo, timed like `distrun bench all_reduce`.

Run under a launcher that sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
(`distrun run --nproc-per-node 2 bench/peers/torch_allreduce.py SIZES...`).
Rank 0 prints one CSV line per size: bytes,time_us (in-place, float32, the
mean over ITERS after WARMUP, the slowest rank's mean).
"""
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    iters = int(os.environ.get("BENCH_ITERS", "20"))
    warmup = int(os.environ.get("BENCH_WARMUP", "5"))
    sizes = [int(s) for s in sys.argv[1:]]
    dist.init_process_group("gloo")
    torch.set_num_threads(1)
    for size in sizes:
        t = torch.ones(max(size // 4, 1), dtype=torch.float32)
        for _ in range(warmup):
            dist.all_reduce(t)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        us = torch.tensor([(time.perf_counter() - start) / iters * 1e6], dtype=torch.float64)
        dist.all_reduce(us, op=dist.ReduceOp.MAX)
        if dist.get_rank() == 0:
            print(f"{size},{us.item():.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
