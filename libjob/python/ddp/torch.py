"""torch.distributed for a libddp job, without a port or a launcher's
environment: ``ddp.torch.init_process_group()``.

The ranks, the world size and the rendezvous come from libddp (under
``srun --ddp``, ``ddp-run``, a PMIx launcher such as mpirun, or a single
process); torch.distributed's store is served by rank 0 on a port the
kernel picks, reached by the others with an address, a port and a secret
that travel through libddp's own exchange (ddp._store).  So no
MASTER_ADDR or MASTER_PORT is read or bound, another job on the node cannot
hold the port or join the rendezvous, and a stranger's connection is
refused.  A single process gets a HashStore.

    import ddp.torch
    ddp.torch.init_process_group()          # gloo, or nccl under --ddp=nccl
    torch.distributed.all_reduce(t)

Importing it also registers torch.distributed's backend "ddp" (ddp._c10d):
``ddp.torch.init_process_group("ddp")`` moves the tensors with libddp's
host collectives instead of gloo's, and new_group(ranks, backend="ddp")
works through the wrapper of torch.distributed.new_group installed here
(libddp makes a group with every rank of the world; torch asks only the
members).
"""

import datetime
import os
import sys
import time

import functools
import inspect

import torch.distributed as dist
import torch.distributed.distributed_c10d as _c10d_mod

import ddp
from . import _c10d
from . import _store

__all__ = ["init_process_group", "Store", "new_group", "BACKEND"]

#: torch.distributed's name of libddp's backend.
BACKEND = _c10d.NAME

# torch.distributed's default timeout for a process group (and its store).
_DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)
_SECRET = 32


def _fail(cls, code, where, msg):
    e = cls(f"{where}: {msg}")
    e.code = code
    e.where = where
    return e


class Store(dist.Store):
    """A torch.distributed.Store on rank 0's server (ddp._store), with
    TCPStore's semantics.  Made by init_process_group(); usable as any
    store (torch.distributed.PrefixStore, new_group, barriers)."""

    def __init__(self, client, timeout):
        super().__init__()
        self._client = client
        self._secs = timeout.total_seconds()

    # torch calls these from its own threads too: the client serialises.
    def _call(self, op, items, where, wait=None):
        try:
            status, fields = self._client.call(op, items, wait)
        except _store.StoreError as e:
            raise _fail(ddp.PeerError, ddp.EPEER, where, str(e)) from None
        if status == _store.TIMEOUT:
            missing = fields[0].decode("utf-8", "replace") if fields else ""
            raise _fail(ddp.TimeoutError, ddp.ETIMEDOUT, where,
                        f"no key {missing} after {wait:g} s (the store's "
                        f"timeout): a rank did not set it")
        if status != _store.OK:
            why = fields[0].decode("utf-8", "replace") if fields else "?"
            raise _fail(ddp.Error, ddp.EINVAL, where, why)
        return fields

    @staticmethod
    def _bytes(value):
        if isinstance(value, str):
            return value.encode("utf-8")
        return bytes(value)

    @staticmethod
    def _key(key):
        return key.encode("utf-8", "surrogateescape")

    def set(self, key, value):
        self._call(_store.SET, [self._key(key), self._bytes(value)],
                   "ddp.torch.Store.set")

    def get(self, key):
        return self._call(_store.GET, [self._key(key), self._ms(self._secs)],
                          "ddp.torch.Store.get", self._secs)[0]

    def add(self, key, amount):
        out = self._call(_store.ADD, [self._key(key),
                                      str(int(amount)).encode("ascii")],
                         "ddp.torch.Store.add")
        return int(out[0])

    def compare_set(self, key, expected_value, desired_value):
        return self._call(_store.CSET, [self._key(key),
                                        self._bytes(expected_value),
                                        self._bytes(desired_value)],
                          "ddp.torch.Store.compare_set")[0]

    def check(self, keys):
        out = self._call(_store.CHECK, [self._key(k) for k in keys],
                         "ddp.torch.Store.check")
        return out[0] == b"1"

    def wait(self, keys, timeout=None):
        secs = self._secs if timeout is None else _seconds(timeout)
        self._call(_store.WAIT, [self._ms(secs)] + [self._key(k)
                                                     for k in keys],
                   "ddp.torch.Store.wait", secs)

    def delete_key(self, key):
        out = self._call(_store.DELETE, [self._key(key)],
                         "ddp.torch.Store.delete_key")
        return out[0] == b"1"

    def num_keys(self):
        return int(self._call(_store.NKEYS, [], "ddp.torch.Store.num_keys")[0])

    def set_timeout(self, timeout):
        self._secs = _seconds(timeout)

    @staticmethod
    def _ms(secs):
        return str(max(0, int(secs * 1000))).encode("ascii")


