# Two gloo ranks: after five all_reduces rank 1 sleeps for a minute while
# rank 0 waits for it in the next all_reduce. Under `distrun run
# --hang-timeout 5` rank 1 is the hung rank (scripts/check-torch2-hang).
# REPORT=1: each rank also reports every step on DISTRUN_PROGRESS_FD, as
# docs/launcher.md asks of a training loop.
import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.ones(1000)
fd = os.environ.get("DISTRUN_PROGRESS_FD") if os.environ.get("REPORT") == "1" else None
for _ in range(5):
    dist.all_reduce(t)
    if fd:
        os.write(int(fd), b".")
if dist.get_rank() == 1:
    time.sleep(60)
dist.all_reduce(t)
