"""torch.distributed's backend "ddp" (ddp._c10d) under a libddp launcher.

    python3 torch_backend.py MODE [ARGS]

Modes (every rank runs the same; each prints "rank R/N: MODE ok ..." when
all its checks passed, and "FAIL: ..." lines otherwise, exiting 1):
  ops       every collective on every dtype and ReduceOp, against the
            result computed here and gloo's (a gloo group of the same
            ranks); the ops libddp lacks raise naming the op.
  train     DistributedDataParallel on "ddp" and on gloo, same model, same
            data: parameters equal within float tolerance after the steps;
            a line with each one's mean step time.
  subgroup  (4 ranks) two groups of two, a DDP on each, as on gloo's.
  local     (4 ranks) new_group(use_local_synchronization=True): ranks 0
            and 1 make theirs while 2 and 3 make no call of torch or
            libddp (they wait for a file 0 writes once its group has
            trained), then 2 and 3 make theirs; a DDP on each equals one
            on gloo; the same ranks again; every rank so; a member that
            never comes (timeout 3 s): the other raises naming it; when
            it comes late it is told at once that the creation was
            abandoned, and the group made again by both works.  Where new_group
            has no use_local_synchronization (torch 1.13): "rank R/N:
            local unavailable: <why>", exit 0.
  fsdp      FullyShardedDataParallel (CPU, one unit a layer, with and
            without use_orig_params) on "ddp" and on gloo, and DDP on
            gloo: the same parameters after the steps.  Where torch
            cannot import torch.distributed.fsdp (1.13 on Python 3.11):
            "rank R/N: fsdp unavailable: <why>", exit 0.
  mesh      (an even number of ranks) init_device_mesh("cpu", (2, N/2))
            on "ddp": each dimension's groups are "ddp" groups of the
            mesh's ranks, an all_reduce on each sums its own ranks, and a
            DDP on the "dp" dimension equals one on gloo.  Where torch has
            no init_device_mesh (1.13): "rank R/N: mesh unavailable:
            <why>", exit 0.
  destroy   destroy_process_group ends the completer thread of the group
            it destroys (of every group, without one); a destroyed group's
            next call raises.
  kill K    rank K dies (os._exit) in the middle of step 3's backward; the
            others print "rank R: <Exception> after S s: <message>".
  raise K   rank K raises ValueError at step 3; the others as for kill.
"""

import datetime
import importlib
import inspect
import os
import sys
import threading
import time

import torch
import torch.distributed as dist
import torch.nn as nn

import ddp
import ddp.torch

FAILS = []


def fail(msg):
    FAILS.append(msg)
    print(f"FAIL: rank {ddp.rank()}: {msg}", flush=True)


def done(mode, extra=""):
    if FAILS:
        sys.exit(1)
    print(f"rank {ddp.rank()}/{ddp.world_size()}: {mode} ok{extra}",
          flush=True)


def init():
    ddp.torch.init_process_group("ddp",
                                 timeout=datetime.timedelta(seconds=60))
    if dist.get_backend() != "ddp":
        fail(f"the backend is {dist.get_backend()!r}, not 'ddp'")


# ---- ops -------------------------------------------------------------------

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
          torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64,
          torch.bool, torch.complex64]
OPS = ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "AVG"]
# What gloo (torch 1.13) reduces, to compare with: float and int dtypes
# but not float16/bfloat16 products, no AVG, bitwise only on integers.


def value(rank, dtype, n=5):
    """Rank rank's input: small values so that sums and products of 4
    ranks are exact in every dtype (bool: a mix)."""
    base = torch.arange(n) % 3 + 1 + (rank % 2)
    if dtype == torch.bool:
        return (torch.arange(n) + rank) % 3 == 0
    if dtype.is_complex:
        return torch.complex(base.double(), -base.double()).to(dtype)
    if dtype in (torch.int8, torch.uint8, torch.int16, torch.int32,
                 torch.int64):
        return (base + rank).to(dtype)
    return (base + 0.5 * rank).to(dtype)


