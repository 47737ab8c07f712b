"""torch.distributed backend "ddp": c10d collectives on libddp.

Imported by ddp.torch, which registers the backend, so that
``torch.distributed.init_process_group(backend="ddp")`` (through
ddp.torch.init_process_group, which gives torch libddp's ranks) moves the
tensors with libddp's host collectives instead of gloo's.

How it works:
  - ProcessGroup is a Python subclass of torch.distributed.ProcessGroup;
    torch (its Python API and DistributedDataParallel's C++ reducer) calls
    its methods.  Each starts the libddp collective with async_op=True
    and returns a Work made from a torch.futures.Future
    (_create_work_from_future), so torch's wait(), get_future() and DDP's
    comm hooks all see one future, whose value is the list of output
    tensors (as gloo's).
  - A Completer thread per process group completes the futures in start
    order (libddp completes a communicator's requests in that order).  It
    blocks in Request.wait(), which the module runs beside other threads'
    libddp calls (libddp allows a request's wait on any thread), so the
    training thread starts the next bucket's all-reduce meanwhile
    (overlap with backward) and a completion is seen at once.  A call
    torch's Python API waits for at once (dist.all_reduce(t) without
    async_op) is completed on the caller's thread instead (ProcessGroup.
    _start), without the two thread hand-offs.
  - A failure (ddp.PeerError, ddp.TimeoutError, ddp.Error) is set on the
    future, with the torch call and the group in front of libddp's
    message (which names the rank); every later call of that group fails
    the same way, as libddp's communicator is broken.
  - Groups: libddp makes a group collectively over the world (ddp.split),
    torch calls the backend's creator on the new group's members only.
    ddp.torch therefore wraps torch.distributed.new_group: every world
    rank makes the libddp group (ddp.new_group) before torch's own
    new_group runs, and the creator, on the members, takes it from
    _pending.  With use_local_synchronization=True only the members call
    new_group: the creator makes the group with them alone
    (ddp.create_group), its set-up messages through the group's store.

Only torch is needed here; the rest of the module never imports this file.
"""

import atexit
import collections
import os
import sys
import threading
import weakref

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import _create_work_from_future

import ddp

__all__ = ["ProcessGroup", "create", "NAME"]

#: The backend's name for init_process_group and new_group.
NAME = "ddp"

# torch dtypes libddp reduces and moves as they are.
_NATIVE = {
    torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16,
    torch.bfloat16, torch.float32, torch.float64,
}
# ReduceOp name -> libddp's op, for the dtypes of _NATIVE.
_OPS = {"SUM": "sum", "PRODUCT": "prod", "MIN": "min", "MAX": "max",
        "AVG": "avg"}
_BITWISE = ("BAND", "BOR", "BXOR")


def _op_name(op):
    """The name of torch's ReduceOp op ("SUM", "BAND", ...), or its repr."""
    for name in ("SUM", "PRODUCT", "MIN", "MAX", "AVG", "BAND", "BOR",
                 "BXOR", "PREMUL_SUM"):
        value = getattr(dist.ReduceOp, name, None)
        if value is not None and op == value:
            return name
    return repr(op)


# What the refusals below say of libddp and of what to do instead.
_NO_P2P = "libddp has collectives only, no point-to-point"
_GLOO_BESIDE = "use gloo for it (a second group: new_group(backend='gloo'))"


def _unsupported(what, why):
    """The RuntimeError of a call this backend does not do."""
    return RuntimeError(f"ddp backend: {what} is not supported; {why}")


# ---- Completing works ------------------------------------------------------

class _Pending:
    """A started collective: its ddp.Request, the future torch holds, what
    the future's value is once done (finish(): may copy results out), and
    the words that name it in a failure."""

    __slots__ = ("req", "fut", "finish", "what")

    def __init__(self, req, fut, finish, what):
        self.req, self.fut, self.finish, self.what = req, fut, finish, what


