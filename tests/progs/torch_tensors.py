"""torch_tensors.py - the collectives of the Python module ddp on torch
tensors (tests/t0750-python-tensors.t).

Run alone (local: one process) or as the ranks of a job (job; groups:
groups, requests and reduce_scatter, also under ddp-run, t0720; mismatch
CASE, one case a job).  Usage: torch_tensors.py local|job|groups|mismatch
CASE

Each check prints "ok NAME" or "FAIL NAME: why" (with the rank in a job); a
mode ends with "MODE: N checks, F failed" and exits 1 if one failed.
"""

import ctypes
import os
import sys

import torch

import ddp

_checks = [0, 0]


def out(line):
    """One line to stdout in one write(2): the ranks share the file."""
    sys.stdout.flush()
    os.write(1, (line + "\n").encode())


def check(name, cond, why=""):
    _checks[0] += 1
    who = f"rank {ddp.rank()}: " if ddp.world_size() > 1 else ""
    if cond:
        out(f"{who}ok {name}")
    else:
        _checks[1] += 1
        out(f"{who}FAIL {name}: {why}")


def raises(name, exc_type, texts, fn, *args):
    """fn(*args) raises exactly exc_type, its message holding every text."""
    try:
        fn(*args)
    except BaseException as e:      # noqa: B902 - the type is the check
        check(name, type(e) is exc_type and all(t in str(e) for t in texts),
              f"raised {type(e).__name__}: {e} (wanted {exc_type.__name__} "
              f"with {texts!r})")
        return e
    check(name, False, f"nothing raised (wanted {exc_type.__name__})")
    return None


def summary(mode):
    who = f"rank {ddp.rank()}: " if ddp.world_size() > 1 else ""
    out(f"{who}{mode}: {_checks[0]} checks, {_checks[1]} failed")
    return 1 if _checks[1] else 0


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice),
                ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class FakeCuda:
    """A DLPack producer of 4 float32 on device cuda:0 (there is no GPU
    here): what ddp sees of a CUDA tensor.  Its data pointer is NULL: the
    module must refuse it before touching the memory."""

    def __init__(self):
        self._shape = (ctypes.c_int64 * 1)(4)
        self._m = _DLManagedTensor()
        t = self._m.dl_tensor
        t.device = _DLDevice(2, 0)                  # kDLCUDA, cuda:0
        t.ndim = 1
        t.dtype = _DLDataType(2, 32, 1)             # float32
        t.shape = self._shape
        self._name = b"dltensor"

    def __dlpack__(self, stream=None):
        # No destructor: the capsule borrows this object's memory, which
        # the module's reference to the method keeps alive meanwhile.
        return _capsule_new(ctypes.addressof(self._m), self._name, None)


DTYPES = (torch.float32, torch.float64, torch.int32, torch.int64)


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


# ---- Every rank ----------------------------------------------------------

