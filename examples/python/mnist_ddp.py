"""MNIST with DistributedDataParallel, written the way HPC sites' guides
(LUMI's, the ml-dist guide's) turn a one-GPU script into a torchrun job:
the sizes and ranks read from torchrun's variables, one process group,
`cuda:LOCAL_RANK` (NCCL) on a GPU node and the CPU (gloo) elsewhere, a
DistributedSampler for the training and the test set, the learning rate
scaled by the world size, rank 0 saving the model, the group destroyed at
the end.

It reads the idx files of MNIST (train-images-idx3-ubyte, ...) from
DATA_DIR (default: the repository's data/MNIST/raw, which
scripts/prepare-mnist unpacks) and uses the first LIMIT training and test
digits (default 1024, 512), so a CPU trains it in seconds. Rank 0 prints
one JSON line: test loss, accuracy and a checksum of the parameters.

    torchrun --nproc-per-node 2 mnist_ddp.py [DATA_DIR] [OUTPUT_DIR]
    distrun run --nproc-per-node 2 mnist_ddp.py [DATA_DIR] [OUTPUT_DIR]
"""
import json
import os
import sys
from types import SimpleNamespace

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.join(HERE, "..", "..", "data", "MNIST", "raw")


def init_dist():
    info = SimpleNamespace(size=int(os.environ["WORLD_SIZE"]), rank=int(os.environ["RANK"]),
                           local_size=int(os.environ["LOCAL_WORLD_SIZE"]),
                           local_rank=int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return info


def read_idx(path, offset, count, shape):
    with open(path, "rb") as f:
        f.seek(offset)
        raw = f.read(count * int(torch.tensor(shape).prod()))
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).reshape(count, *shape)


def mnist(data_dir, part, count):
    images = read_idx(os.path.join(data_dir, f"{part}-images-idx3-ubyte"), 16, count, (1, 28, 28))
    labels = read_idx(os.path.join(data_dir, f"{part}-labels-idx1-ubyte"), 8, count, ())
    return TensorDataset((images.float() / 255 - 0.1307) / 0.3081, labels.long())


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 8, 3, 1)
        self.fc1 = torch.nn.Linear(8 * 13 * 13, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return F.log_softmax(self.fc2(F.relu(self.fc1(torch.flatten(x, 1)))), dim=1)


def evaluate(model, loader, device):
    model.eval()
    loss = torch.zeros(2, device=device)  # summed loss, correct answers
    with torch.no_grad():
        for x, y in loader:
            out = model(x.to(device))
            loss[0] += F.nll_loss(out, y.to(device), reduction="sum")
            loss[1] += (out.argmax(dim=1) == y.to(device)).sum()
    dist.all_reduce(loss)
    return loss.cpu()


def main(data_dir, output_dir):
    info = init_dist()
    device = torch.device("cpu")
    if torch.cuda.is_available():
        device = torch.device(f"cuda:{info.local_rank}")
        torch.cuda.set_device(device)
    train_set = mnist(data_dir, "train", int(os.environ.get("LIMIT", "1024")))
    test_set = mnist(data_dir, "t10k", int(os.environ.get("LIMIT", "1024")) // 2)
    train_sampler = DistributedSampler(train_set, shuffle=True, seed=0)
    test_sampler = DistributedSampler(test_set, shuffle=False)
    train_loader = DataLoader(train_set, batch_size=32, sampler=train_sampler)
    test_loader = DataLoader(test_set, batch_size=64, sampler=test_sampler)
    torch.manual_seed(1)
    model = DDP(Net().to(device), device_ids=[device] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.01 * info.size, momentum=0.5)
    for epoch in range(2):
        model.train()
        train_sampler.set_epoch(epoch)
        for x, y in train_loader:
            opt.zero_grad()
            F.nll_loss(model(x.to(device)), y.to(device)).backward()
            opt.step()
    summed = evaluate(model, test_loader, device)
    if info.rank == 0:
        torch.save(model.module.state_dict(), os.path.join(output_dir, "mnist_cnn.pt"))
        params = torch.cat([p.detach().cpu().flatten() for p in model.parameters()])
        sys.stdout.write(json.dumps({
            "world": info.size, "test_loss": float(summed[0]) / len(test_set),
            "accuracy": float(summed[1]) / len(test_set),
            "checksum": float(params.double().sum())}) + "\n")
        sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DATA,
         sys.argv[2] if len(sys.argv) > 2 else ".")
