"""A training script written the way PyTorch's DDP tutorial series teaches
fault tolerance under torchrun: each (re)started process loads the last
snapshot, then trains on from the epoch it names.

The device is torchrun's contract: `cuda:LOCAL_RANK` with NCCL on a GPU
node (torch.cuda.set_device(LOCAL_RANK), DDP(device_ids=[LOCAL_RANK])), the
CPU with gloo elsewhere. With FAIL_ONCE_AT_EPOCH=N every rank of the first
attempt (TORCHELASTIC_RESTART_COUNT=0) exits 1 after epoch N is saved, so
`--max-restarts 1` resumes from that snapshot. Rank 0 prints one JSON line
at the end: the epoch it resumed from, the restart count, and a checksum of
the parameters.

    torchrun --nproc-per-node 2 --max-restarts 3 snapshot_trainer.py SNAPSHOT
    distrun run --nproc-per-node 2 --max-restarts 3 snapshot_trainer.py SNAPSHOT
"""
import datetime
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

EPOCHS = 4
BATCHES = 4
# A rank that cannot reach its peers fails in a minute, not PyTorch's 30.
TIMEOUT = datetime.timedelta(seconds=60)


def setup():
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl", timeout=TIMEOUT)
        return local_rank, torch.device("cuda", local_rank)
    dist.init_process_group("gloo", timeout=TIMEOUT)
    return None, torch.device("cpu")


def load_snapshot(path, model):
    if not os.path.exists(path):
        return 0
    snapshot = torch.load(path, map_location="cpu")
    model.load_state_dict(snapshot["MODEL_STATE"])
    return snapshot["EPOCHS_RUN"]


def save_snapshot(path, model, epochs_run):
    # Written whole or not at all: a rank killed mid-write leaves the old one.
    torch.save({"MODEL_STATE": model.module.state_dict(), "EPOCHS_RUN": epochs_run},
               path + ".part")
    os.replace(path + ".part", path)


def main(path):
    device_id, device = setup()
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    first_epoch = load_snapshot(path, model)  # before DDP: its broadcast makes the ranks agree
    model = DDP(model.to(device), device_ids=None if device_id is None else [device_id])
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    fail_at = int(os.environ.get("FAIL_ONCE_AT_EPOCH", "-1"))
    restarts = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    for epoch in range(first_epoch, EPOCHS):
        data = torch.Generator().manual_seed(100 * epoch + rank)
        for _ in range(BATCHES):
            x = torch.randn(8, 20, generator=data).to(device)
            loss = (model(x) - x.sum(dim=1, keepdim=True)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if int(os.environ["LOCAL_RANK"]) == 0:
            save_snapshot(path, model, epoch + 1)
        dist.barrier()  # the snapshot is whole before anyone fails
        if epoch == fail_at and restarts == 0:
            sys.exit(1)
    params = torch.cat([p.detach().cpu().flatten() for p in model.parameters()])
    if rank == 0:
        sys.stdout.write(json.dumps({"resumed_from": first_epoch, "restarts": restarts,
                                     "checksum": float(params.double().sum())}) + "\n")
        sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
