#!/usr/bin/env python3
"""torch-step.py - a DistributedDataParallel training step on
torch.distributed's backend "ddp" (ddp.torch, libddp's host collectives)
against the same step on gloo, in one job, alternated.

    srun --ddp=host -N2 -n4 --ntasks-per-node=2 /usr/bin/python3 \\
        torch-step.py [--models large,small] [--steps N] [--rounds R]
        [--warmup W] [--batch B] [--tsv FILE]

Both process groups live in one job: the world is "ddp"
(ddp.torch.init_process_group("ddp"): torch gets libddp's ranks), and a
gloo group over every rank is made beside it (dist.new_group(backend=
"gloo"), joined through the world's store); --world gloo swaps them (the
world gloo, new_group(backend="ddp") beside: both work).  For each
model, three copies start from the same parameters (one seed) and see the
same batches (a seed per step and rank): one under DDP(process_group=the
ddp group), one under DDP(process_group=the gloo group), and one under
DDP (on gloo's group) with a comm hook that returns its bucket at once
(no communication: the compute alone).  A step is zero_grad, forward, cross-entropy, backward (DDP's
all-reduces of the gradient buckets start during it and are waited for at
its end) and SGD's step (momentum 0.9); the batch is made before the step
is timed.  Each round runs, in turn, --steps timed steps of each copy,
then --steps times the communication alone on each backend: the all-reduce
of buffers of the sizes of DDP's buckets (read from the compute copy's
hook), every bucket started at once (async_op=True) then all waited for,
as DDP would start them if backward took no time.  The order of ddp and
gloo swaps every round (ABBA), so that neither always runs after the
other.  --warmup untimed steps of every copy (and calls of each
communication) come first: DDP rebuilds its buckets after the first step.

Per rank the median and fastest of its timed steps (all rounds); the
table shows the slowest rank's (max over ranks), as the other programs of
contrib/bench.  Per backend:
  step      the median step on that backend;
  compute   the median step with no communication (the hook's copy; the
            same for both backends);
  comm      the median time of the communication alone on that backend;
  exposed   step - compute: what the communication added to the step;
  hidden    (compute + comm - step) / comm: the share of the
            communication that ran behind backward (1: all of it, the
            step took no longer than the compute; 0: none, the step took
            compute + comm; below 0, the step took longer than both one
            after the other; above 1, the step was faster than the
            compute alone: noise).  The three medians come from different
            steps, so on a loaded machine the share moves by the noise of
            each.

Check: after the last round, on every rank, the largest difference
between a parameter of the ddp copy and the same parameter of the gloo
copy (max over ranks) must be at most --rtol times the largest distance a
gloo parameter moved from the start: a backend that reduced nothing, or
the wrong thing, leaves each rank with its own gradients and differs by
about as much as the parameters moved; float reordering differs by a few
ulps.  The communication-alone buffers are not checked (zeros).
--inject-error gives the ddp copy the hook that communicates nothing,
and so must fail the check.

Threads: torch's own (torch.get_num_threads(): OMP_NUM_THREADS as srun
--ddp sets it, one thread per CPU of the task), never changed here.

The TSV (--tsv FILE, rank 0; "-" for stdout): one row per model and
backend: model params grad_bytes buckets ranks nodes threads batch steps
impl step_ms min_ms compute_ms comm_ms exposed_ms hidden max_diff moved
check.  Exit status 0, 1 when the check failed, 2 on a usage error.
"""
import argparse
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch import nn

import ddp
import ddp.torch

PROG = "torch-step"
#: name -> (width, hidden layers): an MLP of `layers` Linear(width, width)
#: + ReLU, then Linear(width, CLASSES).  large: 25.2 M parameters (100.8 MB
#: of float32 gradients); small: 1.06 M (4.2 MB).
PRESETS = {"large": (2048, 6), "small": (512, 4)}
CLASSES = 10


