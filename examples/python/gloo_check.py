"""A PyTorch gloo job that checks the world distrun gave it.

Each rank verifies torchrun's environment contract, joins the process group
through env:// (MASTER_ADDR/MASTER_PORT), all-reduces its rank and gathers
every rank's view, then prints one JSON line. Any mismatch exits non-zero.

    srun -N2 -n3 distrun exec -- python3 gloo_check.py
    mpirun -np 2 distrun exec -- python3 gloo_check.py
"""
import datetime
import json
import os
import socket
import sys

import torch
import torch.distributed as dist

CONTRACT = [
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
    "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_NAME", "ROLE_WORLD_SIZE",
    "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
    "TORCHELASTIC_USE_AGENT_STORE", "OMP_NUM_THREADS",
]


def fail(message):
    print(f"gloo_check: rank {os.environ.get('RANK', '?')}: {message}",
          file=sys.stderr, flush=True)
    sys.exit(3)


def check_contract():
    missing = [name for name in CONTRACT if name not in os.environ]
    if missing:
        fail(f"missing variables: {', '.join(missing)}")
    # Who hosts the workers' store: rank 0 (False: distrun, torchrun 1.x) or
    # the agent, at MASTER_ADDR:MASTER_PORT (True: torchrun 2.4 and later).
    # init_process_group below then shows that the value was right.
    if os.environ["TORCHELASTIC_USE_AGENT_STORE"] not in ("False", "True"):
        fail("TORCHELASTIC_USE_AGENT_STORE must be False or True, not "
             + repr(os.environ["TORCHELASTIC_USE_AGENT_STORE"]))
    if hasattr(dist, "is_torchelastic_launched") and not dist.is_torchelastic_launched():
        fail("torch does not see a torchelastic launch")


def main():
    check_contract()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank != int(os.environ["RANK"]) or world != int(os.environ["WORLD_SIZE"]):
        fail(f"torch sees rank {rank} of {world}")
    total = torch.tensor([float(rank)])
    dist.all_reduce(total)
    view = {name: os.environ[name] for name in CONTRACT}
    view["host"] = socket.gethostname()
    views = [None] * world
    dist.all_gather_object(views, view)
    expected = world * (world - 1) / 2
    if total.item() != expected:
        fail(f"all_reduce gave {total.item()}, expected {expected}")
    if sorted(int(v["RANK"]) for v in views) != list(range(world)):
        fail("ranks are not 0..WORLD_SIZE-1")
    # One write per line: under PYTHONUNBUFFERED print() writes the text and
    # the newline separately, and two ranks sharing a pipe interleave them.
    line = json.dumps({"rank": rank, "world": world, "sum": total.item(), "env": view})
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
