"""PyTorch DistributedDataParallel training, the peer of `distrun-train`.

Same workloads, flags and metrics as the C++ trainer, so a benchmark can run
both on the same data and compare them. Run under a launcher that sets RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT, with a Python that has torch (gloo):

  distrun run --python /usr/bin/python3 --nproc-per-node 2 \
      bench/peers/torch_ddp_train.py mnist --data data --epochs 1

Workloads:
  mnist   the CNN of PyTorch's MNIST example, Adam, batch 64, 3 epochs, on
          DIR/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte
  linear  Linear(20,1) on 2048 random samples, MSE, SGD, batch 32, 10 epochs

Each epoch: DistributedSampler(shuffle, seed, drop_last=False) indices index
a pre-built tensor in batch-sized slices (no DataLoader, like the C++ side);
only the training steps are timed (after a barrier; the slowest rank's time).
train_loss is the mean over every rank's samples; the mnist test set is
sharded rank::world without padding. Rank 0 prints one line per epoch and,
with --metrics PATH, writes the JSON the C++ trainer writes. Bad input: one
line `torch_ddp_train: error: ...` on stderr, exit 2.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data.distributed import DistributedSampler

PROG = "torch_ddp_train"
EXIT_BAD_INPUT = 2
TEST_BATCH_SIZE = 1000  # evaluation only; the sums do not depend on it
LINEAR_SAMPLES = 2048
# Per workload: batch size, epochs, learning rate.
DEFAULTS = {"mnist": (64, 3, 1e-3), "linear": (32, 10, 1e-3)}


class BadInput(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage + error
        raise BadInput(message)


def parseArgs(argv):
    p = Parser(prog=PROG, description="PyTorch DDP peer of distrun-train")
    p.add_argument("workload", metavar="WORKLOAD", choices=sorted(DEFAULTS))
    p.add_argument("--data", default="data", help="folder holding MNIST/raw")
    p.add_argument("--epochs", type=int)
    p.add_argument("--batch-size", type=int, help="per rank")
    p.add_argument("--lr", type=float)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads-per-rank", type=int,
                   help="default: the cores this rank may run on")
    p.add_argument("--bucket-cap-mb", type=float, default=25.0)
    p.add_argument("--no-overlap", action="store_true",
                   help="all-reduce gradients only after backward")
    p.add_argument("--limit-train", type=int, help="first N training samples")
    p.add_argument("--limit-test", type=int, help="first N test samples")
    p.add_argument("--metrics", help="write per-epoch metrics as JSON here")
    args = p.parse_args(argv)
    batch, epochs, lr = DEFAULTS[args.workload]
    args.batch_size = batch if args.batch_size is None else args.batch_size
    args.epochs = epochs if args.epochs is None else args.epochs
    args.lr = lr if args.lr is None else args.lr
    if args.threads_per_rank is None:
        args.threads_per_rank = len(os.sched_getaffinity(0))
    for name in ("epochs", "batch_size", "threads_per_rank"):
        if getattr(args, name) < 1:
            raise BadInput(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    for name in ("limit_train", "limit_test"):
        if getattr(args, name) is not None and getattr(args, name) < 0:
            raise BadInput(f"--{name.replace('_', '-')} must be >= 0, got {getattr(args, name)}")
    if not args.lr > 0:
        raise BadInput(f"--lr must be > 0, got {args.lr}")
    if not args.bucket_cap_mb > 0:
        raise BadInput(f"--bucket-cap-mb must be > 0, got {args.bucket_cap_mb}")
    return args


# ---- data -------------------------------------------------------------------

def readIdx(path, magic, limit):
    """The uint8 array of an uncompressed IDX file, first `limit` items."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror}") from None
    ndim = magic & 0xFF
    if len(raw) < 4 + 4 * ndim or int.from_bytes(raw[:4], "big") != magic:
        raise BadInput(f"{path}: not an IDX file with magic {magic} (gzipped? run scripts/prepare-mnist)")
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        raise BadInput(f"{path}: header says {dims}, file holds {body.size} bytes of data")
    data = body.reshape(dims)
    return data if limit is None else data[:limit]


