#!/usr/bin/env python3
"""train_torch.py - PyTorch DDP with the Python module ddp running the job.

    srun --ddp=host -N2 -n4 python3 train_torch.py          # CPU, gloo
    srun --ddp=nccl -N2 --ntasks-per-node=4 --gpus-per-node=4 \\
        python3 train_torch.py                               # GPUs, NCCL
    python3 train_torch.py                                   # one process

PyTorch's process group moves the gradients (DistributedDataParallel);
ddp (libddp) does the rest, as contrib/examples/train.c does in C:

  - rank 0 writes the data set file first (ddp.rank0_first); the other ranks
    then load the same file, or all of them get rank 0's error;
  - each rank reads its share of every step through ddp.Sampler: with a
    global batch of G items and W ranks, rank r takes positions
    k*G/W .. (k+1)*G/W - 1 of its list at step k, so the W ranks of a step
    see exactly the G items one process sees at that step, and the loss
    curve is a single process's up to float rounding;
  - SIGTERM, SIGUSR1 or SIGUSR2 on any rank (scancel, preemption, requeue,
    --signal=USR1@SECONDS) stops every rank after the same step
    (ddp.should_stop); the main rank writes a checkpoint with the position
    in the epoch (ddp.main_only, atomically) and the program exits with 75;
  - run again with SLURM_RESTART_COUNT above 0 (a requeued job) or with
    --resume, it continues from that step and ends with parameters bitwise
    identical to a run that was never stopped (same ranks, same options; the
    checkpoint records both);
  - at the end, every rank's parameters are compared bit for bit.

Exit status: 0 trained to the end, 75 stopped with a checkpoint, 1 an error,
2 a bad command line.

The process group is set up from what ddp knows: the plugin's MASTER_ADDR
and MASTER_PORT when they are set (srun --ddp), else an address and port the
main rank picks and broadcasts (any PMIx launcher).  gloo on CPU; NCCL when
DDP_BACKEND=nccl and a GPU is visible (srun --ddp=nccl binds one per task:
cuda:0).

Not run by this project's tests: PyTorch is absent from its machines.
"""
import argparse
import hashlib
import os
import socket
import sys
import time

import ddp