class Completer:
    """One thread that completes a process group's requests in start order.

    add() queues a started request; the thread waits for the oldest in
    Request.wait() (the GIL released, other threads free to call libddp)
    and sets its future's result or exception.  Future callbacks (DDP
    comm hooks' then()) run on this thread.  The thread is a daemon, and close() (at exit, before
    libddp's finalize) lets it finish what it holds and end: a daemon
    thread stopped by the interpreter's shutdown inside torch's C++ (a
    future's callbacks) aborts the process.
    """

    _all = weakref.WeakSet()

    def __init__(self, name):
        self._queue = collections.deque()
        self._cond = threading.Condition()
        self._closing = False
        self._thread = threading.Thread(target=self._run, name=name,
                                        daemon=True)
        self._thread.start()
        Completer._all.add(self)

    @property
    def closed(self):
        """close() was called: add() refuses."""
        return self._closing

    def add(self, pending):
        """Queue pending; RuntimeError once closed (its group destroyed:
        nothing would complete it)."""
        with self._cond:
            if self._closing:
                raise _destroyed(pending.what)
            self._queue.append(pending)
            self._cond.notify()

    def close(self, timeout):
        """Complete what is queued (each within DDP_TIMEOUT: libddp fails
        a request whose peers do not come), then end the thread; wait at
        most timeout seconds for it."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join(timeout)

    def _next(self):
        """The oldest request, None once closing with none left."""
        with self._cond:
            while not self._queue and not self._closing:
                self._cond.wait()
            return self._queue[0] if self._queue else None

    def _run(self):
        while True:
            p = self._next()
            if p is None:
                return
            _settle(p.req)
            with self._cond:
                self._queue.popleft()
            _complete(p)


def close_all():
    """End every group's completer thread (see Completer): at exit, and
    when destroy_process_group() destroys every group (ddp.torch)."""
    for c in list(Completer._all):
        c.close(60.0)


atexit.register(close_all)      # after ddp's own: run before its finalize


def _destroyed(what):
    """The error of a call on a group destroy_process_group destroyed."""
    return RuntimeError(f"ddp backend: {what}: the process group was "
                        f"destroyed (destroy_process_group)")


def _settle(req):
    """Block until req completed; its outcome stays in req (wait() gives
    it again at once, raising a failure then)."""
    try:
        req.wait()
    except Exception:       # noqa: BLE001 - _complete() raises it again
        pass


def _complete(p):
    """Set p's future from its completed request: finish()'s value, or
    the failure with the torch call in front of libddp's words."""
    try:
        p.req.wait()
        value = p.finish()
    except ddp.Error as e:
        p.fut.set_exception(_failure(e, p.what))
        return
    except Exception as e:      # finish() copying out: a bug, said as is
        p.fut.set_exception(e)
        return
    p.fut.set_result(value)


def _failure(e, what):
    """A copy of ddp exception e (same class, .code, .where, .rank) whose
    message starts with the torch call."""
    new = type(e)(f"ddp backend: {what} failed: {e}")
    for attr in ("code", "where", "rank", "type_name", "remote_message"):
        if hasattr(e, attr):
            setattr(new, attr, getattr(e, attr))
    return new


def _unwrap(fut):
    """then()'s callback: the value, or the failure raised, so that the
    chained future carries it as an error that C++ sees (a Python
    set_exception() alone is a value to C++)."""
    return fut.value()


class Work(dist._Work):
    """The Work given to torch's Python functions (dist.all_reduce ...).

    torch's own Work made from a future (_create_work_from_future) never
    raises from wait() (torch 1.13 and later: FutureWrappingWork::wait
    only waits), so a failed all_reduce would return as if done.  This
    one raises the ddp exception (PeerError naming the rank, ...) from
    wait(); get_future() is the chained future, failed in C++ too, for
    comm hooks and then().  C++ callers (DDP's reducer) get torch's Work
    instead: torch 1.13 does not call a Python Work's wait() from C++.
    """

    def __init__(self, fut, chained):
        super().__init__()
        self._fut = fut
        self._chained = chained

    def wait(self, timeout=None):
        self._fut.wait()        # raises the collective's failure
        return True

    def get_future(self):
        return self._chained

    def is_completed(self):
        return self._fut.done()

    def is_success(self):
        if not self._fut.done():
            raise RuntimeError("ddp backend: is_success() before the "
                               "work completed: wait() first")
        try:
            self._fut.wait()
        except Exception:       # noqa: BLE001 - only whether it failed
            return False
        return True

    def exception(self):
        try:
            self._fut.wait()
        except Exception as e:  # noqa: BLE001 - returned, as torch's
            return e
        return None

    def result(self):
        return self._fut.wait()

    def source_rank(self):
        raise RuntimeError("ddp backend: source_rank() is for recv from any "
                           "source, which the ddp backend does not do")

    def synchronize(self):
        pass

    def abort(self):
        raise RuntimeError("ddp backend: a collective cannot be aborted; "
                           "libddp fails it within DDP_TIMEOUT when a rank "
                           "does not come")


