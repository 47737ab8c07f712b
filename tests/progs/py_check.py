"""py_check.py - the checks of the Python module ddp (tests/t0720-python.t).

Run by the test's Python with the build tree's module on PYTHONPATH, alone
or as the ranks of a job under ddp-local-run.  Usage: py_check.py MODE [ARGS]

Each check prints "ok NAME" or "FAIL NAME: why" (with the rank when it is
in a job); a mode ends with "MODE: N checks, F failed" (again per rank).
"""

import array
import ctypes
import faulthandler
import os
import pickle
import signal
import sys
import threading
import time

import ddp

# A crash (seen once: rank 0 of the gil mode, SIGSEGV after its last line,
# in a distcheck run) prints every thread's Python stack on stderr.
faulthandler.enable()

_checks = [0, 0]


def out(line):
    """One line to stdout in one write(2): the ranks share the file."""
    sys.stdout.flush()
    os.write(1, (line + "\n").encode())


def _who():
    return f"rank {ddp.rank()}: " if ddp._ddp._is_initialized() else ""


def check(name, cond, why=""):
    _checks[0] += 1
    if cond:
        out(f"{_who()}ok {name}")
    else:
        _checks[1] += 1
        out(f"{_who()}FAIL {name}: {why}")


def raises(name, exc_type, text, fn, *args, **kwargs):
    """fn(*args, **kwargs) raises exactly exc_type, its message holding text."""
    try:
        fn(*args, **kwargs)
    except BaseException as e:      # noqa: B902 - the type is the check
        check(name, type(e) is exc_type and text in str(e),
              f"raised {type(e).__name__}: {e} (wanted {exc_type.__name__} "
              f"with {text!r})")
        return e
    check(name, False, f"nothing raised (wanted {exc_type.__name__})")
    return None


def summary(mode):
    out(f"{_who()}{mode}: {_checks[0]} checks, {_checks[1]} failed")
    return 1 if _checks[1] else 0


# ---- A DLPack producer without torch ----------------------------------------

