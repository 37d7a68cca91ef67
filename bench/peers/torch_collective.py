"""One of PyTorch's collectives over gloo, timed like `distrun bench`.

Run under a launcher that sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
(`distrun run --nproc-per-node 2 bench/peers/torch_collective.py COLLECTIVE
SIZES...`). Rank 0 prints one CSV line per size: bytes,time_us (float32, the
mean over BENCH_ITERS after BENCH_WARMUP, the slowest rank's mean). Sizes
follow nccl-tests as `distrun bench` does (all_gather and alltoall: the
whole array of every rank's block; sendrecv: the message each rank sends
to the next while receiving from the previous); all_reduce and broadcast
run on one buffer, the others out of place. PyTorch's gloo has no reduce_scatter:
that collective prints nothing and says so on stderr.
"""
import os
import sys
import time

import torch
import torch.distributed as dist


def collective_call(name, size, ranks):
    """A function making one call of `name` on `size`-byte arrays, or None."""
    whole = max(size // 4, ranks)
    block = whole // ranks
    if name == "all_reduce":
        t = torch.ones(whole, dtype=torch.float32)
        return lambda: dist.all_reduce(t)
    if name == "broadcast":
        t = torch.ones(whole, dtype=torch.float32)
        return lambda: dist.broadcast(t, 0)
    if name == "all_gather":
        mine = torch.ones(block, dtype=torch.float32)
        out = [torch.empty(block, dtype=torch.float32) for _ in range(ranks)]
        return lambda: dist.all_gather(out, mine)
    if name == "alltoall":
        send = torch.ones(block * ranks, dtype=torch.float32)
        recv = torch.empty(block * ranks, dtype=torch.float32)
        return lambda: dist.all_to_all_single(recv, send)
    if name == "sendrecv":
        rank = dist.get_rank()
        send = torch.ones(whole, dtype=torch.float32)
        recv = torch.empty(whole, dtype=torch.float32)
        return lambda: ring_shift(send, (rank + 1) % ranks, recv, (rank - 1) % ranks)
    return None


def ring_shift(send, to, recv, source):
    """Sends to the next rank while receiving from the previous one."""
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, send, to),
                                        dist.P2POp(dist.irecv, recv, source)]):
        work.wait()


def main():
    iters = int(os.environ.get("BENCH_ITERS", "20"))
    warmup = int(os.environ.get("BENCH_WARMUP", "5"))
    name, sizes = sys.argv[1], [int(s) for s in sys.argv[2:]]
    dist.init_process_group("gloo")
    torch.set_num_threads(1)
    ranks = dist.get_world_size()
    for size in sizes:
        call = collective_call(name, size, ranks)
        if call is None:
            if dist.get_rank() == 0:
                print(f"torch_collective: PyTorch's gloo has no {name}", file=sys.stderr)
            break
        for _ in range(warmup):
            call()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            call()
        us = torch.tensor([(time.perf_counter() - start) / iters * 1e6], dtype=torch.float64)
        dist.all_reduce(us, op=dist.ReduceOp.MAX)
        if dist.get_rank() == 0:
            print(f"{size},{us.item():.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