# This file's name as its functions' code objects hold it (a string
# compare per frame: os.path.abspath on each cost 25 us a call).
_HERE = (lambda: None).__code__.co_filename


def _python_api_caller():
    """How torch's Python API (torch/distributed/distributed_c10d.py:
    dist.all_reduce ...) called this backend: None when the first caller
    outside this file is not that file (C++: DDP's reducer,
    _broadcast_coalesced; the Python frame then is whoever called into
    C++, e.g. the caller of backward()), else "waits" when that function's
    async_op is False (it calls work.wait() as soon as the backend
    returns), "returns" otherwise."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename == _HERE:
        f = f.f_back
    if f is None or (os.path.basename(f.f_code.co_filename)
                     != "distributed_c10d.py"):
        return None
    return "waits" if f.f_locals.get("async_op", None) is False else "returns"


def _work(fut, caller):
    """The Work of future fut, for caller (_python_api_caller; see
    Work)."""
    chained = fut.then(_unwrap)
    if caller is not None:
        return Work(fut, chained)
    return _create_work_from_future(chained)


def _done_work(value):
    """A Work already completed with value (nothing to move)."""
    fut = torch.futures.Future()
    fut.set_result(value)
    return _work(fut, _python_api_caller())


# ---- Tensors ---------------------------------------------------------------

def _check_tensor(t, what, name):
    """t must be a dense CPU tensor; returns it detached (same memory)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"ddp backend: {what}: {name} is a "
                        f"{type(t).__name__}, not a tensor")
    if t.device.type != "cpu":
        raise _unsupported(f"{what} of a {t.device.type} tensor",
                           "the ddp backend moves CPU tensors: use nccl "
                           "for CUDA tensors, or .cpu() them")
    if t.layout != torch.strided:
        raise _unsupported(f"{what} of a {t.layout} tensor",
                           "pass a dense tensor (.to_dense())")
    return t.detach()


def _one(tensors, what):
    """The single tensor of torch's per-device list."""
    if len(tensors) != 1:
        raise _unsupported(f"{what} of {len(tensors)} tensors in one call",
                           "one CPU tensor per call (the list form is "
                           "torch's several-GPUs-per-process API)")
    return _check_tensor(tensors[0], what, "the tensor")


def _movable(t, what):
    """(a tensor libddp moves with t's bytes, copy_back) for data that is
    only moved (broadcast, gathers): t itself for libddp's dtypes, a view
    of its bytes for bool, int16 and complex.  copy_back() is None: the
    view shares t's memory."""
    if t.dtype in _NATIVE:
        return t
    if t.dtype == torch.bool:
        return t.view(torch.uint8)
    if t.dtype == torch.int16:
        if not t.is_contiguous():
            raise _unsupported(f"{what} of a strided {t.dtype} tensor",
                               "pass a contiguous one (.contiguous())")
        return t.reshape(-1).view(torch.uint8)
    if t.is_complex():
        return torch.view_as_real(t)
    raise _unsupported(f"{what} of {t.dtype}",
                       "libddp moves int8, uint8, int16, int32, int64, "
                       "float16, bfloat16, float32, float64, bool and "
                       "complex tensors")


def _reinterpret(t, dtype):
    """t as libddp reduces a tensor of dtype: bool as uint8, complex as
    pairs of reals, the others as they are (the same memory)."""
    if dtype == torch.bool:
        return t.view(torch.uint8)
    if t.is_complex():
        return torch.view_as_real(t)
    return t