def expected(dtype, op, n, size):
    vals = [value(r, dtype, n) for r in range(size)]
    if dtype == torch.bool:
        ints = [v.to(torch.uint8) for v in vals]
        anyv = torch.stack(ints).max(0).values.bool()
        allv = torch.stack(ints).min(0).values.bool()
        return {"SUM": anyv, "MAX": anyv, "BOR": anyv, "PRODUCT": allv,
                "MIN": allv, "BAND": allv}[op]
    wide = [v.to(torch.complex128 if dtype.is_complex else
                 torch.float64 if dtype.is_floating_point else torch.int64)
            for v in vals]
    acc = wide[0].clone()
    for v in wide[1:]:
        if op == "SUM" or op == "AVG":
            acc = acc + v
        elif op == "PRODUCT":
            acc = acc * v
        elif op == "MIN":
            acc = torch.minimum(acc, v)
        elif op == "MAX":
            acc = torch.maximum(acc, v)
        elif op == "BAND":
            acc = acc & v
        elif op == "BOR":
            acc = acc | v
        elif op == "BXOR":
            acc = acc ^ v
    if op == "AVG":
        acc = acc / size if dtype.is_floating_point or dtype.is_complex \
            else torch.div(acc, size, rounding_mode="trunc")
    return acc.to(dtype)