def loadMnist(root, split, limit):
    """(images N x 1 x 28 x 28 float32, normalised; labels N int64)."""
    folder = os.path.join(root, "MNIST", "raw")
    if not os.path.isdir(folder):
        raise BadInput(f"no MNIST data: {folder} is not a folder (run scripts/prepare-mnist)")
    images = readIdx(os.path.join(folder, f"{split}-images-idx3-ubyte"), 2051, limit)
    labels = readIdx(os.path.join(folder, f"{split}-labels-idx1-ubyte"), 2049, limit)
    if len(images) != len(labels) or images.shape[1:] != (28, 28):
        raise BadInput(f"{folder}: {split} has {images.shape} images, {len(labels)} labels")
    x = torch.from_numpy(images.astype(np.float32)).div_(255.0)
    x = x.sub_(0.1307).div_(0.3081).unsqueeze(1).contiguous()
    return x, torch.from_numpy(labels.astype(np.int64))


def linearData(seed):
    """The DDP tutorial's MyTrainDataset: 2048 (rand(20), rand(1)) pairs, stacked."""
    g = torch.Generator()
    g.manual_seed(seed)
    pairs = [(torch.rand(20, generator=g), torch.rand(1, generator=g))
             for _ in range(LINEAR_SAMPLES)]
    return torch.stack([x for x, _ in pairs]), torch.stack([y for _, y in pairs])


# ---- models -----------------------------------------------------------------

class MnistNet(nn.Module):
    """PyTorch's examples/mnist CNN."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = self.dropout1(F.max_pool2d(x, 2))
        x = torch.flatten(x, 1)
        x = self.dropout2(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


def build(args):
    """(model, optimizer, loss function, train set, test set or None)."""
    if args.workload == "mnist":
        train = loadMnist(args.data, "train", args.limit_train)
        test = loadMnist(args.data, "t10k", args.limit_test)
        torch.manual_seed(args.seed)
        model = MnistNet()
        return model, torch.optim.Adam(model.parameters(), lr=args.lr), F.nll_loss, train, test
    train = linearData(args.seed)
    if args.limit_train is not None:
        train = tuple(t[:args.limit_train] for t in train)
    torch.manual_seed(args.seed)
    model = nn.Linear(20, 1)
    return model, torch.optim.SGD(model.parameters(), lr=args.lr), F.mse_loss, train, None


# ---- training ---------------------------------------------------------------

def allReduceAfterBackward(params, world):
    """--no-overlap: backward ran under no_sync(), so no bucket was reduced
    while it ran; average every gradient now in one flat all_reduce."""
    grads = [p.grad for p in params if p.grad is not None]
    flat = torch._utils._flatten_dense_tensors(grads)
    dist.all_reduce(flat)
    flat.div_(world)
    for g, reduced in zip(grads, torch._utils._unflatten_dense_tensors(flat, grads)):
        g.copy_(reduced)


def trainEpoch(ddp, optimizer, lossFn, data, sampler, args, world):
    """Returns (seconds, sum of loss*batch, samples) for this rank."""
    x, y = data
    indices = torch.tensor(list(iter(sampler)), dtype=torch.int64)
    params = [p for p in ddp.parameters() if p.requires_grad]
    lossSum, samples = 0.0, 0
    ddp.train()
    dist.barrier()
    start = time.perf_counter()
    for begin in range(0, len(indices), args.batch_size):
        idx = indices[begin:begin + args.batch_size]
        inputs, targets = x.index_select(0, idx), y.index_select(0, idx)
        optimizer.zero_grad()
        if args.no_overlap:
            # The forward too runs under no_sync(): DDP decides in forward
            # whether the coming backward reduces buckets.
            with ddp.no_sync():
                loss = lossFn(ddp(inputs), targets)
                loss.backward()
            allReduceAfterBackward(params, world)
        else:
            loss = lossFn(ddp(inputs), targets)
            loss.backward()
        optimizer.step()
        lossSum += loss.item() * len(idx)
        samples += len(idx)
    return time.perf_counter() - start, lossSum, samples


def evaluate(model, test, rank, world):
    """(sum of nll_loss, correct, samples) over this rank's shard rank::world."""
    x, y = test[0][rank::world], test[1][rank::world]
    lossSum, correct = 0.0, 0
    model.eval()
    with torch.no_grad():
        for begin in range(0, len(x), TEST_BATCH_SIZE):
            out = model(x[begin:begin + TEST_BATCH_SIZE])
            target = y[begin:begin + TEST_BATCH_SIZE]
            lossSum += F.nll_loss(out, target, reduction="sum").item()
            correct += int((out.argmax(dim=1) == target).sum())
    return lossSum, correct, len(x)


