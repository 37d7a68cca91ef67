"""A PyTorch DistributedDataParallel job that checks what the launcher gave it.

Every rank checks torchrun's environment contract (see gloo_check.py),
trains a small model with DDP over gloo on its own shard of random data,
then verifies that every rank ends with the same parameters, and prints one
JSON line. Exits non-zero on any mismatch.

    distrun run --nproc-per-node 3 ddp_check.py
    srun -N2 --ntasks-per-node=1 distrun run --nproc-per-node 2 ddp_check.py
"""
import datetime
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gloo_check import check_contract, fail  # noqa: E402

STEPS = 5
# Under `distrun run`, a byte per step on this descriptor tells the agent the
# rank is making progress (--hang-timeout; docs/launcher.md, "Hung workers").
PROGRESS_FD = os.environ.get("DISTRUN_PROGRESS_FD")


def train(rank):
    torch.manual_seed(0)  # same initial weights everywhere; DDP broadcasts anyway
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(1000 + rank)  # a different shard per rank
    for _ in range(STEPS):
        x = torch.randn(8, 16, generator=data)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if PROGRESS_FD:
            os.write(int(PROGRESS_FD), b".")
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def main():
    check_contract()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    params = train(rank)
    gathered = [torch.zeros_like(params) for _ in range(world)]
    dist.all_gather(gathered, params)
    if not all(torch.equal(gathered[0], g) for g in gathered):
        fail("ranks ended with different parameters")
    env = {k: os.environ[k] for k in (
        "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
        "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
        "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
        "OMP_NUM_THREADS", "ROLE_NAME")}
    # One write per line (print() writes the newline separately when
    # unbuffered, and ranks sharing a pipe would interleave).
    line = json.dumps({"rank": rank, "world": world,
                       "checksum": float(params.double().sum()), "env": env})
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