def close(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return torch.allclose(a.to(torch.complex128 if a.is_complex()
                                   else torch.float64),
                              b.to(torch.complex128 if b.is_complex()
                                   else torch.float64), rtol=1e-2)
    return torch.equal(a, b)


def supported(dtype, op):
    """Does the ddp backend do op on dtype (else it must raise)?"""
    if dtype == torch.bool:
        return op in ("SUM", "MAX", "BOR", "PRODUCT", "MIN", "BAND")
    if dtype.is_complex:
        return op in ("SUM", "AVG")
    if op in ("BAND", "BOR", "BXOR"):
        return not dtype.is_floating_point
    return True


def gloo_does(dtype, op):
    if op == "AVG" or op in ("BAND", "BOR", "BXOR") and \
            dtype.is_floating_point:
        return False
    return dtype in (torch.float32, torch.float64, torch.float16, torch.int8,
                     torch.uint8, torch.int32, torch.int64)


def check_raises(what, fn, words):
    try:
        fn()
    except Exception as e:      # noqa: BLE001 - the message is checked
        if not all(w in str(e) for w in words):
            fail(f"{what}: raised {type(e).__name__}: {e}; wanted {words}")
        return
    fail(f"{what}: did not raise")


def ops_allreduce(gloo, counts):
    size = dist.get_world_size()
    me = dist.get_rank()
    for dtype in DTYPES:
        for opname in OPS:
            op = getattr(dist.ReduceOp, opname)
            what = f"all_reduce {opname} {dtype}"
            t = value(me, dtype)
            if not supported(dtype, opname):
                # torch refuses complex but for SUM before the backend
                words = ["complex"] if dtype.is_complex else \
                    ["ddp backend", opname]
                check_raises(what, lambda: dist.all_reduce(t, op), words)
                continue
            dist.all_reduce(t, op)
            want = expected(dtype, opname, t.numel(), size)
            counts[0] += 1
            if not close(t, want):
                fail(f"{what}: {t.tolist()} != {want.tolist()}")
            if gloo_does(dtype, opname):
                g = value(me, dtype)
                dist.all_reduce(g, op, group=gloo)
                counts[1] += 1
                if not close(t, g):
                    fail(f"{what}: ddp {t.tolist()} != gloo {g.tolist()}")
    # strided, async, 0-dim, coalesced
    m = torch.arange(12.).reshape(3, 4).t() * (me + 1)
    dist.all_reduce(m)
    want = torch.arange(12.).reshape(3, 4).t() * sum(range(1, size + 1))
    counts[0] += 1
    if not torch.equal(m, want):
        fail(f"strided all_reduce: {m} != {want}")
    works = [dist.all_reduce(torch.full((1000,), float(me)), async_op=True)
             for _ in range(5)]
    for w in works:
        w.wait()
    s = torch.tensor(float(me))
    dist.all_reduce(s)
    counts[0] += 1
    if s.item() != sum(range(size)):
        fail(f"0-dim all_reduce: {s.item()}")
    ts = [torch.full((3,), float(me)), torch.full((2, 2), 2. * me)]
    dist.all_reduce_coalesced(ts)
    counts[0] += 1
    if ts[0].tolist() != [sum(range(size))] * 3 or \
            ts[1].flatten().tolist() != [2. * sum(range(size))] * 4:
        fail(f"all_reduce_coalesced: {ts}")


def ops_moves(gloo, counts):
    size = dist.get_world_size()
    me = dist.get_rank()
    for dtype in DTYPES:
        vals = [value(r, dtype) for r in range(size)]
        for root in {0, size - 1}:
            t = value(me, dtype)
            dist.broadcast(t, root)
            counts[0] += 1
            if not torch.equal(t, vals[root]):
                fail(f"broadcast {dtype} from {root}: {t} != {vals[root]}")
        outs = [torch.zeros_like(vals[0]) for _ in range(size)]
        dist.all_gather(outs, value(me, dtype))
        counts[0] += 1
        if not all(torch.equal(o, v) for o, v in zip(outs, vals)):
            fail(f"all_gather {dtype}: {outs}")
        out = torch.zeros((size * 5,), dtype=dtype)
        dist.all_gather_into_tensor(out, value(me, dtype)) \
            if hasattr(dist, "all_gather_into_tensor") \
            else dist._all_gather_base(out, value(me, dtype))
        counts[0] += 1
        if not torch.equal(out, torch.cat(vals)):
            fail(f"all_gather_into_tensor {dtype}: {out}")
        root = size - 1
        outs = [torch.zeros_like(vals[0]) for _ in range(size)]
        dist.gather(value(me, dtype), outs if me == root else None, root)
        counts[0] += 1
        if me == root and not all(torch.equal(o, v)
                                  for o, v in zip(outs, vals)):
            fail(f"gather {dtype}: {outs}")
        got = torch.zeros_like(vals[0])
        parts = [value(r, dtype) for r in range(size)]
        dist.scatter(got, parts if me == 0 else None, 0)
        counts[0] += 1
        if not torch.equal(got, vals[me]):
            fail(f"scatter {dtype}: {got} != {vals[me]}")


def ops_reductions(gloo, counts):
    size = dist.get_world_size()
    me = dist.get_rank()
    for dtype in DTYPES:
        for opname in ("SUM", "MAX", "MIN", "PRODUCT"):
            if not supported(dtype, opname):
                continue
            op = getattr(dist.ReduceOp, opname)
            n = 2 * size
            full = expected(dtype, opname, n, size)
            t = value(me, dtype, n)
            dist.reduce(t, size - 1, op)
            counts[0] += 1
            if me == size - 1 and not close(t, full):
                fail(f"reduce {opname} {dtype}: {t} != {full}")
            out = torch.zeros((2,), dtype=dtype)
            x = value(me, dtype, n)
            keep = x.clone()
            fn = getattr(dist, "reduce_scatter_tensor", None) or \
                dist._reduce_scatter_base
            fn(out, x, op)
            counts[0] += 1
            if not close(out, full[2 * me:2 * me + 2]):
                fail(f"reduce_scatter_tensor {opname} {dtype}: {out} != "
                     f"{full[2 * me:2 * me + 2]}")
            if not torch.equal(x, keep):
                fail(f"reduce_scatter_tensor {opname} {dtype} wrote its "
                     f"input")
            out = torch.zeros((2,), dtype=dtype)
            dist.reduce_scatter(out, list(value(me, dtype, n).split(2)), op)
            counts[0] += 1
            if not close(out, full[2 * me:2 * me + 2]):
                fail(f"reduce_scatter {opname} {dtype}: {out}")


def ops(args):
    init()
    gloo = dist.new_group(backend="gloo")
    counts = [0, 0]
    ops_allreduce(gloo, counts)
    ops_moves(gloo, counts)
    ops_reductions(gloo, counts)
    dist.barrier()
    t = torch.zeros(4)
    check_raises("all_to_all_single", lambda: dist.all_to_all_single(
        torch.zeros(4 * dist.get_world_size()),
        torch.zeros(4 * dist.get_world_size())), ["ddp backend",
                                                  "all_to_all_single"])
    if dist.get_world_size() > 1:   # torch 2 refuses a send to itself
        check_raises("send", lambda: dist.send(t, (dist.get_rank() + 1) %
                                               dist.get_world_size()),
                     ["ddp backend", "send"])
    check_raises("all_reduce PREMUL_SUM" if hasattr(dist.ReduceOp,
                                                    "PREMUL_SUM") else
                 "all_reduce of a CUDA-less meta tensor",
                 lambda: dist.all_reduce(torch.zeros(2, device="meta")),
                 ["ddp backend"])
    dist.barrier()
    # Last (libddp's group may stay broken): ranks that pass different
    # sizes all raise ddp.Error from the Python API's wait().
    if dist.get_world_size() > 1:
        check_raises("all_reduce of different sizes",
                     lambda: dist.all_reduce(torch.ones(4 + dist.get_rank())),
                     ["ddp backend: allreduce of", "disagree"])
    done("ops", f", {counts[0]} results checked, {counts[1]} against gloo")


# ---- DDP training ----------------------------------------------------------

def model(seed=0, width=64):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(32, width), nn.ReLU(),
                         nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, 4))