def mode_job():
    r, n = ddp.rank(), ddp.world_size()
    ranksum = n * (n + 1) // 2          # sum of rank + 1 over the ranks
    for dt in DTYPES:
        x = torch.arange(5, dtype=dt) * (r + 1)
        ptr = x.data_ptr()
        y = ddp.all_reduce(x)
        want = torch.arange(5, dtype=dt) * ranksum
        check(f"all_reduce sum {dt}: in place, the sum",
              y is x and x.data_ptr() == ptr and same(x, want), f"{x}")
    x = torch.full((2, 3), float(r))
    ddp.all_reduce(x, "max")
    check("all_reduce max float32 (2, 3)", same(x, torch.full((2, 3), n - 1.)),
          f"{x}")
    x = torch.full((4,), float(r + 1), dtype=torch.float64)
    ddp.all_reduce(x, "avg")
    check("all_reduce avg float64", same(x, torch.full((4,), ranksum / n,
                                                       dtype=torch.float64)),
          f"{x}")
    x = torch.ones(3, dtype=torch.bfloat16) * (r + 1)
    ddp.all_reduce(x)
    check("all_reduce sum bfloat16",
          same(x, torch.full((3,), float(ranksum), dtype=torch.bfloat16)),
          f"{x}")

    # A transposed (non-contiguous) tensor: reduced through a copy, the
    # result written back through its strides; its base sees the result.
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4) * (r + 1)
    t = base.t()
    ddp.all_reduce(t)
    check("all_reduce of a transposed tensor: written back in place",
          not t.is_contiguous()
          and same(base, torch.arange(12, dtype=torch.float32).reshape(3, 4)
                   * ranksum), f"{base}")
    # A column (strided view): only its elements change.
    m = torch.zeros(4, 3, dtype=torch.int64)
    m[:, 1] = r + 1
    ddp.all_reduce(m[:, 1])
    want = torch.zeros(4, 3, dtype=torch.int64)
    want[:, 1] = ranksum
    check("all_reduce of a column view: only the column", same(m, want),
          f"{m}")

    src = n - 1
    x = torch.arange(6, dtype=torch.float64).reshape(2, 3) \
        if r == src else torch.zeros(2, 3, dtype=torch.float64)
    y = ddp.broadcast(x, src)
    check(f"broadcast from rank {src}: in place",
          y is x and same(x, torch.arange(6, dtype=torch.float64)
                          .reshape(2, 3)), f"{x}")
    x = torch.arange(4, dtype=torch.int32) + r
    ddp.reduce(x, 1, "sum")
    want = torch.arange(4, dtype=torch.int32) + r if r != 1 else \
        torch.arange(4, dtype=torch.int32) * n + n * (n - 1) // 2
    check("reduce to rank 1: the sum there, unchanged elsewhere",
          same(x, want), f"{x}")

    x = torch.full((2, 2), float(r))
    outp = torch.empty(n, 2, 2)
    y = ddp.all_gather_into(outp, x)
    want = torch.arange(n, dtype=torch.float32).reshape(n, 1, 1).expand(
        n, 2, 2)
    check("all_gather_into a (world, 2, 2) tensor, rank order",
          y is outp and same(outp, want.contiguous()), f"{outp}")
    flat = torch.empty(n * 3, dtype=torch.int64)
    ddp.all_gather_into(flat, torch.full((3,), r, dtype=torch.int64))
    check("all_gather_into a flat tensor",
          same(flat, torch.arange(n).repeat_interleave(3)), f"{flat}")
    # x is this rank's part of out: in place.
    buf = torch.zeros(n, 2, dtype=torch.int32)
    buf[r] = r + 10
    ddp.all_gather_into(buf, buf[r])
    check("all_gather_into with x a view of out", same(
        buf, (torch.arange(n, dtype=torch.int32) + 10).reshape(n, 1)
        .expand(n, 2).contiguous()), f"{buf}")
    g = torch.zeros(n, dtype=torch.float32) if r == 0 else None
    y = ddp.gather_into(g, torch.tensor([float(r)]), 0)
    check("gather_into rank 0: rank order there, None elsewhere",
          (y is g and same(g, torch.arange(n, dtype=torch.float32)))
          if r == 0 else y is None, f"{y}")
    # The object collectives still take tensors, by value (pickled).
    objs = ddp.all_gather(torch.full((r + 1,), r))
    check("all_gather (objects) of tensors of different sizes",
          [o.tolist() for o in objs] == [[k] * (k + 1) for k in range(n)],
          f"{objs}")
    ddp.barrier()
    return summary("job")


def mode_mismatch(case):
    """Ranks that pass different tensors: every rank raises ddp.Error
    (EMISMATCH) saying the ranks passed different data, instead of adding
    wrong numbers.  The ranks that saw the two calls name both (all of
    them with DDP_CHECK=1): such a rank prints "named: ..." (the test
    counts them).  A mismatch breaks the job's collectives (libddp: sticky),
    so one case a job."""
    r = ddp.rank()
    if case == "dtype":
        x = torch.ones(4, dtype=torch.float32 if r == 0 else torch.int32)
        names = ["4 float32", "4 int32"]
        e = raises("float32 on rank 0, int32 on the others: ddp.Error",
                   ddp.Error, ["ranks passed different data"],
                   ddp.all_reduce, x)
        # Not checked: x after the error.  A node that reduced its own
        # ranks' data before the other node's frame told it of the
        # mismatch holds that partial sum (seen in CI: rank 2 [2, 2, 2,
        # 2]); a failed collective leaves its buffer unspecified
        # (ddp_allreduce(3), ddp-python(7)).
    elif case == "bytes":
        # 16 bytes everywhere: 4 float32 on rank 0, 2 float64 elsewhere.
        x = torch.ones(4) if r == 0 else torch.ones(2, dtype=torch.float64)
        names = ["4 float32", "2 float64"]
        e = raises("16 bytes as (4,) float32 and (2,) float64: ddp.Error",
                   ddp.Error, ["ranks passed different data"],
                   ddp.all_reduce, x)
    elif case == "shape":
        # 6 float32 everywhere: (2, 3) on rank 0, (6,) elsewhere.  libddp
        # sees the same call; DDP_CHECK=1 has the module compare shapes.
        x = torch.ones(2, 3) if r == 0 else torch.ones(6)
        if os.environ.get("DDP_CHECK") != "1":
            ddp.all_reduce(x)
            check("(2, 3) and (6,) without DDP_CHECK: reduced element by "
                  "element", bool((x == ddp.world_size()).all()), f"{x}")
            return summary("mismatch " + case)
        names = ["this rank's (2, 3) float32" if r == 0 else
                 "this rank's (6,) float32"]
        e = raises("(2, 3) and (6,) with DDP_CHECK=1: ddp.Error",
                   ddp.Error, ["ranks passed data of different shapes"],
                   ddp.all_reduce, x)
        check("... the tensor unchanged", bool((x == 1).all()), f"{x}")
    else:
        x = torch.ones(3) if r == 0 else torch.ones(5)
        names = ["3 float32", "5 float32"]
        e = raises("all_gather_into of 3 and of 5 elements: ddp.Error",
                   ddp.Error, ["ranks passed different data"],
                   ddp.all_gather_into,
                   torch.zeros(ddp.world_size() * x.numel()), x)
    check("... code EMISMATCH", e is not None and e.code == ddp.EMISMATCH,
          f"{e!r}")
    if e is not None and all(n in str(e) for n in names):
        out(f"rank {r}: named: {' and '.join(names)}")
    return summary("mismatch " + case)