def _seconds(t):
    if isinstance(t, datetime.timedelta):
        return t.total_seconds()
    return float(t)


def _job_store(timeout):
    """Rank 0 serves; every rank gets a Store on it.  Collective."""
    server = None
    info = None
    if ddp.rank() == 0:
        server = _store.Server(os.urandom(_SECRET))
        info = (ddp.host_addrs(), server.port, server.secret)
    addrs, port, secret = ddp.broadcast_object(info, 0)
    if ddp.node_rank() == 0:        # rank 0's node: its loopback first
        addrs = ["127.0.0.1"] + [a for a in addrs if a != "127.0.0.1"]
    deadline = time.monotonic() + min(timeout.total_seconds(), 120.0)
    try:
        client = _store.Client(addrs, port, secret, deadline)
    except _store.StoreError as e:
        if server is not None:
            server.close()
        raise _fail(ddp.PeerError, ddp.EPEER, "ddp.torch.init_process_group",
                    str(e)) from None
    store = Store(client, timeout)
    store._server = server      # rank 0: the server lives as long as this
    return store


def init_process_group(backend=None, *, timeout=None, **kwargs):
    """torch.distributed.init_process_group for this libddp job: rank and
    world size from libddp (ddp.init() first if needed), the store served
    by rank 0 through libddp (no MASTER_ADDR, MASTER_PORT or other
    environment read; no fixed port bound).  backend: as torch's; None
    takes "nccl" under libddp's NCCL backend, else "gloo".  timeout: as
    torch's (a timedelta; default 30 minutes), also the store's.  Other
    keyword arguments go to torch (pg_options ...); rank, world_size,
    store and init_method are not taken.  backend="ddp": torch's
    collectives on libddp (ddp._c10d; CPU tensors).  Collective: every
    rank calls it.
    Returns the store (a ddp.torch.Store, or a HashStore for one
    process)."""
    where = "ddp.torch.init_process_group"
    for k in ("rank", "world_size", "store", "init_method"):
        if k in kwargs:
            raise TypeError(f"{where}: {k}= is libddp's to give: leave it "
                            f"out (the job's is {_given(k)})")
    if timeout is None:
        timeout = _DEFAULT_TIMEOUT
    elif not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"{where}: timeout must be a datetime.timedelta, "
                        f"not {type(timeout).__name__}")
    if backend is None:
        backend = "nccl" if ddp.backend() == "nccl" else "gloo"
    if ddp.world_size() == 1:
        store = dist.HashStore()
    else:
        store = _job_store(timeout)
    dist.init_process_group(backend, store=store, rank=ddp.rank(),
                            world_size=ddp.world_size(), timeout=timeout,
                            **kwargs)
    _live_stores.append(store)
    return store


# Every Store handed to torch, kept for the life of the process: torch
# (2.x) holds only the C++ side of a Python store, and once the caller
# drops the object it returned, the C++ side finds no Python set/get any
# more ("fn INTERNAL ASSERT FAILED ... Not implemented." from the next
# new_group's gloo, torch 2.6).
_live_stores = []


