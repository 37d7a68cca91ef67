"""PyTorch's reference output for sampler_python_test.

Writes to the file named by argv[1], as JSON: DistributedSampler's index
lists over a grid of dataset sizes, world sizes, ranks, seeds, epochs and
flags, and the synthetic dataset of PyTorch's DDP tutorial (MyTrainDataset)
as the bit patterns of its float32 values.
"""
import itertools
import json
import sys

import torch
from torch.utils.data import DistributedSampler

SIZES = (0, 1, 7, 10, 64, 100, 1001)
WORLDS = (1, 2, 3, 4, 5)
SEEDS = (0, 42)
EPOCHS = (0, 1, 3)
SYNTHETIC = ((2048, 0), (2048, 7))


class Sized:
    """DistributedSampler needs only len() of its dataset."""

    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size


def sampler_cases():
    grid = itertools.product(SIZES, WORLDS, SEEDS, EPOCHS, (False, True),
                             (True, False))
    for size, world, seed, epoch, drop_last, shuffle in grid:
        for rank in range(world):
            sampler = DistributedSampler(Sized(size), num_replicas=world,
                                         rank=rank, shuffle=shuffle,
                                         seed=seed, drop_last=drop_last)
            sampler.set_epoch(epoch)
            yield {"size": size, "world": world, "rank": rank, "seed": seed,
                   "epoch": epoch, "drop_last": drop_last,
                   "shuffle": shuffle, "indices": list(sampler)}


def bits(tensor):
    return tensor.contiguous().view(torch.int32).flatten().tolist()


def synthetic(size, seed):
    g = torch.Generator()
    g.manual_seed(seed)
    data = [(torch.rand(20, generator=g), torch.rand(1, generator=g))
            for _ in range(size)]
    return {"size": size, "seed": seed,
            "inputs": bits(torch.stack([x for x, _ in data])),
            "targets": bits(torch.stack([y for _, y in data]))}


def main():
    result = {"samplers": list(sampler_cases()),
              "synthetic": [synthetic(*c) for c in SYNTHETIC]}
    with open(sys.argv[1], "w") as out:
        json.dump(result, out)


if __name__ == "__main__":
    main()
