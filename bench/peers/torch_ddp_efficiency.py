"""PyTorch DDP's scaling efficiency in interleaved phases, the peer of
bench/ddp_efficiency.cc: the same protocol, model, batch, data and output.

Each rank builds the mnist CNN (torch_ddp_train.py's MnistNet, Adam, batch
64 a rank) and warms up; then every cycle runs these phases of --steps
steps each, in an order that rotates by one each cycle:
  pair         every rank trains, DDP averages the gradients
  lockstep     every rank trains on its own (DDP's no_sync()), but the ranks
               meet after every step (an all-reduce of one float)
  independent  every rank trains on its own, at once
  lone R       rank R trains on its own; the others wait, blocked
Between phases the ranks meet in a barrier of a second gloo group, which
blocks. Run under a launcher that sets RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT:

  distrun run --python /usr/bin/python3 --nproc-per-node 2 \
      bench/peers/torch_ddp_efficiency.py --data data --metrics m.json

Rank 0 prints one line a cycle and writes --metrics: {"runtime",
"world_size", "batch_size", "steps_per_phase", "cycles": [{"pair",
"lockstep", "independent", "lone": [per rank]}]} in samples/s. Bad input: one line
`torch_ddp_efficiency: error: ...` on stderr, exit 2.
"""
import contextlib
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_ddp_train import (BadInput, MnistNet, Parser, loadMnist, runMain,  # noqa: E402
                             writeJson)

PROG = "torch_ddp_efficiency"
BATCH = 64


def parseArgs(argv):
    p = Parser(prog=PROG, description="PyTorch DDP's efficiency in interleaved phases")
    p.add_argument("--data", default="data", help="folder holding MNIST/raw")
    p.add_argument("--cycles", type=int, default=12)
    p.add_argument("--steps", type=int, default=20, help="steps of each phase")
    p.add_argument("--warmup", type=int, default=20, help="DDP steps before the first cycle")
    p.add_argument("--limit-train", type=int, default=3000, help="first N training samples")
    p.add_argument("--metrics", help="write every cycle's samples/s as JSON here")
    args = p.parse_args(argv)
    for name in ("cycles", "steps"):
        if getattr(args, name) < 1:
            raise BadInput(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.warmup < 0:
        raise BadInput(f"--warmup must be >= 0, got {args.warmup}")
    if args.limit_train < BATCH:
        raise BadInput(f"--limit-train must be >= {BATCH}, got {args.limit_train}")
    return args


class Rank:
    """One rank's model, optimizer and place in the data."""

    def __init__(self, data, rank, world):
        self.x, self.y = data
        torch.manual_seed(0)
        self.ddp = DistributedDataParallel(MnistNet())
        self.optimizer = torch.optim.Adam(self.ddp.parameters(), lr=1e-3)
        self.rank, self.world, self.next = rank, world, 0

    def trainSteps(self, steps, phase):
        """Seconds for `steps` steps as `phase` trains."""
        alone = contextlib.nullcontext() if phase == "pair" else self.ddp.no_sync()
        meet = torch.zeros(1)
        start = time.perf_counter()
        with alone:
            for _ in range(steps):
                self.step()
                if phase == "lockstep":
                    dist.all_reduce(meet)
        return time.perf_counter() - start

    def step(self):
        first = ((self.next * self.world + self.rank) * BATCH) % (len(self.x) - BATCH + 1)
        self.next += 1
        self.optimizer.zero_grad()
        F.nll_loss(self.ddp(self.x[first:first + BATCH]), self.y[first:first + BATCH]).backward()
        self.optimizer.step()


def phasesOf(world):
    """(kind, lone rank) of each phase."""
    together = [("pair", -1), ("lockstep", -1), ("independent", -1)]
    return together + [("lone", r) for r in range(world)]


def runCycle(rank, meet, phases, first, steps):
    """Every rank's seconds per phase, [phase][rank]."""
    seconds = torch.zeros(len(phases), rank.world, dtype=torch.float64)
    for i in range(len(phases)):
        p = (first + i) % len(phases)
        kind, lone = phases[p]
        dist.barrier(group=meet)
        if kind != "lone" or lone == rank.rank:
            seconds[p][rank.rank] = rank.trainSteps(steps, kind)
    dist.all_reduce(seconds, group=meet)
    return seconds


def cycleRates(phases, seconds, steps):
    samples = steps * BATCH
    c = {"lone": [0.0] * seconds.shape[1]}
    for p, (kind, lone) in enumerate(phases):
        slowest = seconds[p].max().item()
        if kind in ("pair", "lockstep"):
            c[kind] = samples * seconds.shape[1] / slowest
        elif kind == "independent":
            c["independent"] = sum(samples / t for t in seconds[p].tolist())
        else:
            c["lone"][lone] = samples / slowest
    return c


def cycleLine(c, cycle, cycles):
    lone = sum(c["lone"])
    return (f"cycle {cycle}/{cycles}  pair {c['pair']:.1f}  lockstep {c['lockstep']:.1f}"
            f"  independent {c['independent']:.1f}"
            f"  lone sum {lone:.1f}  efficiency {c['pair'] / lone:.3f}"
            f"  machine's own {c['independent'] / lone:.3f}"
            f"  pair/independent {c['pair'] / c['independent']:.3f}")


def run(args):
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    data = loadMnist(args.data, "train", args.limit_train)
    dist.init_process_group("gloo")
    meet = dist.new_group(backend="gloo")
    rank = Rank(data, dist.get_rank(), dist.get_world_size())
    rank.trainSteps(args.warmup, "pair")
    phases = phasesOf(rank.world)
    cycles = []
    for c in range(args.cycles):
        seconds = runCycle(rank, meet, phases, c % len(phases), args.steps)
        cycles.append(cycleRates(phases, seconds, args.steps))
        if rank.rank == 0:
            print(cycleLine(cycles[-1], c + 1, args.cycles), flush=True)
    if rank.rank == 0 and args.metrics:
        report = {"runtime": "pytorch", "world_size": rank.world, "batch_size": BATCH,
                  "steps_per_phase": args.steps, "cycles": cycles}
        writeJson(args.metrics, report)
    dist.destroy_process_group()


if __name__ == "__main__":
    runMain(PROG, parseArgs, run)
