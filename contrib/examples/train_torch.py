#!/usr/bin/env python3
"""train_torch.py - PyTorch DDP with the Python module ddp running the job.

    srun --ddp=host -N2 --ntasks-per-node=2 python3 train_torch.py  # CPU, gloo
    srun --ddp=nccl -N2 --ntasks-per-node=4 --gpus-per-node=4 \\
        python3 train_torch.py                                      # GPUs, NCCL
    ddp-run -n 4 -b host python3 train_torch.py                     # one machine
    python3 train_torch.py                                          # one process

PyTorch's process group moves the gradients (DistributedDataParallel);
ddp (libddp) does the rest, as contrib/examples/train.c does in C:

  - the main rank writes the data set file (ddp.run_on_main); every rank
    then loads it; a failure on main is an error on every rank, not a hang;
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
  - at the end, every rank's parameters are compared bit for bit and their
    sha256 logged.

Exit status: 0 trained to the end, 75 stopped with a checkpoint, 1 an error,
2 a bad command line.

The process group is set up by ddp.torch.init_process_group(): rank, world
size and the store come from libddp, no port or environment is needed
(srun --ddp, ddp-run, any PMIx launcher).  --init env sets it up the usual
way instead, from the plugin's MASTER_ADDR and MASTER_PORT when they are
set, else an address and port the main rank picks and broadcasts (the
suite checks that both give the same parameters).  gloo on CPU;
NCCL when DDP_BACKEND=nccl and a GPU is visible (srun --ddp=nccl binds one
per task: cuda:0).  One CPU thread per rank (torch.set_num_threads(1)): the
model is tiny, and ranks sharing a node must not fight over its cores.

tests/t0730-python-torch.t runs it on the test cluster with Debian's
python3-torch (CPU, gloo): 4 ranks on 2 nodes against one process (the same
losses within float rounding), stopped by scancel --signal=USR1 and resumed
to bitwise the parameters of a run never stopped, and under ddp-run.
"""
import argparse
import hashlib
import os
import signal
import socket
import sys
import time

import ddp