# ---- One process: what is refused, before any communication --------------

def mode_local():
    ar = ddp.all_reduce
    for dt in DTYPES + (torch.int8, torch.uint8, torch.float16,
                        torch.bfloat16):
        x = torch.arange(3, dtype=dt)
        check(f"all_reduce {dt} alone: in place, unchanged",
              ar(x) is x and same(x, torch.arange(3, dtype=dt)), f"{x}")
    x = torch.tensor(7.0)
    check("a 0-d tensor", ar(x) is x and x.item() == 7.0, f"{x}")
    x = torch.zeros(0, 3)
    check("an empty tensor", ar(x) is x, f"{x}")
    raises("complex64 refused, naming it", ValueError,
           ["complex64", "which ddp does not have", "view_as_real"], ar,
           torch.ones(2, dtype=torch.complex64))
    raises("int16 refused, naming it", ValueError,
           ["int16", "which ddp does not have"], ar,
           torch.ones(2, dtype=torch.int16))
    raises("bool refused, naming it", ValueError, ["torch.bool"], ar,
           torch.ones(2, dtype=torch.bool))
    raises("a tensor that requires grad: refused, saying so", ValueError,
           ["require gradient"], ar, torch.ones(2, requires_grad=True))
    raises("an expanded tensor (shared elements): refused", ValueError,
           ["share memory"], ar, torch.ones(1).expand(4))
    raises("a CUDA tensor under the host backend: refused, saying what to do",
           ValueError, ["CUDA tensor (cuda:0), but this job uses libddp's "
                        "host backend", "NCCL backend", "x.cpu()"], ar,
           FakeCuda())
    raises("broadcast of a CUDA tensor under the host backend: refused",
           ValueError, ["CUDA tensor"], ddp.broadcast, FakeCuda())
    if torch.cuda.is_available():
        raises("a real CUDA tensor under the host backend: refused",
               ValueError, ["CUDA tensor"], ar, torch.ones(2, device="cuda"))
    raises("all_gather_into: out of another dtype", ValueError,
           ["out holds float64 elements and x float32"], ddp.all_gather_into,
           torch.zeros(2, dtype=torch.float64), torch.ones(2))
    raises("all_gather_into: out of the wrong size", ValueError,
           ["out holds 3 elements", "times x's 2"], ddp.all_gather_into,
           torch.zeros(3), torch.ones(2))
    raises("reduce: dst out of range", ValueError, ["dst=1 is not a rank"],
           ddp.reduce, torch.ones(1), 1)
    return summary("local")


