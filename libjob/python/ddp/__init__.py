"""libddp for Python: the helpers a distributed training job needs.

A Python binding of libddp (slurm-ddp's job-side library), next to PyTorch:
PyTorch's process group moves the model's tensors, ddp runs the job (its
collectives also take CPU tensors, in place, through DLPack).  Launch the
program with ``srun --ddp`` (or another PMIx launcher, or alone as a single
process) and call the functions; the first call initializes the library
(PMIx finds the ranks), ``init()`` is optional, ``finalize()`` happens at
exit.

Identity:  rank(), world_size(), local_rank(), local_world_size(),
    node_rank(), num_nodes(), is_main(), is_local_main(), is_distributed(),
    backend(), version()
Collectives (every rank calls them, in the same order):  barrier(),
    broadcast_object(obj, src=0), all_reduce(x, op='sum'),
    all_reduce_dict(d, op='avg'), gather(obj, dst=0), all_gather(obj)
    (all but all_reduce_dict also on a group: group=);
    on tensors (torch's on the CPU, anything with __dlpack__) and buffers
    (numpy arrays), in place: all_reduce(x), broadcast(x, src=0),
    reduce(x, dst=0, op='sum'), all_gather_into(out, x),
    gather_into(out, x, dst=0).  Same dtype and number of elements on
    every rank (else ddp.Error, EMISMATCH); a strided tensor is copied and
    written back; CUDA tensors, complex and bool are refused (ValueError).
    reduce_scatter(x, out=None, op='sum'): block r of the reduction on
    rank r.
Groups:  split(colour, key=0, group=None) and new_group(ranks) make a
    Group (.rank, .size, .ranks, world_rank(r), free(), a with-block);
    create_group(ranks, allgather, group=None) makes one with its members
    alone (their own all-gather, e.g. over a torch store); the
    collectives, barrier(), all_reduce() and the object calls
    (broadcast_object, gather, all_gather) take group= (None: the world).
Nonblocking:  async_op=True on those collectives returns a Request
    (wait(), test(), is_completed()); the objects belong to it until done.
Work done by one rank, failures shared with all:  run_on_main(func, ...),
    main_process_only (decorator), main_only(), rank0_first(),
    local_rank0_first() (context managers or with a function),
    compute_and_broadcast(fn, src=0), reduce_and_broadcast(fn, op)
Preemption and requeue:  should_stop(), stop_signals(), stop_requested(),
    restart_count()
Data:  Sampler(n, shuffle=True, seed=0, drop_last=False)
Logging:  log(msg), log_main(msg), log_prefix()
Errors:  Error (.code, .where), PeerError, TimeoutError, RemoteError
    (.rank, .type_name, .remote_message); bad arguments raise TypeError or
    ValueError with the reason.

Failures never hang the job: an exception raised on the main rank inside
run_on_main(), main_only() or rank0_first() is raised again on that rank
and as ddp.RemoteError (with the exception's type name and message) on
every other rank; a dead rank is named in ddp.PeerError within about a
second; a late one in ddp.TimeoutError after DDP_TIMEOUT (default 30 s).
An uncaught exception that ends a rank is logged with its rank, and
ddp-run's last line names it ("rank 1 raised ValueError: bad batch 7
(exited with status 1)").
Every wait releases the GIL.  A KeyboardInterrupt during a wait is raised
when the wait ends; a second Ctrl-C during the same wait ends the process.

Inside a main-only block (run_on_main's func, main_only(), a
main_process_only function, a helper's callback) only this rank runs:
barrier() returns at once, broadcast_object() returns its object and the
helpers run here alone (as speechbrain's MAIN_PROC_ONLY); all_reduce(),
gather() and the other data collectives raise ddp.Error.

Environment: DDP_TIMEOUT, DDP_BACKEND, DDP_DEBUG, DDP_STOP_SIGNALS,
DDP_STRAGGLERS and the others of ddp(3); see ddp-python(7).
"""

import array
import atexit
import functools
import io
import os
import pickle
import sys
import traceback