def batch(step, rank):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(16, 32, generator=g), torch.randn(16, 4, generator=g)


def train(pg, steps, width=64, on_step=None, hook=None):
    """DDP on process group pg (with comm hook hook, e.g. torch's
    fp16_compress_hook); returns (parameters, mean step seconds)."""
    net = nn.parallel.DistributedDataParallel(
        model(0, width), process_group=pg, bucket_cap_mb=1)
    if hook is not None:
        net.register_comm_hook(pg, hook)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    rank = dist.get_rank()
    times = []
    for step in range(steps):
        t0 = time.perf_counter()
        if on_step:
            on_step(step)
        x, y = batch(step, rank)
        opt.zero_grad()
        loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    return [p.detach().clone() for p in net.parameters()], \
        sum(times[1:]) / max(1, len(times) - 1)


def compare(a, b, what):
    worst = max((x - y).abs().max().item() for x, y in zip(a, b))
    if worst > 1e-5:
        fail(f"{what}: parameters differ by {worst:g}")
    return worst


def train_mode(args):
    init()
    steps = int(args[0]) if args else 20
    width = int(args[1]) if len(args) > 1 else 64
    gloo = dist.new_group(backend="gloo")
    p_ddp, t_ddp = train(None, steps, width)
    p_gloo, t_gloo = train(gloo, steps, width)
    worst = compare(p_ddp, p_gloo, "ddp against gloo")
    # a comm hook of torch's: the work's future holds the output tensors
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    hook = default_hooks.fp16_compress_hook
    h_ddp, _ = train(None, 5, width, hook=hook)
    h_gloo, _ = train(gloo, 5, width, hook=hook)
    hworst = compare(h_ddp, h_gloo, "fp16_compress_hook: ddp against gloo")
    done("train", f", {steps} steps, max |ddp - gloo| {worst:.3g} "
         f"(fp16_compress_hook {hworst:.3g}), step ddp {t_ddp * 1e3:.2f} ms "
         f"gloo {t_gloo * 1e3:.2f} ms")