def parse_model(s):
    """"large", "small" or WIDTHxLAYERS -> (name, width, layers)."""
    if s in PRESETS:
        return (s,) + PRESETS[s]
    w, sep, d = s.partition("x")
    if sep and w.isdigit() and d.isdigit() and int(w) > 0 and int(d) > 0:
        return (s, int(w), int(d))
    raise argparse.ArgumentTypeError(
        f"bad model '{s}': large, small or WIDTHxLAYERS (e.g. 256x2)")


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog=PROG, description="DDP training step, backend ddp against "
        "gloo in one job, alternated")
    p.add_argument("-m", "--models", default="large,small",
                   help="comma-separated: large (25 M parameters), small "
                   "(1 M) or WIDTHxLAYERS (default large,small)")
    p.add_argument("-n", "--steps", type=int, default=5,
                   help="timed steps of each copy per round (5)")
    p.add_argument("-r", "--rounds", type=int, default=3,
                   help="rounds (3)")
    p.add_argument("-w", "--warmup", type=int, default=2,
                   help="untimed steps of each copy first (2)")
    p.add_argument("-b", "--batch", type=int, default=32,
                   help="samples per rank and step (32)")
    p.add_argument("--bucket-mb", type=float, default=25.0,
                   help="DDP's bucket_cap_mb (25, torch's default)")
    p.add_argument("--lr", type=float, default=0.01, help="SGD's (0.01)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--world", choices=("ddp", "gloo"), default="ddp",
                   help="the backend of the default group (init_process_"
                   "group); the other is a new_group of every rank (ddp)")
    p.add_argument("--rtol", type=float, default=1e-3,
                   help="the check's bound: max |ddp - gloo| over the "
                   "largest move of a parameter (1e-3)")
    p.add_argument("-t", "--tsv", help="also write the rows to FILE "
                   "(rank 0; - for stdout, then no table)")
    p.add_argument("-q", "--quiet", action="store_true", help="no table")
    p.add_argument("-X", "--inject-error", action="store_true",
                   help="the ddp copy communicates nothing (the compute "
                   "copy's hook): the check must fail (a test of it)")
    o = p.parse_args(argv)
    try:
        o.models = [parse_model(s) for s in o.models.split(",") if s]
    except argparse.ArgumentTypeError as e:
        p.error(str(e))
    if not o.models:
        p.error("no model")
    if o.steps < 1 or o.rounds < 1 or o.warmup < 0 or o.batch < 1:
        p.error("--steps, --rounds and --batch must be at least 1, "
                "--warmup at least 0")
    return o


def make_model(width, layers, seed):
    """The MLP, its parameters drawn from seed: every copy the same."""
    torch.manual_seed(seed)
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(width, width), nn.ReLU()]
    mods.append(nn.Linear(width, CLASSES))
    return nn.Sequential(*mods)


def batch(o, width, step, rank):
    """The batch of step `step` on rank `rank`: the same for every copy."""
    g = torch.Generator().manual_seed(o.seed * 1000003 + step * 4099 + rank)
    return (torch.randn(o.batch, width, generator=g),
            torch.randint(0, CLASSES, (o.batch,), generator=g))


class Copy:
    """One copy of the model under DDP on process group pg (hook: a comm
    hook, e.g. the no-communication one), its optimizer and step count."""

    def __init__(self, o, width, layers, pg, hook=None, state=None):
        self.o, self.width = o, width
        self.net = nn.parallel.DistributedDataParallel(
            make_model(width, layers, o.seed), process_group=pg,
            bucket_cap_mb=o.bucket_mb)
        if hook is not None:
            self.net.register_comm_hook(state, hook)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=o.lr,
                                   momentum=0.9)
        self.loss = nn.CrossEntropyLoss()
        self.step_no = 0
        self.times = []

    def step(self, rank, timed=True):
        x, y = batch(self.o, self.width, self.step_no, rank)
        t0 = time.perf_counter()
        self.opt.zero_grad()
        self.loss(self.net(x), y).backward()
        self.opt.step()
        t = time.perf_counter() - t0
        self.step_no += 1
        if timed:
            self.times.append(t)

    def params(self):
        return [p.detach() for p in self.net.parameters()]