from . import _ddp
from ._ddp import (
    Error, PeerError, TimeoutError, RemoteError,
    init, finalize, rank, world_size, local_rank, local_world_size,
    node_rank, num_nodes, is_main, is_local_main, is_distributed, backend,
    version, nccl_info, barrier, all_reduce, broadcast, reduce, all_gather_into,
    gather_into, reduce_scatter, split, create_group, Group, Request,
    UNDEFINED, should_stop, stop_signals, stop_requested,
    restart_count, log_prefix, host_addrs,
    OK, EINVAL, ENOINIT, ENOMEM, ENOLAUNCH, EPMIX, ETRANSPORT, ETIMEDOUT,
    EPEER, EREMOTE, EUSER, ENOTSUP, ENCCL, ECUDA, EMISMATCH,
)

__version__ = version()

__all__ = [
    "Error", "PeerError", "TimeoutError", "RemoteError",
    "init", "finalize", "rank", "world_size", "local_rank",
    "local_world_size", "node_rank", "num_nodes", "is_main", "is_local_main",
    "is_distributed", "backend", "version", "nccl_info",
    "barrier", "broadcast_object", "all_reduce", "all_reduce_dict", "gather",
    "all_gather", "broadcast", "reduce", "all_gather_into", "gather_into",
    "reduce_scatter", "split", "new_group", "create_group", "Group",
    "Request", "UNDEFINED",
    "run_on_main", "main_process_only", "main_only", "rank0_first",
    "local_rank0_first", "compute_and_broadcast", "reduce_and_broadcast",
    "should_stop", "stop_signals", "stop_requested", "restart_count",
    "Sampler", "log", "log_main", "log_prefix", "host_addrs",
    "OPS",
]

#: The reduction operations all_reduce() and all_reduce_dict() take.
OPS = ("sum", "prod", "min", "max", "avg")

_PICKLE = pickle.HIGHEST_PROTOCOL


