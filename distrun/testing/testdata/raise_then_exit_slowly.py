# Two gloo ranks under PyTorch's @record: after three all_reduces rank 1
# raises, its `finally` destroys the process group (the DDP tutorial's
# cleanup) and an exit handler takes a second; rank 0's next all_reduce
# fails meanwhile and it exits 2 with a message of its own. Rank 1 is the
# root cause (scripts/check-torch2-root-cause).
import atexit
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record


@record
def main():
    dist.init_process_group("gloo")
    t = torch.ones(1)
    for _ in range(3):
        dist.all_reduce(t)
    if dist.get_rank() == 1:
        atexit.register(time.sleep, 1.0)  # an exit handler flushing logs
        try:
            raise ValueError("bad batch at step 3")
        finally:
            dist.destroy_process_group()
    try:
        dist.all_reduce(t)
    except RuntimeError:
        print("rank 0: the all_reduce failed: giving up", file=sys.stderr, flush=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