def no_comm_hook(sizes, bucket):
    """The comm hook that communicates nothing: the bucket as it is, at
    once.  Keeps the buckets' sizes in its state, sizes (index ->
    (elements, dtype)), for Comm."""
    buf = bucket.buffer()
    if bucket.index() == 0:     # a step's first (DDP's reducer: in order)
        sizes.clear()           # the buckets rebuilt after the first step
    sizes[bucket.index()] = (buf.numel(), buf.dtype)
    fut = torch.futures.Future()
    fut.set_result(buf)
    return fut


class Comm:
    """The communication alone: buffers of DDP's bucket sizes, all
    all-reduced at once on pg (async_op=True), then waited for."""

    def __init__(self, sizes, pg):
        self.bufs = [torch.zeros(n, dtype=dt) for _, (n, dt) in
                     sorted(sizes.items())]
        self.pg = pg
        self.times = []

    def call(self, timed=True):
        t0 = time.perf_counter()
        works = [dist.all_reduce(b, group=self.pg, async_op=True)
                 for b in self.bufs]
        for w in works:
            w.wait()
        t = time.perf_counter() - t0
        if timed:
            self.times.append(t)


def slowest(values, gloo, op=dist.ReduceOp.MAX):
    """values (floats) reduced over the ranks with op on the gloo group."""
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t, op=op, group=gloo)
    return t.tolist()


def run_model(o, name, width, layers, groups, gloo, rank):
    """Every round of one model; returns its rows (rank 0's are the
    table's) and whether the check passed."""
    pg = dict(groups)
    sizes = {}
    # --inject-error: the ddp copy's gradients are never reduced.
    broken = dict(hook=no_comm_hook, state={}) if o.inject_error else {}
    copies = {"ddp": Copy(o, width, layers, pg["ddp"], **broken),
              "gloo": Copy(o, width, layers, pg["gloo"]),
              "compute": Copy(o, width, layers, gloo, hook=no_comm_hook,
                              state=sizes)}
    start = [p.clone() for p in copies["gloo"].params()]
    nparams = sum(p.numel() for p in start)
    grad_bytes = sum(p.numel() * p.element_size() for p in start)
    for c in copies.values():
        for _ in range(max(o.warmup, 1) if c is copies["compute"]
                       else o.warmup):
            c.step(rank, timed=False)
    # The compute copy has run a step at least: its hook saw the buckets
    # (those of the last step: DDP rebuilds them after the first).
    comms = {b: Comm(sizes, pg[b]) for b in pg}
    for c in comms.values():
        for _ in range(o.warmup):
            c.call(timed=False)
    for r in range(o.rounds):
        order = ["ddp", "gloo"] if r % 2 == 0 else ["gloo", "ddp"]
        for what in order + ["compute"]:
            dist.barrier(group=gloo)
            for _ in range(o.steps):
                copies[what].step(rank)
        for b in order:
            dist.barrier(group=gloo)
            for _ in range(o.steps):
                comms[b].call()
    # The check: ddp's parameters against gloo's, and how far gloo's moved.
    diff = max((a - b).abs().max().item() for a, b in
               zip(copies["ddp"].params(), copies["gloo"].params()))
    moved = max((a - b).abs().max().item() for a, b in
                zip(copies["gloo"].params(), start))
    diff, moved = slowest([diff, moved], gloo)
    ok = moved > 0 and diff <= o.rtol * moved
    # The slowest rank's medians and fastest steps.
    med = {k: statistics.median(c.times) for k, c in copies.items()}
    low = {k: min(c.times) for k, c in copies.items()}
    cmed = {b: statistics.median(c.times) for b, c in comms.items()}
    keys = ["ddp", "gloo", "compute"]
    vals = slowest([med[k] for k in keys] + [low[k] for k in keys]
                   + [cmed[b] for b in pg], gloo)
    med = dict(zip(keys, vals[0:3]))
    low = dict(zip(keys, vals[3:6]))
    cmed = dict(zip(list(pg), vals[6:]))
    rows = []
    for b in pg:
        step, compute, comm = med[b], med["compute"], cmed[b]
        hidden = (compute + comm - step) / comm if comm > 0 else float("nan")
        rows.append(dict(
            model=name, params=nparams, grad_bytes=grad_bytes,
            buckets=len(sizes), ranks=dist.get_world_size(),
            nodes=ddp.num_nodes(), threads=torch.get_num_threads(),
            batch=o.batch, steps=o.steps * o.rounds, impl=b,
            step_ms=step * 1e3, min_ms=low[b] * 1e3,
            compute_ms=compute * 1e3, comm_ms=comm * 1e3,
            exposed_ms=(step - compute) * 1e3, hidden=hidden,
            max_diff=diff, moved=moved, check="ok" if ok else "FAIL"))
    return rows, ok