def _check_rank(value, what, where):
    """A rank argument: an int in 0 .. world_size() - 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where}: {what} must be an int rank, not "
                        f"{type(value).__name__}")
    n = world_size()
    if not 0 <= value < n:
        raise ValueError(f"{where}: {what}={value} is not a rank of this "
                         f"job (0 .. {n - 1})")
    return value


def _check_callable(value, what, where, optional=False):
    if value is None and optional:
        return
    if not callable(value):
        raise TypeError(f"{where}: {what} must be callable, not "
                        f"{type(value).__name__}")


def _check_op(op, where):
    if not isinstance(op, str):
        raise TypeError(f"{where}: op must be a str ({', '.join(OPS)}), not "
                        f"{type(op).__name__}")
    if op not in OPS:
        raise ValueError(f"{where}: unknown op {op!r}: use one of "
                         f"{', '.join(OPS)}")


def _bind(func, args, kwargs, what, where):
    """func with its arguments, as a callable of none (run_on_main's)."""
    if args is None:
        args = ()
    if kwargs is None:
        kwargs = {}
    if isinstance(args, (str, bytes)) or not hasattr(args, "__iter__"):
        raise TypeError(f"{where}: {what}_args must be a list or tuple, not "
                        f"{type(args).__name__}")
    if not isinstance(kwargs, dict):
        raise TypeError(f"{where}: {what}_kwargs must be a dict, not "
                        f"{type(kwargs).__name__}")
    args = tuple(args)
    return lambda: func(*args, **kwargs)


# ---- Collectives on objects ------------------------------------------------

def broadcast_object(obj, src=0, group=None):
    """Return src's obj on every rank (pickled; any size).

    Only src's obj matters; the others may pass None.  If pickling fails on
    src, src raises its own exception and every other rank RemoteError
    with its type and message (speechbrain's ddp_broadcast and
    torch.distributed.broadcast_object_list leave them blocked).  Inside a
    main-only block it returns obj.  group: a ddp.Group (src is a rank of
    it), None for the world.
    """
    where = "ddp.broadcast_object"
    if group is not None:
        return _group_objects(obj, group, where, "broadcast", src)
    _check_rank(src, "src", where)
    if _ddp._in_local():
        return obj
    data = _ddp._compute_and_bcast(
        lambda: pickle.dumps(obj, protocol=_PICKLE), src, where)
    return obj if rank() == src else pickle.loads(data)


def _pickled(obj):
    """(bytes, None), or (b"", the exception pickling raised)."""
    try:
        return pickle.dumps(obj, protocol=_PICKLE), None
    except Exception as e:      # shared with the other ranks, raised here
        return b"", e


def gather(obj, dst=0, group=None):
    """Return the list of every rank's obj (rank order) on dst, None elsewhere.

    Objects are pickled, any size per rank.  A rank whose obj cannot be
    pickled raises its own exception; the others raise RemoteError naming
    it.  group: a ddp.Group (dst and the order are its ranks), None for the
    world.
    """
    where = "ddp.gather"
    if group is not None:
        return _group_objects(obj, group, where, "gather", dst)
    _check_rank(dst, "dst", where)
    data, err = _pickled(obj)
    parts = _ddp._gatherv(data, dst, err)
    return None if parts is None else [pickle.loads(p) for p in parts]


def all_gather(obj, group=None):
    """Return the list of every rank's obj (rank order) on every rank.

    As gather(), with the result everywhere (aitoolbox's mp_sync,
    axolotl's gather_from_all_ranks).  group: a ddp.Group (its ranks, in
    its order), None for the world.
    """
    if group is not None:
        return _group_objects(obj, group, "ddp.all_gather", "all_gather")
    data, err = _pickled(obj)
    return [pickle.loads(p) for p in _ddp._allgatherv(data, err)]


def _group_objects(obj, group, where, kind, root=0):
    """broadcast_object, gather or all_gather (kind) on a Group, with its
    data collectives: every rank's pickle length (negative: pickling
    failed, and the length of the error's words), then the pickles padded
    to the longest: broadcast from root, gathered on root or on all.  A
    failure is shared as the world's calls share it: raised on its rank,
    RemoteError naming the first such rank (a world rank) on the others."""
    if not isinstance(group, Group):
        raise TypeError(f"{where}: group must be a ddp.Group or None, not "
                        f"{type(group).__name__}")
    if isinstance(root, bool) or not isinstance(root, int):
        raise TypeError(f"{where}: {'src' if kind == 'broadcast' else 'dst'} "
                        f"must be an int rank, not {type(root).__name__}")
    if kind != "all_gather" and not 0 <= root < group.size:
        raise ValueError(f"{where}: {'src' if kind == 'broadcast' else 'dst'}"
                         f"={root} is not a rank of this group (0 .. "
                         f"{group.size - 1})")
    me, n = group.rank, group.size
    err = None
    data = b""
    if kind != "broadcast" or me == root:
        data, err = _pickled(obj)
    if err is not None:
        data = f"{type(err).__name__}\n{err}".encode("utf-8", "replace")
    lens = array.array("q", [0] * n)
    all_gather_into(lens, array.array("q", [-len(data) - 1 if err is not None
                                            else len(data)]), group=group)
    if any(v < 0 for v in lens):
        width = max(-v - 1 for v in lens)
        mine = bytearray(data if err is not None else b"")
        mine += bytes(width - len(mine))
        out = bytearray(width * n)
        all_gather_into(out, mine, group=group)
        if err is not None:
            raise err
        first = next(i for i, v in enumerate(lens) if v < 0)
        text = out[first * width:first * width - lens[first] - 1]
        type_name, _, message = text.decode("utf-8",
                                            "replace").partition("\n")
        others = sum(1 for v in lens if v < 0) > 1
        e = RemoteError(f"{where}: rank {group.world_rank(first)} raised "
                        f"{type_name}{': ' if message else ''}{message}"
                        f"{' (and other ranks too)' if others else ''}")
        e.code, e.where, e.rank = EREMOTE, where, group.world_rank(first)
        e.type_name, e.remote_message = type_name, message
        raise e
    if kind == "broadcast":
        buf = bytearray(data) if me == root else bytearray(lens[root])
        broadcast(buf, root, group=group)
        return obj if me == root else pickle.loads(buf)
    width = max(lens)
    mine = bytearray(data) + bytes(width - len(data))
    here = kind == "all_gather" or me == root
    out = bytearray(width * n) if here else None
    if kind == "all_gather":
        all_gather_into(out, mine, group=group)
    else:
        gather_into(out, mine, root, group=group)
    if not here:
        return None
    return [pickle.loads(out[i * width:i * width + lens[i]])
            for i in range(n)]


def _reduce_values(values, op):
    """values (one per rank, rank order) reduced with op, left to right."""
    if op == "sum" or op == "avg":
        acc = 0.0
        for v in values:
            acc += v
        return acc / len(values) if op == "avg" else acc
    if op == "prod":
        acc = 1.0
        for v in values:
            acc *= v
        return acc
    pick = min if op == "min" else max
    return pick(values)


def all_reduce_dict(d, op="avg"):
    """Reduce each value of the dict d over all ranks; return a new dict.

    Every rank passes a dict with the same str keys (in any order) and int
    or float values; the result, the same on every rank, holds each key's
    values reduced with op ('sum', 'prod', 'min', 'max', 'avg'; the default
    averages metrics).  One collective for the whole dict, which also checks
    the keys: ranks with different keys all get ddp.Error (code EMISMATCH)
    instead of averaging the wrong values (aitoolbox's mp_sync_dict,
    virtex's average_across_processes).  Values travel as float64: ints
    stay ints for sum, prod, min and max up to 2**53; 'avg' gives floats.
    """
    where = "ddp.all_reduce_dict"
    if not isinstance(d, dict):
        raise TypeError(f"{where}: d must be a dict, not {type(d).__name__}")
    _check_op(op, where)
    names = []
    for k in d:
        if not isinstance(k, str):
            raise TypeError(f"{where}: key {k!r} is not a str")
        names.append(k)
    names.sort()
    values = []
    for k in names:
        v = d[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{where}: the value of {k!r} is a "
                            f"{type(v).__name__}: values must be ints or "
                            "floats")
        values.append(float(v))
    rows = _ddp._allgather_named(names, values)
    out = {}
    for i, k in enumerate(names):
        r = _reduce_values([row[i] for row in rows], op)
        out[k] = int(r) if isinstance(d[k], int) and op != "avg" else r
    return {k: out[k] for k in d}


# ---- Groups ----------------------------------------------------------------

def new_group(ranks=None):
    """A Group of the world's ranks in ranks (None: all), torch's new_group.

    Collective over the world: every rank calls it with the same ranks
    (any order; the group's rank order is the world's).  Returns the Group
    on its members and None on the other ranks.  The ranks passed are
    compared first (one small all_reduce): ranks that pass different lists
    all raise ddp.Error (EMISMATCH); a rank whose list is malformed raises
    TypeError or ValueError, the others ddp.Error (EMISMATCH), and no group
    is made.  Made by split(): colour 0 for the members, UNDEFINED for the
    others, the world rank as key.
    """
    where = "ddp.new_group"
    me, n = rank(), world_size()
    err = None
    members = ()
    try:
        members = _member_ranks(ranks, n, where)
        tag = hash(members) & (2 ** 62 - 1)
    except (TypeError, ValueError) as e:
        err, tag = e, -1
    hi, neg_lo = all_reduce([tag, -tag], "max")
    if err is not None:
        raise err
    if hi != -neg_lo:
        raise _error(EMISMATCH, where, f"{where}: the ranks passed "
                     "different lists of ranks (or a malformed one): "
                     "every rank must pass the same")
    return split(0 if me in members else UNDEFINED, me)


def _error(code, where, msg):
    """A ddp.Error as the module raises them (.code, .where)."""
    e = Error(msg)
    e.code, e.where = code, where
    return e


def _member_ranks(ranks, n, where):
    """ranks (None: all of 0 .. n-1) as a sorted tuple of distinct ranks."""
    if ranks is None:
        return tuple(range(n))
    if isinstance(ranks, (str, bytes)) or not hasattr(ranks, "__iter__"):
        raise TypeError(f"{where}: ranks must be a list of ints, not "
                        f"{type(ranks).__name__}")
    out = []
    for r in ranks:
        if isinstance(r, bool) or not isinstance(r, int):
            raise TypeError(f"{where}: ranks holds a {type(r).__name__}: "
                            "it must hold int ranks")
        if not 0 <= r < n:
            raise ValueError(f"{where}: {r} is not a rank of this job "
                             f"(0 .. {n - 1})")
        out.append(r)
    if len(set(out)) != len(out):
        raise ValueError(f"{where}: ranks {out} holds a rank twice")
    return tuple(sorted(out))


# ---- Work done by one rank -------------------------------------------------

def run_on_main(func, args=None, kwargs=None, post_func=None, post_args=None,
                post_kwargs=None, run_post_on_main=False):
    """Run func(*args, **kwargs) on the main rank while the others wait.

    speechbrain's run_on_main: once func has returned, post_func(*post_args,
    **post_kwargs) (if given) runs on every other rank, and on main too with
    run_post_on_main=True; then every rank returns.  Use it to download or
    prepare data on main (func) and load it everywhere (post_func).  Returns
    func's result on main, None on the other ranks.

    Unlike a barrier, the end of each phase carries its outcome: if func
    raises on main, no rank runs post_func; main raises the exception and
    every other rank raises ddp.RemoteError with its type name and message.
    A post_func that raises is shared the same way.  func may run for any
    time (longer than DDP_TIMEOUT): only a dead rank ends the wait.  Inside
    func, only main runs: nested helpers run locally and barrier() returns
    at once.
    """
    where = "ddp.run_on_main"
    _check_callable(func, "func", where)
    _check_callable(post_func, "post_func", where, optional=True)
    main = _bind(func, args, kwargs, "", where)
    post = None
    if post_func is not None:
        post = _bind(post_func, post_args, post_kwargs, "post", where)
    if _ddp._in_local():        # nested: only main is here
        result = _local_call(main)
        if post is not None and run_post_on_main:
            _local_call(post)
        return result
    return _ddp._run_on_main(main, post, bool(run_post_on_main))


def _local_call(fn):
    _ddp._local_enter()
    try:
        return fn()
    finally:
        _ddp._local_exit()


def main_process_only(function):
    """Decorator: the function runs on the main rank only (None elsewhere).

    speechbrain's main_process_only: for work that one process should do
    (writing a file, logging to a web service), called by every rank or by
    main alone.  It does not synchronize; use run_on_main() or main_only()
    when the other ranks must wait for it and learn of its failure.  Inside
    it, only main runs: nested helpers run locally and barrier() returns at
    once.
    """
    _check_callable(function, "function", "ddp.main_process_only")

    @functools.wraps(function)
    def main_process_only_wrapper(*args, **kwargs):
        if not is_main():
            return None
        return _local_call(lambda: function(*args, **kwargs))

    return main_process_only_wrapper


class _Block:
    """A with-block run by one rank (or each node's first) before the others."""

    def __init__(self, kind):
        self._kind = kind
        self._block = None

    def __enter__(self):
        if self._block is not None:
            raise RuntimeError("this block is already in use: make a new one "
                               "for each with statement")
        self._block = _ddp._Block(self._kind)
        try:
            return self._block.enter()
        except BaseException:
            self._block = None      # no __exit__ after a failed __enter__
            raise

    def __exit__(self, exc_type, exc, tb):
        block, self._block = self._block, None
        block.exit(exc)
        return False


def _block(kind, func, args, kwargs, where):
    if func is None:
        if args or kwargs:
            raise TypeError(f"{where}: arguments without a function")
        return _Block(kind)
    _check_callable(func, "func", where)
    call = lambda: func(*args, **kwargs)  # noqa: E731
    if _ddp._in_local():
        return _local_call(call)
    return _ddp._helper(kind, call)


def main_only(func=None, *args, **kwargs):
    """Work on the main rank, the others waiting for its outcome.

    As a context manager the value is True on main, which runs the block,
    and False on the other ranks, which reach the block only once main has
    finished it, and must skip it (a with statement cannot)::

        with ddp.main_only() as main:
            if main:
                save_checkpoint(path)

    If main's block raises, main's exception propagates and every other
    rank raises ddp.RemoteError (type name and message) at the with.  With
    a function, main_only(func, *args, **kwargs) runs it on main only and
    returns its result there (None elsewhere), failures shared the same
    way.  axolotl's zero_only, with the synchronization it lacks.
    """
    return _block(_ddp._MAIN_ONLY, func, args, kwargs, "ddp.main_only")


def rank0_first(func=None, *args, **kwargs):
    """Rank 0 does the work first; once it succeeded, every other rank does.

    As a context manager (axolotl's zero_first)::

        with ddp.rank0_first():
            data = load_dataset(cache_dir)   # rank 0 downloads, others read

    rank 0 runs the block while the others wait at the with; then they run
    it.  If rank 0's block raises, the others do not run it and raise
    ddp.RemoteError (type name and message) at the with; a failure of
    another rank's block is raised on every rank the same way.  With a
    function, rank0_first(func, *args, **kwargs) runs it so and returns its
    result on every rank.  The wait may be longer than DDP_TIMEOUT.
    """
    return _block(_ddp._RANK0_FIRST, func, args, kwargs, "ddp.rank0_first")


def local_rank0_first(func=None, *args, **kwargs):
    """As rank0_first(), per node: local rank 0 of each node goes first.

    For node-local work, such as copying a data set to the node's local
    disk once per node.
    """
    return _block(_ddp._LOCAL_RANK0_FIRST, func, args, kwargs,
                  "ddp.local_rank0_first")


def compute_and_broadcast(fn, src=0):
    """fn() runs on src only; its result (pickled) is returned on every rank.

    axolotl's compute_and_broadcast, for any picklable result.  fn may run
    for any time.  If fn raises on src, src raises it and every other rank
    raises ddp.RemoteError with its type name and message.
    """
    return _compute_and_broadcast(fn, src, "ddp.compute_and_broadcast")


def _compute_and_broadcast(fn, src, where):
    _check_callable(fn, "fn", where)
    _check_rank(src, "src", where)
    if _ddp._in_local():
        return _local_call(fn)
    box = []

    def compute():
        box.append(fn())
        return pickle.dumps(box[0], protocol=_PICKLE)

    data = _ddp._compute_and_bcast(compute, src, where)
    return box[0] if box else pickle.loads(data)


def reduce_and_broadcast(fn, op):
    """fn() runs on every rank; the values are reduced and the result returned
    on every rank.

    axolotl's reduce_and_broadcast: op is either a name ('sum', 'prod',
    'min', 'max', 'avg': fn returns an int, a float or a sequence of them,
    reduced by all_reduce()) or a function of the list of every rank's
    value (rank order), run on rank 0 (any picklable values).  An exception
    in fn on some rank, or in op on rank 0, is raised there and as
    ddp.RemoteError on the others.
    """
    where = "ddp.reduce_and_broadcast"
    _check_callable(fn, "fn", where)
    if isinstance(op, str):
        _check_op(op, where)
    else:
        _check_callable(op, "op", where)
    if isinstance(op, str):
        value, err = _outcome(fn)
        # Every rank learns whether fn failed anywhere (raised here, and as
        # RemoteError on the others) before the values are reduced.
        _ddp._allgatherv(b"", err, where)
        return all_reduce(value, op)
    if _ddp._in_local():
        return _local_call(lambda: op([fn()]))
    value, err = _outcome(fn)
    data, perr = (b"", err) if err is not None else _pickled(value)
    parts = _ddp._gatherv(data, 0, perr, where)
    values = None if parts is None else [pickle.loads(p) for p in parts]
    return _compute_and_broadcast(lambda: op(values), 0, where)


def _outcome(fn):
    """(fn(), None), or (None, the exception fn raised)."""
    try:
        return fn(), None
    except Exception as e:      # shared with the other ranks, raised here
        return None, e


# ---- Logging ---------------------------------------------------------------

def _flush_std():
    for f in (sys.stdout, sys.stderr):
        try:
            if f is not None:
                f.flush()
        except (OSError, ValueError):
            pass


def log(msg):
    """Write msg to stderr prefixed '[ddp rank R/W] ' on every line, in one
    write (lines of several ranks never interleave).  Python's own stdout
    and stderr are flushed first, to keep the order."""
    _flush_std()
    _ddp._log(str(msg))


def log_main(msg):
    """As log(), on the main rank only."""
    _flush_std()
    _ddp._log_main(str(msg))


# ---- Sampler ---------------------------------------------------------------

_CHUNK = 4096


class Sampler:
    """The library's distributed sampler: this rank's share of n items.

    PyTorch DistributedSampler's semantics (usable as a DataLoader's
    sampler=, without importing torch): each rank gets num_samples =
    ceil(n / world_size) indices (floor with drop_last=True), the epoch's
    list padded by wrapping around so that every rank has as many; with
    shuffle the order is a permutation seeded by (seed, epoch), the same on
    every rank and every run (not torch's order: libddp computes each
    rank's indices alone, O(n / world_size) time and no memory, fine for
    10**12 items).

    Sampler(n, shuffle=True, seed=0, drop_last=False, *, world_size=None,
    rank=None): n is a count or anything with len() (a data set);
    world_size and rank default to the job's.

    set_epoch(epoch, start=0) selects the epoch (call it before each);
    start skips to that position of this rank's list, for an exact resume
    in the middle of an epoch: at step k with a batch of B per rank,
    set_epoch(e, start=k * B) yields the items a run never stopped would.
    len() is the number of indices iteration yields (num_samples - start).
    """

    def __init__(self, n, shuffle=True, seed=0, drop_last=False, *,
                 world_size=None, rank=None):
        where = "ddp.Sampler"
        if not isinstance(n, int) or isinstance(n, bool):
            try:
                n = len(n)
            except TypeError:
                raise TypeError(f"{where}: n must be an int or have len(), "
                                f"not {type(n).__name__}") from None
        if n < 0:
            raise ValueError(f"{where}: n={n} is negative")
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"{where}: seed must be an int, not "
                            f"{type(seed).__name__}")
        if not 0 <= seed < 2 ** 64:
            raise ValueError(f"{where}: seed={seed} is not in 0 .. 2**64 - 1")
        if world_size is None:
            world_size = _ddp.world_size()
        if rank is None:
            rank = _ddp.rank()
        for name, v in (("world_size", world_size), ("rank", rank)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"{where}: {name} must be an int, not "
                                f"{type(v).__name__}")
        if world_size < 1 or world_size > 2 ** 31 - 1:
            raise ValueError(f"{where}: world_size={world_size} is not a "
                             "number of ranks")
        if not 0 <= rank < world_size:
            raise ValueError(f"{where}: rank={rank} is not in 0 .. "
                             f"{world_size - 1}")
        if n >= 2 ** 63:
            raise ValueError(f"{where}: n={n} is too large (at most 2**63-1)")
        self.n = n
        self.shuffle = bool(shuffle)
        self.seed = seed
        self.drop_last = bool(drop_last)
        self.world_size = world_size
        self.rank = rank
        self.epoch = 0
        self.start = 0
        self.num_samples, self.total_size = _ddp._sampler_info(
            n, world_size, rank, self.shuffle, seed, self.drop_last)

    def _args(self):
        return (self.n, self.world_size, self.rank, self.shuffle, self.seed,
                self.drop_last, self.epoch)

    def set_epoch(self, epoch, start=0):
        """Select the epoch (with shuffle, the order depends on it) and the
        position in this rank's list to start at (0 .. num_samples)."""
        for name, v in (("epoch", epoch), ("start", start)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"ddp.Sampler.set_epoch: {name} must be an "
                                f"int, not {type(v).__name__}")
        if not 0 <= epoch < 2 ** 64:
            raise ValueError(f"ddp.Sampler.set_epoch: epoch={epoch} is not in "
                             "0 .. 2**64 - 1")
        if not 0 <= start <= self.num_samples:
            raise ValueError(f"ddp.Sampler.set_epoch: start={start} is not in "
                             f"0 .. {self.num_samples}")
        self.epoch = epoch
        self.start = start

    def indices(self, start=0, count=None):
        """The list of this rank's indices for the current epoch from
        position start (count of them; default: to the end)."""
        if count is None:
            count = self.num_samples - start
        if not 0 <= start <= self.num_samples or count < 0 \
                or start + count > self.num_samples:
            raise ValueError(f"ddp.Sampler.indices: positions {start} .. "
                             f"{start + count} are not within this rank's "
                             f"{self.num_samples}")
        return _ddp._sampler_indices(*self._args(), start, count)

    def __iter__(self):
        args = self._args()
        pos = self.start
        while pos < self.num_samples:
            k = min(_CHUNK, self.num_samples - pos)
            yield from _ddp._sampler_indices(*args, pos, k)
            pos += k

    def __len__(self):
        return self.num_samples - self.start

    def __repr__(self):
        return (f"ddp.Sampler(n={self.n}, shuffle={self.shuffle}, "
                f"seed={self.seed}, drop_last={self.drop_last}, "
                f"world_size={self.world_size}, rank={self.rank}, "
                f"epoch={self.epoch}, start={self.start})")