class _Reduction:
    """How to reduce tensor t with ReduceOp op on libddp: .x (the tensor
    libddp reduces, maybe a converted copy), .op (libddp's op), or
    .bitwise (BAND/BOR/BXOR, which libddp lacks: done by all-gather and a
    local reduction); finish() copies a converted result back into t."""

    def __init__(self, t, op, what):
        name = _op_name(op)
        self.t, self.x, self.op, self.bitwise = t, t, None, None
        if name == "PREMUL_SUM":
            raise _unsupported(f"{what} with ReduceOp.PREMUL_SUM",
                               "multiply by the factor, then SUM")
        if t.dtype == torch.bool:
            self._bool(name, what)
        elif name in _BITWISE:
            if t.is_floating_point() or t.is_complex():
                raise _unsupported(f"{what} with ReduceOp.{name} of "
                                   f"{t.dtype}", "bitwise ops take integer "
                                   "tensors")
            self.bitwise = name
        elif name not in _OPS:
            raise _unsupported(f"{what} with ReduceOp {name}",
                               "use SUM, PRODUCT, MIN, MAX, AVG, BAND, BOR "
                               "or BXOR")
        elif t.dtype in _NATIVE:
            self.op = _OPS[name]
        elif t.dtype == torch.int16:
            # int32 wraps as int16 does once narrowed: SUM and PRODUCT are
            # exact modulo 2**16, MIN, MAX and AVG exact.
            self.x, self.op = t.to(torch.int32), _OPS[name]
        elif t.is_complex() and name in ("SUM", "AVG"):
            self.x, self.op = torch.view_as_real(t), _OPS[name]
        else:
            raise _unsupported(f"{what} with ReduceOp.{name} of {t.dtype}",
                               "libddp reduces int8, uint8, int16, int32, "
                               "int64, float16, bfloat16, float32 and "
                               "float64 (bool: SUM, PRODUCT, MIN, MAX, BAND, "
                               "BOR; complex: SUM, AVG)")

    def _bool(self, name, what):
        """bool as uint8 0/1: any-true is MAX, all-true is MIN."""
        ops = {"SUM": "max", "MAX": "max", "BOR": "max", "PRODUCT": "min",
               "MIN": "min", "BAND": "min"}
        if name not in ops:
            raise _unsupported(f"{what} with ReduceOp.{name} of torch.bool",
                               "bool reduces with SUM, MAX, BOR (any), "
                               "PRODUCT, MIN, BAND (all)")
        self.x, self.op = self.t.view(torch.uint8), ops[name]

    def finish(self):
        """After the reduction: the int32 copy's result into int16 t."""
        if self.t.dtype == torch.int16 and self.x is not self.t:
            self.t.copy_(self.x)


_BITWISE_FN = {"BAND": torch.bitwise_and, "BOR": torch.bitwise_or,
               "BXOR": torch.bitwise_xor}


# ---- The process group -----------------------------------------------------