COLUMNS = ("model", "params", "grad_bytes", "buckets", "ranks", "nodes",
           "threads", "batch", "steps", "impl", "step_ms", "min_ms",
           "compute_ms", "comm_ms", "exposed_ms", "hidden", "max_diff",
           "moved", "check")


def tsv_value(v):
    if isinstance(v, float):
        return f"{v:.6g}" if abs(v) < 1e-2 and v != 0 else f"{v:.3f}"
    return str(v)


def table(rows, o, out):
    r0 = rows[0]
    print(f"{PROG}: {r0['ranks']} ranks on {r0['nodes']} nodes, torch "
          f"{torch.__version__}, {r0['threads']} compute thread(s) a rank, "
          f"batch {o.batch} a rank, {o.steps} steps x {o.rounds} rounds "
          f"after {o.warmup} warm-up, world {o.world}; the slowest rank's "
          f"median, ms",
          file=out)
    print(f"{'model':>8} {'params':>8} {'grad MB':>8} {'bkts':>4} "
          f"{'impl':>5} {'step':>9} {'min':>9} {'compute':>9} {'comm':>9} "
          f"{'exposed':>9} {'hidden':>7} {'x ddp':>6}  check", file=out)
    by = {(r["model"], r["impl"]): r for r in rows}
    for r in rows:
        d = by.get((r["model"], "ddp"))
        ratio = r["step_ms"] / d["step_ms"] if d and d["step_ms"] else 0
        print(f"{r['model']:>8} {r['params'] / 1e6:>7.2f}M "
              f"{r['grad_bytes'] / 1e6:>8.1f} {r['buckets']:>4} "
              f"{r['impl']:>5} {r['step_ms']:>9.2f} {r['min_ms']:>9.2f} "
              f"{r['compute_ms']:>9.2f} {r['comm_ms']:>9.2f} "
              f"{r['exposed_ms']:>9.2f} {r['hidden']:>7.2f} {ratio:>6.2f}  "
              f"{r['check']} (max |ddp-gloo| {r['max_diff']:.2g}, "
              f"moved {r['moved']:.2g})", file=out)


def main(argv):
    o = parse_args(argv)
    ddp.torch.init_process_group(o.world)
    other = dist.new_group(backend="gloo" if o.world == "ddp" else "ddp")
    if o.world == "ddp":
        groups = [("ddp", dist.group.WORLD), ("gloo", other)]
    else:
        groups = [("ddp", other), ("gloo", dist.group.WORLD)]
    gloo = dict(groups)["gloo"]
    rank = dist.get_rank()
    rows, bad = [], 0
    for name, width, layers in o.models:
        r, ok = run_model(o, name, width, layers, groups, gloo, rank)
        rows += r
        bad += not ok
    if rank == 0:
        to_stdout = o.tsv == "-"
        if not o.quiet and not to_stdout:
            table(rows, o, sys.stdout)
            sys.stdout.flush()
        if o.tsv:
            f = sys.stdout if to_stdout else open(o.tsv, "w")
            f.write("\t".join(COLUMNS) + "\n")
            for r in rows:
                f.write("\t".join(tsv_value(r[c]) for c in COLUMNS) + "\n")
            if f is not sys.stdout:
                f.close()
    dist.barrier(group=gloo)
    dist.destroy_process_group()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