def _uses_ddp(backend):
    """Does torch backend string backend (None: the default group's) name
    libddp's backend ("ddp", "DDP", or "cpu:ddp,cuda:nccl" in torch 2)?"""
    if backend is None:
        if not dist.is_initialized():
            return False
        backend = dist.get_backend()
    parts = str(backend).lower().replace(",", ":").split(":")
    return BACKEND in parts


def _wrap_new_group(orig):
    """torch.distributed.new_group, which, for backend "ddp", first makes
    the libddp group on every world rank (ddp.new_group: collective over
    the world, as torch's new_group is) for the backend's creator to take
    on the members; with use_local_synchronization=True (the members
    alone call it) the creator makes it with them (ddp.create_group)."""
    sig = inspect.signature(orig)

    @functools.wraps(orig)
    def new_group(*args, **kwargs):
        bound = sig.bind_partial(*args, **kwargs)
        backend = bound.arguments.get("backend")
        if not _uses_ddp(backend):
            return orig(*args, **kwargs)
        where = "torch.distributed.new_group (backend ddp)"
        world = dist.get_world_size()
        if world != ddp.world_size():
            raise RuntimeError(f"{where}: torch's world of {world} is not "
                               f"libddp's {ddp.world_size()}")
        ranks = bound.arguments.get("ranks")
        members = sorted(ranks) if ranks is not None else list(range(world))
        if bound.arguments.get("use_local_synchronization"):
            # Only the members call it: the creator makes the libddp
            # group with them alone, through the group's store.
            with _c10d.members_only(members):
                return orig(*args, **kwargs)
        group = ddp.new_group(members)
        if group is not None:
            _c10d.stash(members, group)
        try:
            return orig(*args, **kwargs)
        finally:
            if group is not None:
                _c10d.unstash(members, group)
    new_group._ddp_wrapped = True
    return new_group


def _wrap_destroy(orig):
    """torch.distributed.destroy_process_group, which also ends the
    completer thread of each "ddp" group it destroys (every group when
    group is None): torch only forgets a Python group, whose thread would
    stay until exit.  The libddp group stays until ddp's finalize (freeing
    it is collective, and destroy_process_group need not be)."""
    sig = inspect.signature(orig)

    @functools.wraps(orig)
    def destroy_process_group(*args, **kwargs):
        group = sig.bind_partial(*args, **kwargs).arguments.get("group")
        result = orig(*args, **kwargs)
        if group is None:
            _c10d.close_all()
        elif isinstance(group, _c10d.ProcessGroup):
            group.close()
        return result
    destroy_process_group._ddp_wrapped = True
    return destroy_process_group


def _rebind(name, orig, wrapped):
    """Point name at wrapped in every loaded module of torch.distributed
    that holds orig under it: torch's own modules that imported it by name
    (torch 2's device_mesh calls new_group so), as well as the two public
    places.  Modules imported later take the wrapped one."""
    for mod in list(sys.modules.values()):
        mname = getattr(mod, "__name__", None) or ""
        if mname != "torch.distributed" and \
                not mname.startswith("torch.distributed."):
            continue
        if getattr(mod, name, None) is orig:
            setattr(mod, name, wrapped)


def _install():
    """Register backend "ddp" and wrap torch's new_group and
    destroy_process_group (once)."""
    if _c10d.NAME.upper() not in dist.Backend._plugins:
        kwargs = {"extended_api": True}
        # torch 2 asks which devices a backend serves (default: cpu, cuda)
        if "devices" in inspect.signature(
                dist.Backend.register_backend).parameters:
            kwargs["devices"] = ["cpu"]
        dist.Backend.register_backend(_c10d.NAME, _c10d.create, **kwargs)
    for name, wrap in (("new_group", _wrap_new_group),
                       ("destroy_process_group", _wrap_destroy)):
        orig = getattr(_c10d_mod, name)
        if not getattr(orig, "_ddp_wrapped", False):
            _rebind(name, orig, wrap(orig))


_install()
new_group = dist.new_group


def _given(k):
    if k == "rank":
        return f"rank {ddp.rank()}"
    if k == "world_size":
        return f"world size {ddp.world_size()}"
    return "libddp's own"
