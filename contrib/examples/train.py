#!/usr/bin/env python3
"""train.py - PyTorch DDP under `srun --ddp`, with no launcher and no glue.

    srun --ddp=nccl -N2 --ntasks-per-node=4 --gpus-per-node=4 python3 train.py
    srun --ddp=host -N2 --ntasks-per-node=2 python3 train.py          # CPU, gloo

The plugin sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT, and
binds one GPU per task (so the task sees it as cuda:0), which is everything
init_process_group()'s default env:// method needs.
"""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    use_gpu = os.environ.get("DDP_BACKEND") == "nccl"
    dist.init_process_group(backend="nccl" if use_gpu else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda:0" if use_gpu else "cpu")

    g = torch.Generator().manual_seed(1)
    x = torch.rand(4096, 16, generator=g) * 2 - 1
    y = (x @ (torch.rand(16, generator=g) * 2 - 1) > 0).float()
    data = TensorDataset(x, y)
    sampler = DistributedSampler(data, shuffle=True, seed=1)
    loader = DataLoader(data, batch_size=64 // world, sampler=sampler)

    model = DDP(torch.nn.Linear(16, 1).to(device))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for epoch in range(5):
        sampler.set_epoch(epoch)
        total = torch.zeros(2, device=device)
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad()
            loss = loss_fn(model(xb).squeeze(1), yb)
            loss.backward()
            opt.step()
            total += torch.stack([loss.detach(), torch.ones((), device=device)])
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch + 1} loss {(total[0] / total[1]).item():.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