def formatLine(m, epochs):
    s = m["seconds"]
    seconds = f"{s:.1f}" if s >= 1 else f"{s:.3f}"  # linear epochs are short
    line = f"epoch {m['epoch']}/{epochs}  loss {m['train_loss']:.4f}"
    if m["test_loss"] is not None:
        line += f"  test loss {m['test_loss']:.4f}  accuracy {100 * m['test_accuracy']:.2f}%"
    return line + f"  {m['samples_per_second']:.0f} samples/s  {seconds} s"


def writeJson(path, report):
    """--metrics PATH: the report as one line of JSON."""
    try:
        with open(path, "w") as f:
            json.dump(report, f)
            f.write("\n")
    except OSError as e:
        raise BadInput(f"cannot write {path}: {e.strerror}") from None


def run(args):
    torch.set_num_threads(args.threads_per_rank)
    torch.set_num_interop_threads(1)
    model, optimizer, lossFn, train, test = build(args)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)
    sampler = DistributedSampler(train[0], num_replicas=world, rank=rank,
                                 shuffle=True, seed=args.seed, drop_last=False)
    epochs = []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        seconds, lossSum, samples = trainEpoch(ddp, optimizer, lossFn, train, sampler, args, world)
        sums = torch.tensor([lossSum, samples], dtype=torch.float64)
        dist.all_reduce(sums)
        slowest = torch.tensor([seconds], dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        seconds = slowest.item()
        m = {"epoch": epoch + 1, "train_loss": sums[0].item() / max(sums[1].item(), 1),
             "test_loss": None, "test_accuracy": None,
             "samples_per_second": sums[1].item() / seconds if seconds > 0 else 0.0,
             "seconds": seconds}
        if test is not None:
            t = torch.tensor(evaluate(model, test, rank, world), dtype=torch.float64)
            dist.all_reduce(t)
            n = max(t[2].item(), 1)
            m["test_loss"], m["test_accuracy"] = t[0].item() / n, t[1].item() / n
        epochs.append(m)
        if rank == 0:
            print(formatLine(m, args.epochs), flush=True)
    if rank == 0 and args.metrics:
        report = {"workload": args.workload, "runtime": "pytorch", "world_size": world,
                  "batch_size": args.batch_size, "threads_per_rank": args.threads_per_rank,
                  "epochs": epochs}
        writeJson(args.metrics, report)
    dist.destroy_process_group()


def runMain(prog, parse, run):
    """run(parse(command line)); bad input: one line `PROG: error: ...`, exit 2."""
    try:
        run(parse(sys.argv[1:]))
    except BadInput as e:
        print(f"{prog}: error: {e}", file=sys.stderr, flush=True)
        sys.exit(EXIT_BAD_INPUT)


if __name__ == "__main__":
    runMain(PROG, parseArgs, run)