EXIT_STOPPED = 75       # EX_TEMPFAIL: stopped early, checkpoint saved


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="PyTorch DDP training with ddp: data prepared on main, "
                    "the library's sampler, the agreed stop and exact resume")
    p.add_argument("--items", type=int, default=1024)
    p.add_argument("--features", type=int, default=16)
    p.add_argument("--hidden", type=int, default=8,
                   help="units of the hidden layer")
    p.add_argument("--global-batch", type=int, default=64,
                   help="items per step over all ranks (a multiple of them)")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--init", choices=("ddp", "env"), default="ddp",
                   help="how torch.distributed starts: ddp.torch (the "
                   "default) or init_method tcp:// from MASTER_ADDR/PORT")
    p.add_argument("--data", default="train-torch-data.pt")
    p.add_argument("--checkpoint", default="train-torch-checkpoint.pt")
    p.add_argument("--resume", action="store_true",
                   help="resume from the checkpoint (it must exist)")
    p.add_argument("--loss-log", metavar="FILE",
                   help="the main rank appends 'EPOCH STEP LOSS' for every "
                        "step (the loss exactly, as Python's repr)")
    p.add_argument("--throttle", type=float, default=0.0, metavar="SECONDS",
                   help="pause after each step (to try a stop on a short run)")
    a = p.parse_args(argv)
    for name in ("items", "features", "hidden", "global_batch", "epochs"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if a.global_batch % ddp.world_size():
        p.error(f"--global-batch {a.global_batch} is not a multiple of the "
                f"{ddp.world_size()} ranks")
    if a.items < a.global_batch:
        p.error(f"--items {a.items} is less than one global batch "
                f"({a.global_batch})")
    return a


def setup_process_group(torch, dist, how):
    """Join PyTorch's process group (gloo or NCCL) as how says ("ddp" or
    "env"); returns the device."""
    use_gpu = os.environ.get("DDP_BACKEND") == "nccl" \
        and torch.cuda.is_available()
    device = torch.device("cuda:0" if use_gpu else "cpu")
    if use_gpu:
        torch.cuda.set_device(0)    # the one GPU srun --ddp=nccl bound here
    if not ddp.is_distributed():
        return device
    if how == "ddp":
        import ddp.torch as ddp_torch
        ddp_torch.init_process_group("nccl" if use_gpu else "gloo")
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
    """torch.save to path.tmp.PID, fsync, rename: a reader sees the old
    file or the whole new one."""
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def prepare_data(torch, args):
    """The main rank writes the data set once (run_on_main: the others wait
    for it, and get its error if it fails); then every rank loads it."""
    def make():
        if os.path.exists(args.data):
            return
        g = torch.Generator().manual_seed(args.seed)
        # Labels from a random plane, 10% of them flipped: a loss that
        # falls for a while and never reaches 0.
        x = torch.rand(args.items, args.features, generator=g,
                       dtype=torch.float64).float() * 2 - 1
        w = torch.rand(args.features, generator=g,
                       dtype=torch.float64).float() * 2 - 1
        y = (x @ w > 0).float()
        flip = torch.rand(args.items, generator=g, dtype=torch.float64) < 0.1
        y[flip] = 1 - y[flip]
        write_atomically(torch, {"x": x, "y": y}, args.data)

    ddp.run_on_main(make)
    data = torch.load(args.data)
    if tuple(data["x"].shape) != (args.items, args.features):
        raise ValueError(f"{args.data} holds {tuple(data['x'].shape)} items x "
                         f"features, not ({args.items}, {args.features}): "
                         "remove it or change --items/--features")
    return data["x"], data["y"]


def position_key(args):
    """What a checkpoint must match to be resumed from exactly."""
    return {"world_size": ddp.world_size(), "items": args.items,
            "features": args.features, "hidden": args.hidden,
            "global_batch": args.global_batch, "lr": args.lr,
            "seed": args.seed}


def load_checkpoint(torch, args):
    """On main: the checkpoint, checked against this run."""
    state = torch.load(args.checkpoint)
    if state.get("key") != position_key(args):
        raise ValueError(f"{args.checkpoint} is from another run "
                         f"({state.get('key')}), not {position_key(args)}: "
                         "resume with the same ranks and options")
    return state


def params_digest(model):
    """sha256 of the parameters' bytes, in the model's order."""
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def train(args):
    # cuBLAS needs this to compute deterministically (the GPU's matmuls).
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    # Catch TERM, USR1, USR2 from the start: importing torch takes seconds,
    # and a stop signal must not kill a rank meanwhile.
    ddp.stop_signals()
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    device = setup_process_group(torch, dist, args.init)
    x, y = prepare_data(torch, args)
    world = ddp.world_size()
    per_rank = args.global_batch // world
    steps = args.items // args.global_batch     # full global batches
    model = torch.nn.Sequential(
        torch.nn.Linear(args.features, args.hidden), torch.nn.Tanh(),
        torch.nn.Linear(args.hidden, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    epoch = step = 0
    sum_loss = 0.0
    if args.resume or ddp.restart_count() > 0:
        # Main reads and checks the checkpoint, every rank gets it (a
        # missing or foreign one is an error on every rank).
        state = ddp.compute_and_broadcast(
            lambda: load_checkpoint(torch, args))
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        epoch, step, sum_loss = state["epoch"], state["step"], \
            state["sum_loss"]
        ddp.log_main(f"resuming epoch {epoch + 1} after step {step} from "
                     f"{args.checkpoint} (restart {ddp.restart_count()})")
    net = model
    if ddp.is_distributed():
        net = DistributedDataParallel(model)
        # DDP lays its gradient buckets out again after the first backward,
        # in the order the gradients came; that moves each gradient within
        # the buffer it all-reduces, and so changes the rounding of its sum.
        # One backward without a step settles the layout in every run, so
        # that a resumed run sums every step as a run never stopped does
        # (else its first step differs in the last bits).
        net(x[:per_rank].to(device)).sum().backward()
        opt.zero_grad()
    loss_fn = torch.nn.BCEWithLogitsLoss()
    sampler = ddp.Sampler(args.items, shuffle=True, seed=args.seed)
    log = open(args.loss_log, "a") if args.loss_log and ddp.is_main() \
        else None
    ddp.log_main(f"training on {world} ranks, {ddp.num_nodes()} nodes: "
                 f"{steps} steps of {args.global_batch} items an epoch, "
                 f"{per_rank} a rank")

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
            step_loss = ddp.all_reduce(loss.item(), "avg")
            sum_loss += step_loss
            step += 1
            if log:
                log.write(f"{epoch + 1} {step} {step_loss!r}\n")
                log.flush()
            if args.throttle > 0:
                time.sleep(args.throttle)
            if ddp.should_stop():       # the same answer on every rank
                ddp.log(f"stopping in epoch {epoch + 1} after step {step} "
                        f"of {steps}")
                ddp.main_only(save, epoch, step, sum_loss)
                ddp.log_main(f"checkpoint of epoch {epoch + 1} step {step} "
                             f"written to {args.checkpoint}; exit "
                             f"{EXIT_STOPPED}")
                # From the agreed stop on, libddp lets no stop signal end
                # the process (Slurm's SIGTERM to the ranks still here when
                # the first exits 75): ddp_should_stop(3).
                if dist.is_initialized():
                    dist.destroy_process_group()
                return EXIT_STOPPED
        ddp.log_main(f"epoch {epoch + 1} loss {sum_loss / steps!r}")
        epoch, step, sum_loss = epoch + 1, 0, 0.0
        ddp.main_only(save, epoch, step, sum_loss)
    digest = params_digest(model)
    digests = ddp.all_gather(digest)
    ddp.log(f"parameters sha256 {digest}")
    if len(set(digests)) != 1:
        raise RuntimeError(f"the ranks' parameters differ: {digests}")
    ddp.log_main(f"parameters identical on all {world} ranks")
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
    except ddp.Error as e:  # RemoteError, a dead or late rank: PeerError...
        ddp.log(f"error: {e}")
        return 1
    except (OSError, ValueError, RuntimeError) as e:
        ddp.log(f"error: {type(e).__name__}: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