class ProcessGroup(dist.ProcessGroup):
    """A torch.distributed process group whose collectives run on a libddp
    group (group None: the world).  rank and size are the group's."""

    def __init__(self, rank, size, group, label):
        super().__init__(rank, size)
        self._group = group
        self._label = label
        self._torch_name = None
        self._completer = Completer(f"ddp-c10d-{label}")

    # torch 2 names each group and reads the name back (group_name: in
    # destroy_process_group, for one); its own group_name asks a C++
    # backend registered in the group, which a Python group has none of
    # ("ProcessGroup name not set"), so the name is kept here.
    def _set_group_name(self, name):
        self._torch_name = name

    @property
    def group_name(self):
        if self._torch_name is None:
            raise RuntimeError("ProcessGroup name not set")
        return self._torch_name

    def close(self):
        """End this group's completer thread after what it holds (its
        group destroyed); a later call on the group raises."""
        self._completer.close(60.0)

    # torch's name for the backend (dist.get_backend, DDP's logs).
    def getBackendName(self):
        return NAME

    def _get_backend_name(self):
        return NAME

    def __repr__(self):
        return (f"<ddp.torch ProcessGroup {self._label}: rank {self.rank()} "
                f"of {self.size()}>")

    # -- starting and completing ----------------------------------------

    def _start(self, what, start, finish):
        """Start a libddp collective (start(group) with async_op=True ->
        a ddp.Request) and return its Work; finish() gives the future's
        value once it completed.  A failure to start (bad arguments,
        a broken group) raises here, with the call named.

        When torch's Python API will wait for the Work at once (dist.
        all_reduce(t) without async_op), the request is completed here,
        on the caller's thread, rather than by the completer: the hand-offs
        to that thread and back cost 0.15-0.2 ms a call (one process: 225
        us against 3 for ddp.all_reduce).  Order holds: libddp completes a
        communicator's requests in start order, so the earlier ones have
        completed in libddp too; the completer sets their futures."""
        what = f"{what} on {self._label}"
        if self._completer.closed:
            raise _destroyed(what)
        try:
            req = start(self._group)
        except ddp.Error as e:
            raise _failure(e, what) from None
        except (TypeError, ValueError) as e:
            raise type(e)(f"ddp backend: {what}: {e}") from None
        fut = torch.futures.Future()
        caller = _python_api_caller()
        work = _work(fut, caller)
        pending = _Pending(req, fut, finish, what)
        if caller == "waits":
            _complete(pending)      # waits for req itself
        else:
            self._completer.add(pending)
        return work

    # -- all-reduce -------------------------------------------------------

    def allreduce(self, tensors, opts=None):
        t = _one(tensors, "allreduce")
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        return self._allreduce_one(t, op, "allreduce", lambda: tensors)

    def _allreduce_one(self, t, op, what, value):
        red = _Reduction(t, op, what)
        what = f"{what} of {t.numel()} {t.dtype}"
        if red.bitwise:
            return self._bitwise_allreduce(red, what, value)

        def finish():
            red.finish()
            return value()
        return self._start(what, lambda g: ddp.all_reduce(
            red.x, red.op, group=g, async_op=True), finish)

    def _bitwise_allreduce(self, red, what, value):
        """BAND/BOR/BXOR: every rank's tensor gathered, reduced here (the
        group's size times the memory of t; exact)."""
        t = red.t
        src = t.contiguous()
        parts = torch.empty((self.size(),) + tuple(src.shape),
                            dtype=src.dtype)
        fn = _BITWISE_FN[red.bitwise]

        def finish():
            acc = parts[0].clone()
            for i in range(1, self.size()):
                fn(acc, parts[i], out=acc)
            t.copy_(acc)
            return value()
        return self._start(what + f" (ReduceOp.{red.bitwise}: by all-gather)",
                           lambda g: ddp.all_gather_into(
                               _movable(parts, what), _movable(src, what),
                               group=g, async_op=True), finish)

    def allreduce_coalesced(self, tensors, opts=None):
        """Every tensor of the list reduced in one libddp call on their
        concatenation (one dtype), copied back at completion."""
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        what = "allreduce_coalesced"
        ts = [_check_tensor(t, what, "a tensor") for t in tensors]
        if not ts:
            return _done_work(list(tensors))
        if len({t.dtype for t in ts}) != 1:
            raise _unsupported(f"{what} of tensors of several dtypes",
                               "coalesce tensors of one dtype per call")
        flat = torch.cat([t.reshape(-1) for t in ts])

        def value():
            offset = 0
            for t in ts:
                n = t.numel()
                t.copy_(flat[offset:offset + n].view_as(t))
                offset += n
            return list(tensors)
        return self._allreduce_one(flat, op, what, value)

    # -- broadcast, reduce ------------------------------------------------

    def broadcast(self, tensors, opts=None):
        t = _one(tensors, "broadcast")
        root = opts.rootRank if opts is not None else 0
        x = _movable(t, "broadcast")
        what = f"broadcast of {t.numel()} {t.dtype} from rank {root}"
        return self._start(what, lambda g: ddp.broadcast(
            x, root, group=g, async_op=True), lambda: tensors)

    def reduce(self, tensors, opts=None):
        t = _one(tensors, "reduce")
        root = opts.rootRank if opts is not None else 0
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        red = _Reduction(t, op, "reduce")
        if red.bitwise:
            raise _unsupported(f"reduce with ReduceOp.{red.bitwise}",
                               "use all_reduce (done by all-gather)")
        what = f"reduce of {t.numel()} {t.dtype} to rank {root}"

        def finish():
            if self.rank() == root:
                red.finish()
            return tensors
        return self._start(what, lambda g: ddp.reduce(
            red.x, root, red.op, group=g, async_op=True), finish)

    # -- gathers -----------------------------------------------------------

    def _gather_buffer(self, t):
        """A contiguous (size, *t.shape) tensor to gather t into."""
        return torch.empty((self.size(),) + tuple(t.shape), dtype=t.dtype)

    @staticmethod
    def _check_parts(outs, t, n, what):
        if len(outs) != n:
            raise ValueError(f"ddp backend: {what}: the output list holds "
                             f"{len(outs)} tensors, not one per rank ({n})")
        for i, o in enumerate(outs):
            if o.dtype != t.dtype or o.numel() != t.numel():
                raise _unsupported(
                    f"{what} into output {i} of {o.numel()} {o.dtype} from "
                    f"an input of {t.numel()} {t.dtype}",
                    "every rank's part has the input's size and dtype "
                    "(uneven all_gather is not done)")

    def allgather(self, output_tensors, input_tensors, opts=None):
        what = "allgather"
        t = _one(input_tensors, what)
        if len(output_tensors) != 1:
            raise _unsupported(f"{what} into {len(output_tensors)} lists",
                               "one list of outputs per call")
        outs = [_check_tensor(o, what, "an output") for o in output_tensors[0]]
        self._check_parts(outs, t, self.size(), what)
        buf = self._gather_buffer(t)
        src = t.contiguous()

        def finish():
            for o, part in zip(outs, buf):
                o.copy_(part.view_as(o))
            return output_tensors
        return self._start(f"{what} of {t.numel()} {t.dtype}",
                           lambda g: ddp.all_gather_into(
                               _movable(buf, what), _movable(src, what),
                               group=g, async_op=True), finish)

    def _allgather_base(self, output, input, opts=None):
        """all_gather_into_tensor: output holds size times input, in rank
        order (any shape)."""
        what = "all_gather_into_tensor"
        out = _check_tensor(output, what, "output")
        x = _check_tensor(input, what, "input")
        if out.dtype != x.dtype or out.numel() != x.numel() * self.size():
            raise ValueError(f"ddp backend: {what}: output holds "
                             f"{out.numel()} {out.dtype}: it must hold the "
                             f"group's size ({self.size()}) times the "
                             f"input's {x.numel()} {x.dtype}")
        return self._start(f"{what} of {x.numel()} {x.dtype}",
                           lambda g: ddp.all_gather_into(
                               _movable(out, what), _movable(x, what),
                               group=g, async_op=True), lambda: [output])

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        raise _unsupported("all_gather_coalesced",
                           "torch deprecated it; call all_gather for each "
                           "tensor, or all_gather_into_tensor")

    def gather(self, output_tensors, input_tensors, opts=None):
        what = "gather"
        t = _one(input_tensors, what)
        root = opts.rootRank if opts is not None else 0
        here = self.rank() == root
        if here:
            if len(output_tensors) != 1:
                raise _unsupported(f"{what} into {len(output_tensors)} "
                                   "lists", "one list of outputs per call")
            outs = [_check_tensor(o, what, "an output")
                    for o in output_tensors[0]]
            self._check_parts(outs, t, self.size(), what)
        buf = self._gather_buffer(t) if here else None
        src = t.contiguous()

        def finish():
            if here:
                for o, part in zip(outs, buf):
                    o.copy_(part.view_as(o))
            return output_tensors
        return self._start(f"{what} of {t.numel()} {t.dtype} to rank {root}",
                           lambda g: ddp.gather_into(
                               _movable(buf, what) if here else None,
                               _movable(src, what), root, group=g,
                               async_op=True), finish)

    # -- scatters ------------------------------------------------------------

    def scatter(self, output_tensors, input_tensors, opts=None):
        """libddp has no scatter: the root's parts are broadcast (every
        rank receives the group's size times its part) and each rank
        keeps its own."""
        what = "scatter"
        t = _one(output_tensors, what)
        root = opts.rootRank if opts is not None else 0
        buf = self._gather_buffer(t)
        if self.rank() == root:
            if len(input_tensors) != 1:
                raise _unsupported(f"{what} from {len(input_tensors)} "
                                   "lists", "one list of inputs per call")
            parts = [_check_tensor(i, what, "an input")
                     for i in input_tensors[0]]
            self._check_parts(parts, t, self.size(), what)
            for slot, part in zip(buf, parts):
                slot.copy_(part.view_as(slot))
        me = self.rank()

        def finish():
            t.copy_(buf[me].view_as(t))
            return output_tensors
        return self._start(f"{what} of {t.numel()} {t.dtype} from rank "
                           f"{root} (by broadcast)",
                           lambda g: ddp.broadcast(_movable(buf, what), root,
                                                   group=g, async_op=True),
                           finish)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        what = "reduce_scatter"
        t = _one(output_tensors, what)
        if len(input_tensors) != 1:
            raise _unsupported(f"{what} from {len(input_tensors)} lists",
                               "one list of inputs per call")
        parts = [_check_tensor(i, what, "an input") for i in input_tensors[0]]
        self._check_parts(parts, t, self.size(), what)
        flat = torch.cat([p.reshape(-1) for p in parts])
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        return self._reduce_scatter(t, flat, op, what, lambda: output_tensors)

    def _reduce_scatter_base(self, output, input, opts=None):
        """reduce_scatter_tensor: input holds size times output."""
        what = "reduce_scatter_tensor"
        out = _check_tensor(output, what, "output")
        x = _check_tensor(input, what, "input")
        if out.dtype != x.dtype or x.numel() != out.numel() * self.size():
            raise ValueError(f"ddp backend: {what}: input holds {x.numel()} "
                             f"{x.dtype}: it must hold the group's size "
                             f"({self.size()}) times the output's "
                             f"{out.numel()} {out.dtype}")
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        return self._reduce_scatter(out, x.contiguous(), op, what,
                                    lambda: [output])

    def _reduce_scatter(self, out, flat, op, what, value):
        """Block rank of flat's reduction into out; flat is not written."""
        red = _Reduction(flat, op, what)
        if red.bitwise:
            raise _unsupported(f"{what} with ReduceOp.{red.bitwise}",
                               "use all_reduce (done by all-gather)")
        if flat.dtype == torch.int16:       # reduced as int32
            dst = torch.empty(out.shape, dtype=red.x.dtype)

            def finish():
                out.copy_(dst)
                return value()
        else:                               # a view of out's memory
            dst = _reinterpret(out, flat.dtype)
            finish = value
        return self._start(f"{what} of {flat.numel()} {flat.dtype}",
                           lambda g: ddp.reduce_scatter(
                               red.x, dst, red.op, group=g, async_op=True),
                           finish)

    # -- barrier -------------------------------------------------------------

    def barrier(self, opts=None):
        return self._start("barrier", lambda g: ddp.barrier(
            group=g, async_op=True), lambda: [])

    # -- what libddp does not do -------------------------------------------

    def alltoall(self, *args, **kwargs):
        raise _unsupported("all_to_all",
                           "libddp has no all-to-all; " + _GLOO_BESIDE)

    def alltoall_base(self, *args, **kwargs):
        raise _unsupported("all_to_all_single",
                           "libddp has no all-to-all; " + _GLOO_BESIDE)

    def send(self, *args, **kwargs):
        raise _unsupported("send/isend", _NO_P2P + "; " + _GLOO_BESIDE)

    def recv(self, *args, **kwargs):
        raise _unsupported("recv/irecv", _NO_P2P + "; " + _GLOO_BESIDE)

    def recv_anysource(self, *args, **kwargs):
        raise _unsupported("recv from any source", _NO_P2P)

    def monitored_barrier(self, *args, **kwargs):
        raise _unsupported("monitored_barrier", "barrier() names a rank "
                           "that does not come (ddp.TimeoutError after "
                           "DDP_TIMEOUT) or died (ddp.PeerError)")