EXIT_STOPPED = 75       # EX_TEMPFAIL: stopped early, checkpoint saved


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="PyTorch DDP training with ddp: data on rank 0 first, "
                    "the library's sampler, the agreed stop and exact resume")
    p.add_argument("--items", type=int, default=4096)
    p.add_argument("--features", type=int, default=16)
    p.add_argument("--global-batch", type=int, default=64,
                   help="items per step over all ranks (a multiple of them)")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", default="train-torch-data.pt")
    p.add_argument("--checkpoint", default="train-torch-checkpoint.pt")
    p.add_argument("--resume", action="store_true",
                   help="resume from the checkpoint (it must exist)")
    p.add_argument("--throttle", type=float, default=0.0, metavar="SECONDS",
                   help="pause after each step (to try a stop on a short run)")
    a = p.parse_args(argv)
    for name in ("items", "features", "global_batch", "epochs"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if a.global_batch % ddp.world_size():
        p.error(f"--global-batch {a.global_batch} is not a multiple of the "
                f"{ddp.world_size()} ranks")
    return a


def setup_process_group(torch, dist):
    """Join PyTorch's process group (gloo or NCCL); returns the device."""
    use_gpu = os.environ.get("DDP_BACKEND") == "nccl" \
        and torch.cuda.is_available()
    device = torch.device("cuda:0" if use_gpu else "cpu")
    if use_gpu:
        torch.cuda.set_device(0)    # the one GPU srun --ddp=nccl bound here
    if not ddp.is_distributed():
        return device
    addr = os.environ.get("MASTER_ADDR")
    port = os.environ.get("MASTER_PORT")
    if not addr or not port:
        # No plugin variables: the main rank picks a port and tells the
        # others (a failure there reaches every rank as ddp.RemoteError).
        def pick():
            with socket.socket() as s:
                s.bind(("", 0))
                return socket.gethostbyname(socket.gethostname()), \
                    s.getsockname()[1]
        addr, port = ddp.compute_and_broadcast(pick)
    dist.init_process_group(
        backend="nccl" if use_gpu else "gloo",
        init_method=f"tcp://{addr}:{port}",
        rank=ddp.rank(), world_size=ddp.world_size())
    return device


def write_atomically(torch, obj, path):
    """torch.save to path.tmp, fsync, rename: a reader sees the old file
    or the whole new one."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def prepare_data(torch, args):
    """Rank 0 writes the data set once; every rank then loads it."""
    def make():
        if os.path.exists(args.data):
            return
        g = torch.Generator().manual_seed(args.seed)
        x = torch.rand(args.items, args.features, generator=g,
                       dtype=torch.float64).float() * 2 - 1
        w = torch.rand(args.features, generator=g,
                       dtype=torch.float64).float() * 2 - 1
        y = (x @ w > 0).float()
        write_atomically(torch, {"x": x, "y": y}, args.data)

    with ddp.rank0_first():
        if ddp.rank() == 0:
            make()
        data = torch.load(args.data)
    if tuple(data["x"].shape) != (args.items, args.features):
        raise SystemExit(f"{args.data} holds {tuple(data['x'].shape)} items x "
                         f"features, not ({args.items}, {args.features}): "
                         "remove it or change --items/--features")
    return data["x"], data["y"]


def position_key(args):
    """What a checkpoint must match to be resumed from exactly."""
    return {"world_size": ddp.world_size(), "items": args.items,
            "features": args.features, "global_batch": args.global_batch,
            "lr": args.lr, "seed": args.seed}


def load_checkpoint(torch, args):
    """On main: the checkpoint, checked against this run."""
    state = torch.load(args.checkpoint)
    if state["key"] != position_key(args):
        raise ValueError(f"{args.checkpoint} is from another run "
                         f"({state['key']}), not {position_key(args)}")
    return state


def params_digest(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def train(args):
    # cuBLAS needs this to compute deterministically (the GPU's Linear).
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    ddp.stop_signals()          # catch TERM, USR1, USR2 from the start
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    device = setup_process_group(torch, dist)
    x, y = prepare_data(torch, args)
    world, rank = ddp.world_size(), ddp.rank()
    per_rank = args.global_batch // world
    steps = args.items // args.global_batch     # full global batches
    model = torch.nn.Linear(args.features, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    epoch = step = 0
    sum_loss = 0.0
    if args.resume or ddp.restart_count() > 0:
        # Main reads (a missing or foreign checkpoint is an error on every
        # rank); every rank gets the same state.
        state = ddp.broadcast_object(
            ddp.main_only(load_checkpoint, torch, args))
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        epoch, step, sum_loss = state["epoch"], state["step"], \
            state["sum_loss"]
        ddp.log_main(f"resumed at epoch {epoch + 1}, step {step}")
    net = DistributedDataParallel(model) if ddp.is_distributed() else model
    loss_fn = torch.nn.BCEWithLogitsLoss()
    sampler = ddp.Sampler(args.items, shuffle=True, seed=args.seed)

    def save(e, s, total):
        state = {"key": position_key(args), "epoch": e, "step": s,
                 "sum_loss": total, "model": model.state_dict(),
                 "optimizer": opt.state_dict()}
        write_atomically(torch, state, args.checkpoint)

    while epoch < args.epochs:
        sampler.set_epoch(epoch)
        while step < steps:
            idx = torch.tensor(sampler.indices(step * per_rank, per_rank))
            xb, yb = x[idx].to(device), y[idx].to(device)
            opt.zero_grad()
            loss = loss_fn(net(xb).squeeze(1), yb)
            loss.backward()             # DDP averages the gradients
            opt.step()
            # The step's loss over all ranks (ranks have equal shares).
            sum_loss += ddp.all_reduce(loss.item(), "avg")
            step += 1
            if args.throttle > 0:
                time.sleep(args.throttle)
            if ddp.should_stop():       # the same answer on every rank
                ddp.main_only(save, epoch, step, sum_loss)
                ddp.log_main(f"stopped at epoch {epoch + 1}, step {step}: "
                             f"checkpoint {args.checkpoint}")
                return EXIT_STOPPED
        ddp.log_main(f"epoch {epoch + 1} loss {sum_loss / steps:.6f}")
        epoch, step, sum_loss = epoch + 1, 0, 0.0
        ddp.main_only(save, epoch, step, sum_loss)
    digests = ddp.all_gather(params_digest(model))
    if len(set(digests)) != 1:
        raise SystemExit(f"the ranks' parameters differ: {digests}")
    ddp.log_main(f"done: parameters sha256 {digests[0]} on every rank")
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


def main(argv):
    try:
        args = parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    try:
        return train(args)
    except ddp.RemoteError as e:
        ddp.log(f"error: {e}")
        return 1
    except ddp.Error as e:      # a dead or late rank: PeerError, TimeoutError
        ddp.log(f"error: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