class _DLTensor(ctypes.Structure):
    """DLPack's DLTensor (its device and dtype spelled out as fields)."""
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManaged(ctypes.Structure):
    _fields_ = [("t", _DLTensor), ("ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class DLPackDoubles:
    """float64 elements exported through __dlpack__ as a view of shape
    and strides (in elements) into self.mem, as a tensor library would:
    the module's DLPack path, without torch."""

    def __init__(self, values, shape, strides, offset=0, device_type=1):
        self.mem = (ctypes.c_double * len(values))(*values)
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = (ctypes.c_int64 * len(strides))(*strides)
        self._m = _DLManaged()
        t = self._m.t
        t.data = ctypes.addressof(self.mem)
        t.device_type, t.ndim = device_type, len(shape)
        t.code, t.bits, t.lanes = 2, 64, 1          # kDLFloat, 64 bits
        t.shape, t.strides = self._shape, self._strides
        t.byte_offset = offset * 8

    def __dlpack__(self, stream=None):
        # No destructor: the object outlives the call that uses it.
        return _capsule_new(ctypes.addressof(self._m), b"dltensor", None)


class DLPackCudaDoubles(DLPackDoubles):
    """DLPackDoubles in "device" memory of the stand-in CUDA
    (tests/progs/nccl_mock.c, preloaded: its cudaMalloc hands out host
    memory it remembers as a device's), exported as kDLCUDA; remembers the
    stream= of each __dlpack__ call."""

    def __init__(self, values, shape, strides, device_id=0):
        super().__init__(values, shape, strides, device_type=2)
        cuda = ctypes.CDLL(None)
        ptr = ctypes.c_void_p()
        size = len(values) * 8
        if cuda.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(size)) != 0:
            raise RuntimeError("cudaMalloc of the stand-in failed")
        ctypes.memmove(ptr, self.mem, size)
        self.dev = ptr
        self._m.t.data = ptr.value
        self._m.t.device_id = device_id
        self.streams = []

    def values(self):
        out = (ctypes.c_double * len(self.mem))()
        ctypes.memmove(out, self.dev, ctypes.sizeof(out))
        return list(out)

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return super().__dlpack__(stream)


def mode_cuda():
    """On the stand-in CUDA and NCCL (one process, DDP_BACKEND=nccl): CUDA
    tensors in place, exported again with libddp's stream; what is
    refused and why."""
    check("backend nccl", ddp.backend() == "nccl", ddp.backend())
    stream = ddp._ddp._cuda_stream()
    check("libddp's stream", stream is not None, repr(stream))
    x = DLPackCudaDoubles([1.0, 2.0, 3.0], (3,), (1,))
    ddp.all_reduce(x, "sum")
    check("all_reduce of a CUDA tensor", x.values() == [1.0, 2.0, 3.0],
          repr(x.values()))
    check("exported without, then with libddp's stream",
          x.streams == [None, stream or 1], repr(x.streams))
    ddp.broadcast(x, 0)
    out = DLPackCudaDoubles([0.0] * 3, (1, 3), (3, 1))
    ddp.all_gather_into(out, x)
    check("all_gather_into CUDA to CUDA", out.values() == [1.0, 2.0, 3.0],
          repr(out.values()))
    host = DLPackDoubles([0.0] * 3, (1, 3), (3, 1))
    ddp.all_gather_into(host, x)
    check("all_gather_into CUDA to host", list(host.mem) == [1.0, 2.0, 3.0],
          repr(list(host.mem)))
    cpu = DLPackDoubles([4.0, 5.0], (2,), (1,))
    ddp.all_reduce(cpu, "max")
    check("a CPU tensor still works (staged)", list(cpu.mem) == [4.0, 5.0])
    raises("a CUDA tensor that is not contiguous", ValueError,
           "x is a CUDA tensor that is not contiguous (a transposed or "
           "sliced view): pass x.contiguous()", ddp.all_reduce,
           DLPackCudaDoubles([1.0] * 6, (3,), (2,)))
    raises("a CUDA tensor on another GPU", ValueError,
           "x is on cuda:1, but libddp's NCCL communicator is on cuda:0",
           ddp.all_reduce, DLPackCudaDoubles([1.0], (1,), (1,), device_id=1))
    return summary("cuda")


# ---- One process -----------------------------------------------------------

def mode_api():
    """The module alone: identity, a world of one, the documentation."""
    import pydoc
    check("rank 0 of 1", (ddp.rank(), ddp.world_size()) == (0, 1),
          f"{ddp.rank()}/{ddp.world_size()}")
    check("identity of a single process",
          (ddp.local_rank(), ddp.local_world_size(), ddp.node_rank(),
           ddp.num_nodes(), ddp.is_main(), ddp.is_local_main(),
           ddp.is_distributed()) == (0, 1, 0, 1, True, True, False))
    check("backend and version", ddp.backend() in ("host", "nccl")
          and ddp.version() == ddp.__version__
          and ddp.version().count(".") == 2, ddp.version())
    missing = [n for n in ddp.__all__
               if not (getattr(ddp, n).__doc__ or "").strip()]
    check("every public name has a docstring", not missing, str(missing))
    text = pydoc.render_doc(ddp, renderer=pydoc.plaintext)
    absent = [n for n in ddp.__all__ if n not in text]
    check("help(ddp) shows every public name", not absent, str(absent))
    for n in ("all_reduce", "barrier", "run_on_main", "Sampler"):
        doc = pydoc.render_doc(getattr(ddp, n), renderer=pydoc.plaintext)
        check(f"help(ddp.{n}) has its signature and text",
              n in doc and len(doc) > 200, doc[:200])
    # A world of one: every collective is the identity.
    ddp.barrier()
    check("all_reduce of one", ddp.all_reduce(7) == 7
          and ddp.all_reduce(2.5, "avg") == 2.5
          and ddp.all_reduce([1, 2], "max") == [1, 2])
    check("objects in a world of one", ddp.broadcast_object({"a": 1})
          == {"a": 1} and ddp.gather(5) == [5] and ddp.all_gather("x")
          == ["x"] and ddp.all_reduce_dict({"l": 2}) == {"l": 2.0})
    check("helpers in a world of one", ddp.run_on_main(lambda: 3) == 3
          and ddp.compute_and_broadcast(lambda: "v") == "v"
          and ddp.reduce_and_broadcast(lambda: 4, "sum") == 4
          and ddp.reduce_and_broadcast(lambda: 4, sum) == 4
          and ddp.rank0_first(lambda: 9) == 9)
    with ddp.main_only() as main:
        check("main_only: the main process runs the block", main is True)
    check("should_stop without a signal", ddp.should_stop() is False)
    check("stop_requested without a signal", ddp.stop_requested() == 0)
    check("log_prefix", ddp.log_prefix() == "[ddp rank 0/1] ",
          ddp.log_prefix())
    ddp.finalize()
    check("finalize, then a call initializes again",
          not ddp._ddp._is_initialized() and ddp.world_size() == 1
          and ddp._ddp._is_initialized())
    ddp.finalize()
    ddp.finalize()      # twice: nothing to do
    return summary("api")


def mode_args():
    """Bad arguments: TypeError / ValueError saying why, before any wait."""
    ar = ddp.all_reduce
    raises("all_reduce: unknown op", ValueError, "unknown op 'mean'",
           ar, 1, "mean")
    raises("all_reduce: op not a str", TypeError, "op must be a str", ar, 1, 3)
    raises("all_reduce: a str", TypeError, "x is a str", ar, "12")
    raises("all_reduce: a dict", TypeError, "x is a dict", ar, {"a": 1})
    raises("all_reduce: None", TypeError, "x is a NoneType", ar, None)
    raises("all_reduce: a list with a str", TypeError,
           "element 1 of the sequence is a str", ar, [1, "2"])
    raises("all_reduce: an int past 64 bits", OverflowError,
           "does not fit in 64 bits", ar, 2 ** 70)
    raises("all_reduce: 16-bit integers", ValueError,
           "holds elements of format 'h' (2 bytes), which ddp does not have",
           ar, array.array("h", [1]))
    raises("all_reduce: a read-only non-contiguous buffer", ValueError,
           "is read-only and not one contiguous block", ar,
           memoryview(bytes(8))[::2])
    strided = bytearray(range(8))
    ar(memoryview(strided)[::2], "max")
    check("all_reduce: a writable strided buffer, through a copy written "
          "back", strided == bytearray(range(8)), repr(strided))
    raises("all_reduce: a DLPack producer on a CUDA device, host backend",
           ValueError, "x is a CUDA tensor (cuda:0), but this job uses "
           "libddp's host backend, which moves host memory: run with the "
           "NCCL backend", ar, DLPackDoubles([0.0], (1,), (1,), device_type=2))
    raises("all_reduce: a DLPack producer on another device", ValueError,
           "x is on a device the CPU cannot read (DLPack device type 4", ar,
           DLPackDoubles([0.0], (1,), (1,), device_type=4))
    raises("broadcast: a list", TypeError, "x is a list: pass a tensor",
           ddp.broadcast, [1.0])
    raises("broadcast: src out of range", ValueError,
           "src=1 is not a rank of this job (0 .. 0)", ddp.broadcast,
           bytearray(1), 1)
    raises("reduce: a read-only buffer on dst", ValueError,
           "x (a bytes) is read-only", ddp.reduce, b"ab")
    raises("all_gather_into: out too small", ValueError,
           "out holds 1 elements: it must hold world_size (1) times x's 2",
           ddp.all_gather_into, array.array("d", [0.0]),
           array.array("d", [1.0, 2.0]))
    raises("all_gather_into: out of another dtype", ValueError,
           "out holds float32 elements and x float64",
           ddp.all_gather_into, array.array("f", [0.0]),
           array.array("d", [1.0]))
    raises("all_reduce: no x", TypeError, "missing x", ar)
    raises("all_reduce: unknown keyword", TypeError,
           "unexpected keyword argument 'ops'", ar, 1, ops="sum")
    raises("all_reduce_dict: not a dict", TypeError, "d must be a dict",
           ddp.all_reduce_dict, [1])
    raises("all_reduce_dict: a key not a str", TypeError, "key 1 is not a str",
           ddp.all_reduce_dict, {1: 2.0})
    raises("all_reduce_dict: a value not a number", TypeError,
           "the value of 'a' is a list", ddp.all_reduce_dict, {"a": [1]})
    raises("all_reduce_dict: unknown op", ValueError, "unknown op 'median'",
           ddp.all_reduce_dict, {"a": 1}, "median")
    raises("broadcast_object: src out of range", ValueError,
           "src=3 is not a rank of this job (0 .. 0)", ddp.broadcast_object,
           1, 3)
    raises("broadcast_object: src not an int", TypeError,
           "src must be an int rank", ddp.broadcast_object, 1, "0")
    raises("gather: dst out of range", ValueError, "dst=-1 is not a rank",
           ddp.gather, 1, -1)
    raises("run_on_main: func not callable", TypeError,
           "func must be callable, not int", ddp.run_on_main, 5)
    raises("run_on_main: post_func not callable", TypeError,
           "post_func must be callable", ddp.run_on_main, print,
           post_func="x")
    raises("run_on_main: args not a sequence", TypeError,
           "_args must be a list or tuple, not int", ddp.run_on_main, print,
           args=3)
    raises("run_on_main: kwargs not a dict", TypeError,
           "_kwargs must be a dict, not list", ddp.run_on_main, print,
           kwargs=[1])
    raises("main_only: func not callable", TypeError, "func must be callable",
           ddp.main_only, 3)
    raises("rank0_first: arguments without a function", TypeError,
           "arguments without a function", ddp.rank0_first, None, 1)
    raises("compute_and_broadcast: fn not callable", TypeError,
           "fn must be callable", ddp.compute_and_broadcast, 1)
    raises("reduce_and_broadcast: op neither name nor function", TypeError,
           "op must be callable", ddp.reduce_and_broadcast, lambda: 1, 3)
    raises("reduce_and_broadcast: unknown op name", ValueError,
           "unknown op 'mean'", ddp.reduce_and_broadcast, lambda: 1, "mean")
    raises("main_process_only: not a function", TypeError,
           "function must be callable", ddp.main_process_only, 3)
    raises("Sampler: n negative", ValueError, "n=-1 is negative",
           ddp.Sampler, -1)
    raises("Sampler: n not a count", TypeError, "n must be an int or have len",
           ddp.Sampler, 2.5)
    raises("Sampler: rank past the world", ValueError,
           "rank=4 is not in 0 .. 3", ddp.Sampler, 10, world_size=4, rank=4)
    raises("Sampler: seed negative", ValueError, "seed=-2 is not in",
           ddp.Sampler, 10, seed=-2)
    raises("Sampler: world_size 0", ValueError, "world_size=0 is not",
           ddp.Sampler, 10, world_size=0, rank=0)
    s = ddp.Sampler(10, world_size=2, rank=0)
    raises("Sampler.set_epoch: start past the list", ValueError,
           "start=6 is not in 0 .. 5", s.set_epoch, 1, 6)
    raises("Sampler.set_epoch: epoch not an int", TypeError,
           "epoch must be an int", s.set_epoch, "1")
    raises("stop_signals: KILL", ValueError, "refused the list \"KILL\"",
           ddp.stop_signals, "KILL")
    raises("stop_signals: unknown name", ValueError, "\"TERM,FOO\"",
           ddp.stop_signals,
           "TERM,FOO")
    raises("log: a NUL character", ValueError, "NUL", ddp.log, "a\0b")
    os.environ["SLURM_RESTART_COUNT"] = "two"
    raises("restart_count: SLURM_RESTART_COUNT=two", ValueError,
           "SLURM_RESTART_COUNT", ddp.restart_count)
    os.environ["SLURM_RESTART_COUNT"] = "3"
    check("restart_count: SLURM_RESTART_COUNT=3", ddp.restart_count() == 3)
    del os.environ["SLURM_RESTART_COUNT"]
    check("restart_count: unset", ddp.restart_count() == 0)
    # In a main-only block the data collectives refuse; barrier passes.
    def inside():
        ddp.barrier()
        raises("all_reduce inside run_on_main's func", ddp.Error,
               "called inside a main-only block", ddp.all_reduce, 1)
        raises("gather inside run_on_main's func", ddp.Error,
               "called inside a main-only block", ddp.gather, 1)
        check("broadcast_object inside run_on_main's func returns its obj",
              ddp.broadcast_object("o") == "o")
        check("nested run_on_main runs here", ddp.run_on_main(lambda: 5) == 5)
        return "done"
    check("run_on_main with a block of checks", ddp.run_on_main(inside)
          == "done")
    return summary("args")


def mode_sampler(argv):
    """Print what sampler_print prints, from ddp.Sampler."""
    n, world, rank, shuffle, seed, drop, epoch = (int(a) for a in argv[:7])
    s = ddp.Sampler(n, shuffle=bool(shuffle), seed=seed, drop_last=bool(drop),
                    world_size=world, rank=rank)
    if len(argv) > 7:
        start, count = int(argv[7]), int(argv[8])
        s.set_epoch(epoch, start)
        idx = list(s)[:count]
        want = s.indices(start, count)
        if idx != want:
            print(f"iteration from {start} {idx[:5]}... differs from "
                  f"indices() {want[:5]}...", file=sys.stderr)
            return 1
    else:
        s.set_epoch(epoch)
        idx = list(s)
        if len(idx) != len(s):
            print(f"iteration gave {len(idx)} indices, len() says {len(s)}",
                  file=sys.stderr)
            return 1
    print(f"num_samples={s.num_samples} total_size={s.total_size}")
    for i in idx:
        print(i)
    return 0


# ---- A job -----------------------------------------------------------------

def mode_collectives():
    r, w = ddp.rank(), ddp.world_size()
    check("identity", 0 <= r < w and ddp.is_distributed()
          and ddp.is_main() == (r == 0)
          and ddp.is_local_main() == (ddp.local_rank() == 0))
    ddp.barrier()
    check("all_reduce int sum", ddp.all_reduce(r + 1) == w * (w + 1) // 2)
    check("all_reduce int prod", ddp.all_reduce(r + 1, "prod")
          == _factorial(w))
    check("all_reduce min / max", ddp.all_reduce(r, "min") == 0
          and ddp.all_reduce(r, op="max") == w - 1)
    check("all_reduce avg of ints is a float", ddp.all_reduce(r, "avg")
          == (w - 1) / 2)
    check("all_reduce float", ddp.all_reduce(0.5 * r) == 0.25 * w * (w - 1))
    check("all_reduce bool", ddp.all_reduce(r == 1, "max") == 1)
    check("all_reduce list (ints)", ddp.all_reduce([r, 1, -r]) ==
          [w * (w - 1) // 2, w, -w * (w - 1) // 2])
    t = ddp.all_reduce((r, 1.0), "max")
    check("all_reduce tuple (a float makes all floats)",
          type(t) is tuple and t == (w - 1, 1.0)
          and all(type(v) is float for v in t), repr(t))
    check("all_reduce empty list", ddp.all_reduce([]) == [])
    for code, vals in (("b", [r, -1]), ("B", [r, 200 // w]), ("i", [r, -7]),
                       ("I", [r, 3]), ("q", [r, -(2 ** 40)]),
                       ("Q", [r, 2 ** 40]), ("f", [r, 0.5]),
                       ("d", [r, 0.25])):
        a = array.array(code, vals)
        got = ddp.all_reduce(a, "sum")
        want = [sum(range(w)), vals[1] * w]
        check(f"all_reduce array('{code}') in place", got is a
              and list(a) == want, f"{list(a)} != {want}")
    a = array.array("d", [float(r), 2.0])
    ddp.all_reduce(a, "avg")
    check("all_reduce array('d') avg", list(a) == [(w - 1) / 2, 2.0])
    a = array.array("i", [r + 1])
    ddp.all_reduce(a, "prod")
    check("all_reduce array('i') prod", a[0] == _factorial(w))
    m = ddp.all_reduce(memoryview(bytes([r, 1, 2])))
    check("all_reduce read-only buffer: a new memoryview",
          isinstance(m, memoryview) and m.tolist() == [w * (w - 1) // 2,
                                                       w, 2 * w])
    ro = memoryview(array.array("q", [r, -1])).toreadonly()
    m = ddp.all_reduce(ro, "min")
    check("all_reduce read-only int64 memoryview: same format",
          m.format == "q" and m.tolist() == [0, -1], f"{m.format} {m.tolist()}")
    m2 = memoryview(array.array("f", [1.0] * 6)).cast("B").cast("f", (2, 3))
    ddp.all_reduce(m2)
    check("all_reduce 2-D memoryview", m2.tolist() == [[w] * 3] * 2,
          str(m2.tolist()))
    try:
        import numpy
    except ImportError:
        numpy = None
    if numpy is not None:
        x = numpy.arange(6, dtype=numpy.float32).reshape(2, 3) * (r + 1)
        y = ddp.all_reduce(x)
        check("all_reduce numpy array", y is x and numpy.allclose(
            x, numpy.arange(6).reshape(2, 3) * w * (w + 1) / 2))
        h = numpy.full(4, r, dtype=numpy.float16)
        ddp.all_reduce(h, "max")
        check("all_reduce numpy float16", float(h[0]) == w - 1)
    # A DLPack producer: column 1 of a 3 x 2 row-major block (strided:
    # through a copy written back), the other column untouched.
    x = DLPackDoubles([r, 7.0, r, 8.0, r, 9.0], (3,), (2,), offset=1)
    y = ddp.all_reduce(x)
    check("all_reduce of a strided DLPack column, in place",
          y is x and list(x.mem) == [r, 7.0 * w, r, 8.0 * w, r, 9.0 * w],
          str(list(x.mem)))
    x = DLPackDoubles([r + 1.0] * 4, (2, 2), (2, 1))
    ddp.all_reduce(x, "max")
    check("all_reduce of a contiguous DLPack 2 x 2", list(x.mem) ==
          [float(w)] * 4, str(list(x.mem)))
    b = array.array("q", [r * 10, r]) if r == w - 1 else array.array("q",
                                                                 [0, 0])
    check("broadcast of a buffer from the last rank, in place",
          ddp.broadcast(b, w - 1) is b and list(b) == [(w - 1) * 10, w - 1],
          str(list(b)))
    b = array.array("i", [r, 1])
    ddp.reduce(b, dst=1, op="sum")
    check("reduce to rank 1: the sum there, unchanged elsewhere",
          list(b) == ([w * (w - 1) // 2, w] if r == 1 else [r, 1]),
          str(list(b)))
    out = array.array("f", [0.0] * (2 * w))
    ddp.all_gather_into(out, array.array("f", [r, -r]))
    check("all_gather_into a buffer, rank order", list(out) ==
          [v for k in range(w) for v in (k, -k)], str(list(out)))
    g = array.array("d", [0.0] * w) if r == 0 else None
    res = ddp.gather_into(g, array.array("d", [r * 0.5]))
    check("gather_into rank 0", (res is g and list(g) == [k * 0.5 for k in
                                                           range(w)])
          if r == 0 else res is None, str(res))
    src = w - 1
    obj = ddp.broadcast_object({"from": r, "data": list(range(100))}
                               if r == src else None, src=src)
    check("broadcast_object from the last rank", obj == {"from": src, "data":
                                                         list(range(100))})
    big = ddp.broadcast_object(b"x" * 300000 if r == 0 else None)
    check("broadcast_object of 300 kB", big == b"x" * 300000)
    g = ddp.gather({"r": r, "pad": "y" * r * 100}, dst=1)
    check("gather on dst 1", g == ([{"r": i, "pad": "y" * i * 100}
                                    for i in range(w)] if r == 1 else None))
    check("all_gather", ddp.all_gather((r, str(r))) ==
          [(i, str(i)) for i in range(w)])
    d = ddp.all_reduce_dict({"n": r, "loss": 0.5 * r})
    check("all_reduce_dict avg", d == {"n": (w - 1) / 2,
                                       "loss": 0.25 * (w - 1)}, str(d))
    d = ddp.all_reduce_dict({"loss": 1.0, "n": r + 1}, "sum")
    check("all_reduce_dict sum keeps ints and the caller's key order",
          list(d) == ["loss", "n"] and d["n"] == w * (w + 1) // 2
          and type(d["n"]) is int and d["loss"] == w, str(d))
    check("all_reduce_dict max", ddp.all_reduce_dict({"a": r}, "max")
          == {"a": w - 1})
    e = raises("all_reduce_dict: different keys on one rank", ddp.Error,
               "different keys", ddp.all_reduce_dict,
               {"a": 1} if r != 1 else {"b": 1})
    check("... with code EMISMATCH", e is not None
          and e.code == ddp.EMISMATCH)
    ran = []
    res = ddp.run_on_main(lambda x, y=0: ran.append(x + y) or "main",
                          args=[1], kwargs={"y": 2},
                          post_func=lambda z: ran.append(z), post_args=("p",))
    check("run_on_main: func on main, post_func on the others",
          (res, ran) == (("main", [3]) if r == 0 else (None, ["p"])),
          f"{res} {ran}")
    ran.clear()
    ddp.run_on_main(lambda: ran.append("f"), post_func=lambda: ran.append("p"),
                    run_post_on_main=True)
    check("run_on_main: run_post_on_main", ran == (["f", "p"] if r == 0
                                                   else ["p"]), str(ran))
    order = []

    @ddp.main_process_only
    def write(x):
        """Writes on main."""
        ddp.barrier()       # returns at once: only main is here
        order.append(x)
        return x * 2
    check("main_process_only: main runs it, others get None",
          write(4) == (8 if r == 0 else None) and order == ([4] if r == 0
                                                            else []))
    check("main_process_only keeps the name and doc",
          write.__name__ == "write" and write.__doc__ == "Writes on main.")
    with ddp.main_only() as main:
        check("main_only: True on main only", main == (r == 0))
        if main:
            order.append("block")
    check("main_only(func)", ddp.main_only(lambda: "m") == ("m" if r == 0
                                                             else None))
    with ddp.rank0_first() as first:
        stamp = time.monotonic()
        check("rank0_first: every rank runs the block", first is True)
    stamps = ddp.all_gather(stamp)
    check("rank0_first: rank 0's block before the others'",
          all(stamps[0] <= s for s in stamps), str(stamps))
    with ddp.local_rank0_first():
        stamp = time.monotonic()
    stamps = ddp.all_gather((ddp.node_rank(), ddp.local_rank(), stamp))
    firsts = {n: s for n, lr, s in stamps if lr == 0}
    check("local_rank0_first: each node's local rank 0 first",
          all(firsts[n] <= s for n, lr, s in stamps), str(stamps))
    check("rank0_first(func) returns everywhere",
          ddp.rank0_first(lambda a: a + r, 10) == 10 + r)
    check("compute_and_broadcast", ddp.compute_and_broadcast(
        lambda: ("from", ddp.rank()), src=w - 1) == ("from", w - 1))
    check("reduce_and_broadcast with an op name",
          ddp.reduce_and_broadcast(lambda: [r, 1], "sum") ==
          [w * (w - 1) // 2, w])
    check("reduce_and_broadcast with a function of the list",
          ddp.reduce_and_broadcast(lambda: str(r), "-".join) ==
          "-".join(str(i) for i in range(w)))
    check("should_stop: no signal", ddp.should_stop() is False)
    check("log_prefix", ddp.log_prefix() == f"[ddp rank {r}/{w}] ")
    ddp.log(f"line one of {r}\nline two of {r}")
    s = ddp.Sampler(103, seed=11)
    s.set_epoch(4)
    mine = list(s)
    every = ddp.all_gather(mine)
    flat = [i for part in every for i in part]
    check("Sampler in a job: every rank as many, all items covered",
          all(len(p) == len(s) == -(-103 // w) for p in every)
          and set(flat) == set(range(103)) and len(flat) == s.total_size)
    s2 = ddp.Sampler(list(range(103)), seed=11, drop_last=True)
    s2.set_epoch(4)
    check("Sampler(dataset) with drop_last", len(s2) == 103 // w
          and set(s2).issubset(set(mine) | set(flat)))
    ddp.barrier()
    return summary("collectives")


def _factorial(n):
    f = 1
    for i in range(2, n + 1):
        f *= i
    return f


class Unpicklable:
    def __reduce__(self):
        raise pickle.PicklingError("this one stays here")


def expect_remote(name, fn, rank_raising, type_name, text, own_type):
    """fn fails on rank_raising with own_type, elsewhere as RemoteError."""
    r = ddp.rank()
    if r == rank_raising:
        raises(f"{name}: the rank that raised gets its own", own_type, text,
               fn)
        return
    e = raises(f"{name}: RemoteError elsewhere", ddp.RemoteError, text, fn)
    check(f"{name}: RemoteError names rank, type and message", e is not None
          and e.rank == rank_raising and e.type_name == type_name
          and text in e.remote_message and e.code == ddp.EREMOTE
          and f"rank {rank_raising} raised {type_name}" in str(e),
          f"{e!r} rank={getattr(e, 'rank', None)} "
          f"type={getattr(e, 'type_name', None)}")


def mode_remote():
    r, w = ddp.rank(), ddp.world_size()
    ran = []

    def fail_on_main():
        raise FileNotFoundError(2, "No such file", "/data/missing")
    expect_remote("run_on_main", lambda: ddp.run_on_main(
        fail_on_main, post_func=lambda: ran.append("post")), 0,
        "FileNotFoundError", "No such file", FileNotFoundError)
    check("run_on_main: no post_func after main failed", ran == [])

    class DataError(Exception):
        pass

    def rank0_block():
        with ddp.rank0_first():
            ran.append("block")
            if ddp.rank() == 0:
                raise DataError("download failed")
    expect_remote("rank0_first (rank 0 fails)", rank0_block, 0,
                  f"{__name__}.mode_remote.<locals>.DataError",
                  "download failed", DataError)
    check("rank0_first: the others did not run the block",
          ran == (["block"] if r == 0 else []), str(ran))

    def rest_block():
        with ddp.rank0_first():
            if ddp.rank() == w - 1:
                raise KeyError("late")
    expect_remote("rank0_first (the last rank fails)", rest_block, w - 1,
                  "KeyError", "late", KeyError)

    def main_block():
        with ddp.main_only() as main:
            if main:
                raise OSError("disk full")
    expect_remote("main_only block", main_block, 0, "OSError", "disk full",
                  OSError)
    expect_remote("main_only(func)", lambda: ddp.main_only(
        lambda: 1 / 0), 0, "ZeroDivisionError", "division by zero",
        ZeroDivisionError)
    expect_remote("compute_and_broadcast", lambda: ddp.compute_and_broadcast(
        lambda: int("x"), src=1), 1, "ValueError", "invalid literal",
        ValueError)
    expect_remote("broadcast_object of an unpicklable object",
                  lambda: ddp.broadcast_object(Unpicklable() if r == 0
                                               else None),
                  0, "_pickle.PicklingError", "this one stays here",
                  pickle.PicklingError)
    expect_remote("gather with an unpicklable object on rank 1",
                  lambda: ddp.gather(Unpicklable() if r == 1 else r), 1,
                  "_pickle.PicklingError", "this one stays here",
                  pickle.PicklingError)
    expect_remote("run_on_main: post_func fails on rank 1",
                  lambda: ddp.run_on_main(lambda: None, post_func=lambda:
                                          [][1] if ddp.rank() == 1 else 0),
                  1, "IndexError", "list index out of range", IndexError)
    expect_remote("reduce_and_broadcast: fn fails on the last rank",
                  lambda: ddp.reduce_and_broadcast(
                      lambda: 1 / (ddp.rank() - (w - 1)), "sum"),
                  w - 1, "ZeroDivisionError", "division by zero",
                  ZeroDivisionError)
    # Longer than DDP_TIMEOUT (the test sets 1 s): nobody times out.
    t0 = time.monotonic()
    res = ddp.run_on_main(lambda: time.sleep(2.5) or "slow")
    check("run_on_main past DDP_TIMEOUT", res == ("slow" if r == 0 else None)
          and time.monotonic() - t0 >= 2.4)
    with ddp.rank0_first():
        if r == 0:
            time.sleep(2.5)
    check("rank0_first block past DDP_TIMEOUT", True)
    expect_remote("main_only block failing after DDP_TIMEOUT", lambda:
                  main_block_slow(), 0, "RuntimeError", "late failure",
                  RuntimeError)
    ddp.barrier()
    check("the ranks are still in step", ddp.all_reduce(1) == w)
    return summary("remote")


def main_block_slow():
    with ddp.main_only() as main:
        if main:
            time.sleep(1.5)
            raise RuntimeError("late failure")


def mode_kill(victim, at):
    r = ddp.rank()
    n = 0
    t0 = None
    try:
        while True:
            if n == at:
                t0 = time.monotonic()
                if r == victim:
                    os.kill(os.getpid(), signal.SIGKILL)
            ddp.barrier()
            n += 1
    except ddp.PeerError as e:
        out(f"rank {r}: PeerError after {n} barriers in "
            f"{time.monotonic() - t0:.1f} s: code={e.code} where={e.where} "
            f"{e}")
    try:
        ddp.all_reduce(1)
    except ddp.PeerError as e:
        out(f"rank {r}: next call: PeerError {e}")
    return 0


def mode_late(late_rank, secs):
    r = ddp.rank()
    if r == late_rank:
        time.sleep(secs)
    try:
        ddp.barrier()
        out(f"rank {r}: no error")
    except ddp.TimeoutError as e:
        out(f"rank {r}: TimeoutError code={e.code} {e}")
    return 0


def mode_mixed(odd):
    """Rank odd all-reduces the float 1.0, the others the int 1."""
    r = ddp.rank()
    try:
        v = ddp.all_reduce(1.0 if r == odd else 1)
        out(f"rank {r}: no error: {v!r}")
    except ddp.Error as e:
        out(f"rank {r}: {type(e).__name__} code={e.code} {e}")
    return 0


def mode_stop(signaller, at):
    r = ddp.rank()
    step = 0
    while step < 1000:
        if r == signaller and step == at:
            os.kill(os.getpid(), signal.SIGUSR1)
        if ddp.should_stop():
            break
        step += 1
    out(f"rank {r}: stopped at step {step}, signal here "
        f"{ddp.stop_requested()}")
    return 0


def mode_gil():
    """A thread runs while the main thread waits in a collective."""
    r = ddp.rank()
    count = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            count[0] += 1
            time.sleep(0.001)
    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.2)
    before = count[0]
    if r == 1:
        time.sleep(1.5)
    t0 = time.monotonic()
    ddp.barrier()
    waited = time.monotonic() - t0
    during = count[0] - before
    done.set()
    t.join()
    out(f"rank {r}: waited {waited:.1f} s, the thread ran {during} times")
    return 0


def mode_interrupt(victim, busy):
    """Main is busy in run_on_main; victim gets SIGINT twice while waiting."""
    r = ddp.rank()
    if r == victim:
        def interrupt():
            time.sleep(1.0)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGINT)
        threading.Thread(target=interrupt, daemon=True).start()
    t0 = time.monotonic()
    try:
        ddp.run_on_main(time.sleep, args=[busy])
        out(f"rank {r}: no error")
    except BaseException as e:
        out(f"rank {r}: {type(e).__name__} after "
            f"{time.monotonic() - t0:.1f} s: {e}")
    return 0


def mode_uncaught(victim):
    r = ddp.rank()
    ddp.barrier()
    if r == victim:
        raise RuntimeError("uncaught on purpose")
    t0 = time.monotonic()
    try:
        ddp.barrier()
        out(f"rank {r}: no error")
    except ddp.PeerError as e:
        out(f"rank {r}: PeerError after {time.monotonic() - t0:.1f} s: {e}")
    return 0


def mode_raise(victim):
    """victim raises ValueError; the others' PeerError ends them too."""
    ddp.barrier()
    if ddp.rank() == victim:
        raise ValueError("bad batch 7")
    while True:
        ddp.barrier()


def main(argv):
    mode, args = argv[1], argv[2:]
    if mode == "api":
        return mode_api()
    if mode == "args":
        return mode_args()
    if mode == "sampler":
        return mode_sampler(args)
    if mode == "collectives":
        return mode_collectives()
    if mode == "remote":
        return mode_remote()
    if mode == "kill":
        return mode_kill(int(args[0]), int(args[1]))
    if mode == "late":
        return mode_late(int(args[0]), float(args[1]))
    if mode == "stop":
        return mode_stop(int(args[0]), int(args[1]))
    if mode == "mixed":
        return mode_mixed(int(args[0]))
    if mode == "gil":
        return mode_gil()
    if mode == "interrupt":
        return mode_interrupt(int(args[0]), float(args[1]))
    if mode == "uncaught":
        return mode_uncaught(int(args[0]))
    if mode == "raise":
        return mode_raise(int(args[0]))
    if mode == "cuda":
        return mode_cuda()
    print(f"py_check.py: unknown mode {mode}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