# ---- Creating groups -------------------------------------------------------

# Made by ddp.torch's new_group wrapper on every world rank, taken by
# create() on the members: sorted world ranks -> [ddp.Group, ...].
_pending = {}
_lock = threading.Lock()


# new_group(use_local_synchronization=True) being made on this thread:
# its sorted world ranks (ddp.torch's wrapper sets it around torch's
# new_group; create() then makes the group with its members alone).
_members_only = threading.local()
# Groups made so by this process, per sorted world ranks: the members
# make the groups of one set of ranks in the same order, so the count
# tells a creation's store keys from an earlier one's (torch gives every
# group of the same ranks the same store prefix).
_member_counts = collections.Counter()


class members_only:
    """Context manager: torch's new_group(ranks, use_local_synchronization=
    True) runs inside it; create() makes the group on its members alone."""

    def __init__(self, ranks):
        self.ranks = tuple(ranks)

    def __enter__(self):
        self.was = getattr(_members_only, "ranks", None)
        _members_only.ranks = self.ranks
        return self

    def __exit__(self, *exc):
        _members_only.ranks = self.was
        return False


class _StoreGather:
    """The members' all-gather of ddp.create_group through torch's store
    for the group: each call's bytes under a key of its own, then every
    member's, waited for up to the group's timeout.

    A member that gives up marks the creation abandoned in the store; one
    that comes to it later raises at once instead of waiting out its own
    timeout for keys that never come.  Either way every member's count of
    creations of these ranks has moved on by one, so the counts stay
    together and a creation made again by every member works."""

    def __init__(self, store, ranks, rank, timeout):
        with _lock:
            _member_counts[tuple(ranks)] += 1
            n = _member_counts[tuple(ranks)]
        self.store, self.ranks, self.rank = store, ranks, rank
        self.timeout, self.calls = timeout, 0
        self.prefix = f"ddp-create/{n}"
        self.abandoned = f"{self.prefix}/abandoned"

    def _key(self, call, g):
        return f"{self.prefix}/{call}/{g}"

    def _what(self):
        return (f"ddp backend: new_group(ranks={list(self.ranks)}, "
                f"use_local_synchronization=True)")

    def _check_abandoned(self):
        if self.store.check([self.abandoned]):
            why = self.store.get(self.abandoned).decode(errors="replace")
            raise RuntimeError(
                f"{self._what()}: this creation was abandoned before world "
                f"rank {self.ranks[self.rank]} came to it ({why}); call "
                f"new_group again on every member")

    def __call__(self, data):
        call, self.calls = self.calls, self.calls + 1
        if call == 0:
            self._check_abandoned()
        keys = [self._key(call, g) for g in range(len(self.ranks))]
        self.store.set(keys[self.rank], data)
        try:
            self.store.wait(keys, self.timeout)
        except Exception as e:      # noqa: BLE001 - named below
            missing = [self.ranks[g] for g, k in enumerate(keys)
                       if not self.store.check([k])]
            self.store.set(self.abandoned,
                           f"world rank {self.ranks[self.rank]} waited "
                           f"{self.timeout} for world rank(s) {missing}")
            raise RuntimeError(
                f"{self._what()}: world rank(s) {missing} did not come "
                f"within the group's timeout ({self.timeout}): {e}") from None
        return [self.store.get(k) for k in keys]