def mode_groups():
    """Groups, requests and reduce_scatter on torch tensors (any world
    size from 2; ranks in the same order on every rank)."""
    r, n = ddp.rank(), ddp.world_size()
    g = ddp.split(r % 2, key=r)
    gsum = float(sum(g.ranks))
    x = torch.full((2, 3), float(r))
    y = ddp.all_reduce(x, group=g)
    check("all_reduce on a group: in place",
          y is x and same(x, torch.full((2, 3), gsum)), f"{x}")
    x = torch.arange(4, dtype=torch.int64) + r
    ddp.broadcast(x, src=0, group=g)
    check("broadcast from group rank 0",
          same(x, torch.arange(4, dtype=torch.int64) + g.ranks[0]), f"{x}")
    x = torch.ones(3, dtype=torch.bfloat16)
    ddp.reduce(x, dst=g.size - 1, group=g)
    want = torch.full((3,), float(g.size), dtype=torch.bfloat16) \
        if g.rank == g.size - 1 else torch.ones(3, dtype=torch.bfloat16)
    check("reduce to the group's last rank (bfloat16)", same(x, want), f"{x}")
    outp = torch.empty(g.size, 2)
    ddp.all_gather_into(outp, torch.full((2,), float(r)), group=g)
    check("all_gather_into on a group",
          same(outp, torch.tensor([[float(k)] * 2 for k in g.ranks])),
          f"{outp}")
    outp = torch.zeros(g.size, dtype=torch.int32)
    y = ddp.gather_into(outp, torch.tensor([r], dtype=torch.int32), dst=0,
                        group=g)
    check("gather_into on a group",
          (y is outp and outp.tolist() == list(g.ranks)) if g.rank == 0
          else y is None, f"{outp}")

    # Requests: several in flight; a transposed view (a temporary the
    # request keeps alive) written back at wait().
    xs = [torch.full((1000,), float(r + i)) for i in range(4)]
    reqs = [ddp.all_reduce(t, async_op=True) for t in xs]
    base = torch.arange(12, dtype=torch.float64).reshape(3, 4) * (r + 1)
    qt = ddp.all_reduce(base.t(), group=g, async_op=True)
    check("several async all_reduce of tensors",
          all(q.wait() is xs[i]
              and same(xs[i], torch.full((1000,), float(n * (n - 1) // 2
                                                       + n * i)))
              for i, q in enumerate(reqs)))
    qt.wait()
    check("async all_reduce of a transposed view: written back at wait()",
          same(base, torch.arange(12, dtype=torch.float64).reshape(3, 4)
               * float(sum(k + 1 for k in g.ranks))), f"{base}")
    z = torch.full((8,), float(r))
    ddp.all_reduce(z, "max", async_op=True)         # dropped at once
    check("a dropped request completed before it went",
          same(z, torch.full((8,), float(n - 1))), f"{z}")
    x = torch.ones(5)
    q = ddp.all_reduce(x, group=g, async_op=True)
    while not q.is_completed():
        pass
    check("is_completed(), then wait()", q.wait() is x
          and same(x, torch.full((5,), float(g.size))), f"{x}")

    # reduce_scatter: into out, in place (out a view of this rank's
    # block), on a group without out, async.
    x = torch.arange(n * 2, dtype=torch.float32) + r
    outp = torch.empty(2)
    y = ddp.reduce_scatter(x, outp)
    want = torch.arange(2 * r, 2 * r + 2, dtype=torch.float32) * n \
        + float(n * (n - 1) // 2)
    check("reduce_scatter into out", y is outp and same(outp, want),
          f"{outp}")
    x = torch.arange(n * 2, dtype=torch.float32) + r
    y = ddp.reduce_scatter(x, x.view(n, 2)[r])
    check("reduce_scatter in place (out a view of x's block)",
          same(x.view(n, 2)[r], want), f"{x}")
    x = torch.full((g.size, 3), float(r), dtype=torch.float64)
    q = ddp.reduce_scatter(x, op="avg", group=g, async_op=True)
    check("async reduce_scatter avg on a group, in place",
          q.wait() is x and same(x[g.rank], torch.full((3,), gsum / g.size,
                                                       dtype=torch.float64)),
          f"{x}")
    raises("reduce_scatter: out of another dtype", ValueError,
           ["out holds float64 elements and x float32"], ddp.reduce_scatter,
           torch.zeros(n), torch.zeros(1, dtype=torch.float64))
    g.free()
    ddp.barrier()
    return summary("groups")


def main():
    if sys.argv[1:] == ["job"]:
        return mode_job()
    if sys.argv[1:] == ["groups"]:
        return mode_groups()
    if sys.argv[1:] == ["local"]:
        return mode_local()
    if len(sys.argv) == 3 and sys.argv[1] == "mismatch" \
            and sys.argv[2] in ("dtype", "bytes", "count", "shape"):
        return mode_mismatch(sys.argv[2])
    sys.stderr.write("usage: torch_tensors.py job|local|groups|mismatch "
                     "dtype|bytes|count|shape\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