def subgroup(args):
    init()
    size, me = dist.get_world_size(), dist.get_rank()
    if size != 4:
        fail(f"subgroup wants 4 ranks, not {size}")
        sys.exit(1)
    halves = [[0, 1], [2, 3]]
    mine = [dist.new_group(h) for h in halves][me // 2]
    gloo = [dist.new_group(h, backend="gloo") for h in halves][me // 2]
    p_ddp, _ = train(mine, 10)
    p_gloo, _ = train(gloo, 10)
    worst = compare(p_ddp, p_gloo, "subgroup ddp against gloo")
    other = train(mine, 1)[0]
    peer = [torch.zeros_like(other[0]) for _ in range(size)]
    dist.all_gather(peer, other[0])
    if torch.equal(peer[0], peer[2]):
        fail("the two groups trained the same model: data crossed groups")
    # collectives of the Python API on a group, and on one that only
    # some ranks use (ranks 1 and 3; 0 and 2 make it, then skip it)
    t = torch.tensor([float(me)])
    dist.all_reduce(t, group=mine)
    if t.item() != sum(halves[me // 2]):
        fail(f"all_reduce on {halves[me // 2]}: {t.item()}")
    odd = dist.new_group([1, 3])
    x = torch.tensor([10. * me])
    if me in (1, 3):
        dist.all_reduce(x, group=odd)
        if x.item() != 40.:
            fail(f"all_reduce on [1, 3]: {x.item()}")
    dist.barrier()
    done("subgroup", f", groups {halves}, max |ddp - gloo| {worst:.3g}")


def local_refused(ranks):
    """new_group(ranks, use_local_synchronization=True) with a 3 s timeout,
    which the caller expects to raise: (the seconds it took, the error's
    text, or None when the group was made)."""
    start = time.monotonic()
    try:
        dist.new_group(ranks, use_local_synchronization=True,
                       timeout=datetime.timedelta(seconds=3))
    except RuntimeError as e:
        return time.monotonic() - start, str(e)
    return time.monotonic() - start, None


def local_mode(args):
    init()
    size, me = dist.get_world_size(), dist.get_rank()
    if "use_local_synchronization" not in \
            inspect.signature(dist.new_group).parameters:
        print(f"rank {me}/{size}: local unavailable: torch "
              f"{torch.__version__}'s new_group has no "
              f"use_local_synchronization", flush=True)
        return
    if size != 4:
        fail(f"local wants 4 ranks, not {size}")
        sys.exit(1)
    halves = [[0, 1], [2, 3]]
    half = halves[me // 2]
    gloo = [dist.new_group(h, backend="gloo") for h in halves][me // 2]
    job = os.environ.get("SLURM_JOB_ID", os.getppid())
    flag = os.path.join(os.getcwd(), f"local-{job}")
    if me >= 2:
        end = time.monotonic() + 120
        while not os.path.exists(flag) and time.monotonic() < end:
            time.sleep(0.01)
        if not os.path.exists(flag):
            fail("ranks 0 and 1 did not make their group alone")
    mine = dist.new_group(half, use_local_synchronization=True)
    p_ddp, _ = train(mine, 10)
    if me == 0:
        open(flag, "w").close()
    p_gloo, _ = train(gloo, 10)
    worst = compare(p_ddp, p_gloo, "members-only group ddp against gloo")
    again = dist.new_group(half, use_local_synchronization=True)
    t = torch.tensor([float(me)])
    dist.all_reduce(t, group=again)
    if t.item() != sum(half):
        fail(f"all_reduce on a second group of {half}: {t.item()}")
    every = dist.new_group(use_local_synchronization=True)
    t = torch.tensor([1.])
    dist.all_reduce(t, group=every)
    dist.all_reduce(t)
    if t.item() != size * size:
        fail(f"all_reduce on a members-only group of every rank, then on "
             f"the world: {t.item()}")
    dist.barrier()
    took = None
    if me == 0:
        took, e = local_refused([0, 1])
        if e is None:
            fail("a group whose member never came was made")
        elif "world rank(s) [1] did not come" not in e:
            fail(f"the absent member was not named: {e}")
    dist.barrier()
    # The absent member comes after rank 0 gave up: it is told so at once
    # (not after its own timeout), and then the group made again by both
    # works (their counts of creations of [0, 1] are together again).
    if me == 1:
        took, e = local_refused([0, 1])
        if e is None:
            fail("a member that came after its group was abandoned made it")
        elif "abandoned before world rank 1 came" not in e or \
                "world rank 0 waited" not in e:
            fail(f"the late member was not told of the abandoned "
                 f"creation: {e}")
        elif took > 2:
            fail(f"the late member waited {took:.1f} s to be told")
    dist.barrier()
    if me < 2:
        made = dist.new_group([0, 1], use_local_synchronization=True,
                              timeout=datetime.timedelta(seconds=30))
        t = torch.tensor([1.])
        dist.all_reduce(t, group=made)
        if t.item() != 2:
            fail(f"all_reduce on [0, 1] made again after an abandoned "
                 f"creation: {t.item()}")
    dist.barrier()
    extra = f", max |ddp - gloo| {worst:.3g}"
    if took is not None:
        what = "absent member named" if me == 0 else "late member told"
        extra += f", {what} after {took:.1f} s"
    done("local", extra)


# ---- FSDP ------------------------------------------------------------------

def fsdp_available():
    """None, or why torch.distributed.fsdp cannot be used here."""
    try:
        importlib.import_module("torch.distributed.fsdp")
    except Exception as e:      # noqa: BLE001 - torch 1.13 on Python 3.11
        return f"torch {torch.__version__} cannot import " \
               f"torch.distributed.fsdp: {type(e).__name__}: {e}"
    return None


def train_fsdp(pg, steps, orig):
    """FullyShardedDataParallel (CPU) on process group pg, each layer a
    unit of its own (so that several all-gathers and reduce-scatters are
    in flight); returns the full parameters after the steps."""
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
    net = FSDP(model(0, 64), process_group=pg, use_orig_params=orig,
               auto_wrap_policy=ModuleWrapPolicy({nn.Linear}),
               device_id=torch.device("cpu"))
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    rank = dist.get_rank()
    for step in range(steps):
        x, y = batch(step, rank)
        opt.zero_grad()
        loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
    with FSDP.summon_full_params(net):
        return [p.detach().clone() for p in net.parameters()]


def fsdp_mode(args):
    """FSDP on "ddp" and on gloo, with and without use_orig_params, and
    against DDP on gloo: the same parameters after the steps."""
    why = fsdp_available()
    if why:
        print(f"rank {ddp.rank()}/{ddp.world_size()}: fsdp unavailable: "
              f"{why}", flush=True)
        sys.exit(0)
    init()
    steps = int(args[0]) if args else 6
    gloo = dist.new_group(backend="gloo")
    p_ref, _ = train(gloo, steps)
    worst = 0.0
    for orig in (False, True):
        p_ddp = train_fsdp(None, steps, orig)
        p_gloo = train_fsdp(gloo, steps, orig)
        worst = max(worst, compare(p_ddp, p_gloo, f"FSDP use_orig_params="
                                   f"{orig}: ddp against gloo"),
                    compare(p_ddp, p_ref, f"FSDP use_orig_params={orig} on "
                            f"ddp against DDP on gloo"))
    done("fsdp", f", {steps} steps, use_orig_params False and True, max "
         f"|FSDP on ddp - gloo / DDP| {worst:.3g}")


# ---- DeviceMesh ------------------------------------------------------------

def mesh_mode(args):
    """init_device_mesh on "ddp": its groups, their sums, a DDP on one
    dimension against gloo's."""
    try:
        from torch.distributed.device_mesh import init_device_mesh
    except Exception as e:      # noqa: BLE001 - torch 1.13 has none
        print(f"rank {ddp.rank()}/{ddp.world_size()}: mesh unavailable: "
              f"torch {torch.__version__}: {type(e).__name__}: {e}",
              flush=True)
        sys.exit(0)
    init()
    size, me = dist.get_world_size(), dist.get_rank()
    if size % 2:
        fail(f"mesh wants an even number of ranks, not {size}")
        sys.exit(1)
    k = size // 2
    mesh = init_device_mesh("cpu", (2, k), mesh_dim_names=("dp", "tp"))
    # rank i * k + j sits at (i, j): "dp" groups {j, k + j}, "tp" rows
    want = {"dp": [me % k, k + me % k], "tp": list(range(me - me % k,
                                                         me - me % k + k))}
    for name, ranks in want.items():
        g = mesh.get_group(name)
        got = dist.get_process_group_ranks(g)
        if sorted(got) != ranks:
            fail(f"mesh dimension {name}: ranks {got}, not {ranks}")
        if dist.get_backend(g) != "ddp":
            fail(f"mesh dimension {name}: backend {dist.get_backend(g)!r}")
        t = torch.tensor([float(me + 1)])
        dist.all_reduce(t, group=g)
        if t.item() != sum(r + 1 for r in ranks):
            fail(f"all_reduce on mesh dimension {name} {ranks}: {t.item()}")
    # every rank makes every group, in the same order (torch's new_group)
    gloo = [dist.new_group([j, k + j], backend="gloo") for j in range(k)]
    p_ddp, _ = train(mesh.get_group("dp"), 6)
    p_gloo, _ = train(gloo[me % k], 6)
    worst = compare(p_ddp, p_gloo, "DDP on mesh dimension dp against gloo")
    dist.barrier()
    done("mesh", f", (2, {k}) dp x tp, max |ddp - gloo| {worst:.3g}")


# ---- destroy_process_group -------------------------------------------------

def destroy(args):
    """destroy_process_group ends a "ddp" group's completer thread (the
    group's only; every one without a group), and the destroyed group's
    next call raises saying so."""
    init()
    t = torch.ones(2)
    g = dist.new_group(list(range(dist.get_world_size())))
    dist.all_reduce(t, group=g)

    def completers():
        return sorted(th.name for th in threading.enumerate()
                      if th.name.startswith("ddp-c10d-"))
    before = completers()
    dist.destroy_process_group(g)
    after = completers()
    if len(after) != len(before) - 1:
        fail(f"destroying a group left its completer: {before} -> {after}")
    check_raises("all_reduce on a destroyed group",
                 lambda: g.allreduce([torch.ones(2)]),
                 ["ddp backend", "destroyed"])
    dist.destroy_process_group()
    if completers():
        fail(f"destroy_process_group() left completers: {completers()}")
    done("destroy", f", completers {before} -> {after} -> []")


# ---- failures --------------------------------------------------------------

def failure(args, how):
    init()
    victim = int(args[0])
    me = dist.get_rank()
    start = [0.0]

    def on_step(step):
        if step == 3:
            start[0] = time.monotonic()
            if me == victim:
                if how == "kill":
                    time.sleep(0.2)
                    os._exit(3)
                raise ValueError(f"bad batch {step} on rank {me}")
    try:
        train(None, 10, on_step=on_step)
    except Exception as e:      # noqa: BLE001 - what the survivor saw
        if me == victim:
            raise               # uncaught: the rank ends naming it
        took = time.monotonic() - start[0]
        first = str(e).splitlines()[0] if str(e) else ""
        print(f"rank {me}: {type(e).__name__} after {took:.2f} s: {first}",
              flush=True)
        # A blocking call from Python (completed on this thread, not by
        # the completer) on the broken group: raises at once, as well.
        t0 = time.monotonic()
        try:
            dist.all_reduce(torch.ones(1))
        except Exception as e2:     # noqa: BLE001 - printed for the test
            first = str(e2).splitlines()[0] if str(e2) else ""
            print(f"rank {me}: then all_reduce: {type(e2).__name__} after "
                  f"{time.monotonic() - t0:.2f} s: {first}", flush=True)
            sys.exit(0)
        fail("all_reduce on the broken group returned")
        sys.exit(1)
    fail("training went through")
    sys.exit(1)


MODES = {"ops": ops, "train": train_mode, "subgroup": subgroup,
         "local": local_mode,
         "fsdp": fsdp_mode, "mesh": mesh_mode, "destroy": destroy,
         "kill": lambda a: failure(a, "kill"),
         "raise": lambda a: failure(a, "raise")}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in MODES:
        sys.exit(f"usage: torch_backend.py {'|'.join(MODES)} [ARGS]")
    MODES[sys.argv[1]](sys.argv[2:])
