"""A PyTorch DDP job that survives a time limit or a preemption: distrun's protocol.

Slurm sends SIGUSR1 before the end of the job (`distrun submit` asks for it
with --signal=B:USR1@GRACE); `distrun run` forwards it to every worker. This
program then:

  1. only raises a flag in its handler (a handler must not do the work);
  2. at the next step boundary, all ranks agree on the flag with an
     all_reduce (MAX) of one integer, so every rank takes the same decision
     at the same step, whichever ranks the signal reached and when;
  3. rank 0 writes a checkpoint atomically (a temporary file, fsync,
     os.replace), then every rank exits 79: "checkpointed, requeue me".
     The agent exits 79 too, and the batch script requeues the job;
  4. started again, it resumes from the checkpoint when there is one.

Any other exit code means what it always does (0 done, others failed: no
requeue). Run it:

    distrun run --nproc-per-node 2 examples/python/preemptible_ddp.py \\
        --checkpoint /tmp/ddp.ckpt --steps 200
    # elsewhere: kill -USR1 <pid of distrun run>  -> exit 79, checkpoint written
    # the same command again resumes and finishes -> exit 0
"""
import argparse
import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

CHECKPOINTED = 79  # distrun's "checkpointed, requeue me" (docs/errors.md)

checkpoint_requested = False


def request_checkpoint(signum, frame):
    global checkpoint_requested
    checkpoint_requested = True


def agreed_to_stop():
    """Collective: True on every rank when any rank saw SIGUSR1."""
    flag = torch.tensor([1 if checkpoint_requested else 0], dtype=torch.int32)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())


def save_atomically(path, state):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)  # readers see the old checkpoint or the new one, never half
    folder = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--step-seconds", type=float, default=0.01,
                        help="sleep per step, to stand for real work")
    args = parser.parse_args()

    signal.signal(signal.SIGUSR1, request_checkpoint)  # before anything slow
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank = dist.get_rank()

    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    start = 0
    if os.path.exists(args.checkpoint):  # every rank reads it: a shared folder
        state = torch.load(args.checkpoint)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start = state["step"]
        if rank == 0:
            print(f"preemptible_ddp: resumed from {args.checkpoint} at step {start}", flush=True)
    if rank == 0:
        print("preemptible_ddp: training", flush=True)

    for step in range(start, args.steps):
        if agreed_to_stop():
            if rank == 0:
                save_atomically(args.checkpoint, {"model": model.module.state_dict(),
                                                  "optimizer": opt.state_dict(), "step": step})
                print(f"preemptible_ddp: SIGUSR1: wrote {args.checkpoint} at step {step}; "
                      f"exit {CHECKPOINTED}", flush=True)
            dist.barrier()  # the checkpoint is complete before any rank leaves
            sys.exit(CHECKPOINTED)
        # Each step's batch depends on the step alone: a resumed run sees the same data.
        x = torch.randn(16, 8, generator=torch.Generator().manual_seed(step * 1000 + rank))
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(args.step_seconds)
    if rank == 0:
        print(f"preemptible_ddp: finished {args.steps} steps", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