def _create_members_only(opts, ranks):
    """The ddp.Group of ranks (sorted world ranks), made by its members
    alone through opts.store (the group's store)."""
    timeout = getattr(opts, "timeout", None) or dist.default_pg_timeout
    gather = _StoreGather(opts.store, ranks, opts.group_rank, timeout)
    return ddp.create_group(ranks, gather)


def stash(ranks, group):
    """Keep ddp.Group group (ranks: its sorted world ranks) for create()."""
    with _lock:
        _pending.setdefault(tuple(ranks), []).append(group)


def unstash(ranks, group):
    """Drop group if create() did not take it (torch's new_group failed)."""
    with _lock:
        groups = _pending.get(tuple(ranks), [])
        if group in groups:
            groups.remove(group)


def _take(ranks):
    with _lock:
        groups = _pending.get(tuple(ranks))
        return groups.pop(0) if groups else None


def _named(pg, opts):
    """pg, named as torch named its group (opts.group_id, torch 2; torch
    1.13 gives none)."""
    name = getattr(opts, "group_id", None)
    if name:
        pg._set_group_name(name)
    return pg


def create(opts, pg_options=None):
    """torch's creator of a "ddp" process group (register_backend with
    extended_api=True): opts.group_rank, group_size, global_ranks_in_group
    ([] or every rank: the world).  The world's group runs on libddp's
    world, whose ranks must be torch's (ddp.torch.init_process_group sees
    to it); any other group on the ddp.Group made by ddp.torch's
    new_group."""
    ranks = sorted(opts.global_ranks_in_group or [])
    size, rank = opts.group_size, opts.group_rank
    world = ddp.world_size()
    # new_group(use_local_synchronization=True): a group of its own, the
    # whole world's ranks too (two torch groups never share a libddp one).
    alone = bool(ranks) and \
        getattr(_members_only, "ranks", None) == tuple(ranks)
    if not alone and (not ranks or ranks == list(range(world))
                      and size == world and not _pending.get(tuple(ranks))):
        if size != world or rank != ddp.rank():
            raise RuntimeError(
                f"ddp backend: torch's rank {rank} of {size} is not "
                f"libddp's rank {ddp.rank()} of {world}: start with "
                f"ddp.torch.init_process_group(backend='ddp'), which gives "
                f"torch libddp's ranks")
        return _named(ProcessGroup(rank, size, None, "the world"), opts)
    group = _create_members_only(opts, ranks) if alone else _take(ranks)
    if group is None:
        raise RuntimeError(
            f"ddp backend: no libddp group for new_group(ranks={ranks}): "
            f"libddp makes a group with every rank of the world, so the "
            f"group must come from torch.distributed.new_group as "
            f"ddp.torch wraps it (import ddp.torch before taking "
            f"new_group from torch.distributed)")
    if group.rank != rank or group.size != size:
        raise RuntimeError(f"ddp backend: torch's rank {rank} of {size} "
                           f"in group {ranks} is libddp's {group.rank} of "
                           f"{group.size}")
    return _named(ProcessGroup(rank, size, group, f"group {ranks}"), opts)