# ---- Exit ------------------------------------------------------------------

def _at_exit():
    """finalize() at exit, unless an uncaught exception ends the program:
    then the process only exits, and its peers name it as dead at once,
    instead of meeting its final barrier in whatever they are waiting in."""
    if not _ddp._is_initialized():
        return
    if getattr(sys, "last_value", None) is not None \
            or getattr(sys, "last_exc", None) is not None:
        return
    _flush_std()
    try:
        finalize()
    except Error as e:
        sys.stderr.write(f"ddp: finalize at exit: {e}\n")


atexit.register(_at_exit)


# The longest exception message the launcher is told (its first line).
_REASON_MAX = 300


def _exception_name(exc_type):
    """ValueError, ddp.PeerError, torch.OutOfMemoryError: the type as the
    traceback's last line names it."""
    mod = getattr(exc_type, "__module__", "builtins")
    name = getattr(exc_type, "__qualname__", exc_type.__name__)
    if mod in ("builtins", "__main__", None):
        return name
    if mod == "ddp._ddp":
        mod = "ddp"
    return f"{mod}.{name}"


def _print_whole(exc_type, value, tb):
    """The traceback in one write(2), not one per fragment as Python's own
    hook writes it: the ranks of one job share a stderr (ddp-run, a
    terminal, one file), and their tracebacks, printed at once when one
    rank's failure ends them all, must not interleave mid-line.  A hook
    the program installed itself is called as it is."""
    if _previous_excepthook is not sys.__excepthook__:
        _previous_excepthook(exc_type, value, tb)
        return
    try:
        buf = io.StringIO()
        traceback.print_exception(exc_type, value, tb, file=buf)
        data = buf.getvalue().encode(sys.stderr.encoding or "utf-8",
                                     "backslashreplace")
        sys.stderr.flush()
        fd = sys.stderr.fileno()
        while data:
            data = data[os.write(fd, data):]
    except Exception:       # no usable fd 2: Python's own way
        _previous_excepthook(exc_type, value, tb)


def _excepthook(exc_type, value, tb):
    """The program's own hook first (the traceback), then, in a job, the
    launcher is told which exception ends this rank (ddp_exit_reason): its
    closing line says "rank 1 raised ValueError: bad batch 7" rather than
    only "exited with status 1".  The process then exits as it would have
    (status 1, the atexit handlers run)."""
    if not _ddp._is_initialized():
        _previous_excepthook(exc_type, value, tb)
        return
    _print_whole(exc_type, value, tb)
    if issubclass(exc_type, KeyboardInterrupt):
        return
    try:
        text = str(value).strip().splitlines()
        text = text[0] if text else ""
        if len(text) > _REASON_MAX:
            text = text[:_REASON_MAX] + "..."
        why = f"raised {_exception_name(exc_type)}"
        _ddp._exit_reason(f"{why}: {text}" if text else why)
    except Exception:       # the hook never adds a traceback of its own
        pass


_previous_excepthook = sys.excepthook
sys.excepthook = _excepthook
