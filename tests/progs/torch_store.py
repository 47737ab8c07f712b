"""torch_store.py MODE: ddp.torch's store and init_process_group.

semantics   one process: the same operations on a ddp.torch.Store (a
            server of ddp._store and a client of it) and on torch's
            TCPStore give the same results, timeouts and errors included
            (check(), empty and large values against the values: torch
            1.13 has no check() in Python, and its TCPStore gets those
            two wrong); prints "semantics: N operations against TCPStore,
            M differ; ..." and each difference.
strangers   one process: what a stranger gets from a store: garbage and a
            wrong secret are refused, 300 silent connections leave a
            client's round trips fast, a client skips another job's store
            on its first address, a closed server fails a call at once.
            Prints "strangers: N checks, M failed".
job         in a job (srun --ddp, ddp-run, mpirun): init_process_group()
            with no MASTER_ADDR/MASTER_PORT in the environment, then gloo
            collectives on the world and on a new group.  Each rank prints
            "rank R/N node K on HOST: job ok, store at ADDR, init S s"
            (ADDR: where its client reached rank 0's store; none for
            one process, whose store is a HashStore).
unreachable in a job: rank 0's store stops listening before anyone
            connects (a server closed at once); init_process_group with a
            2 s timeout raises ddp.PeerError on every rank, saying it could
            not reach rank 0's store and what each address did.  Each rank
            prints "rank R: PeerError after S s: MESSAGE".
"""
import datetime
import os
import socket
import sys
import time

import ddp
import ddp.torch
from ddp import _store

import torch
import torch.distributed as dist

_checks = [0, 0]


def check(name, ok, detail=""):
    _checks[0] += 1
    if not ok:
        _checks[1] += 1
        print(f"FAIL {name}: {detail}", flush=True)


def local_store(secret=b"s" * 32, timeout=5.0):
    server = _store.Server(secret, host="127.0.0.1")
    client = _store.Client(["127.0.0.1"], server.port, secret,
                           time.monotonic() + 5)
    st = ddp.torch.Store(client, datetime.timedelta(seconds=timeout))
    return server, st


# ---- semantics ---------------------------------------------------------------

def outcome(fn):
    """What an operation gave: ("value", v) or ("raised", "timeout" or
    "error"); None when the store has no such method (torch 1.13's
    Python stores have no check())."""
    try:
        v = fn()
    except AttributeError:
        return None
    except Exception as e:          # noqa: B902 - any failure is an outcome
        text = str(e).lower()
        timeout = "timeout" in text or "timed out" in text
        return ("raised", "timeout" if timeout else "error")
    if isinstance(v, (bytes, bytearray)):
        v = bytes(v)
    return ("value", v)


def script(st):
    """The operations compared, each as (name, callable on st).  num_keys
    as a difference: TCPStore counts a key of its own."""
    short = datetime.timedelta(milliseconds=200)
    base = []
    return [
        ("num_keys at start", lambda: base.append(st.num_keys())),
        ("set str", lambda: st.set("a", "alpha")),
        ("get str", lambda: st.get("a")),
        ("set bytes", lambda: st.set("b", b"\x00\xffbeta")),
        ("get bytes", lambda: st.get("b")),
        ("set again", lambda: st.set("a", "again")),
        ("get again", lambda: st.get("a")),
        ("add new", lambda: st.add("n", 5)),
        ("add more", lambda: st.add("n", -2)),
        ("add zero", lambda: st.add("n", 0)),
        ("get counter", lambda: st.get("n")),
        ("check present", lambda: st.check(["a", "b", "n"])),
        ("check missing", lambda: st.check(["a", "nope"])),
        ("num_keys", lambda: st.num_keys() - base[0]),
        ("cset missing, empty expected", lambda: st.compare_set("c", "", "one")),
        ("get cset", lambda: st.get("c")),
        ("cset missing, expected given", lambda: st.compare_set("d", "x", "two")),
        ("cset match", lambda: st.compare_set("c", "one", "three")),
        ("cset no match", lambda: st.compare_set("c", "zzz", "four")),
        ("get after csets", lambda: st.get("c")),
        ("delete present", lambda: st.delete_key("c")),
        ("delete missing", lambda: st.delete_key("c")),
        ("num_keys after delete", lambda: st.num_keys() - base[0]),
        ("wait present", lambda: st.wait(["a", "n"])),
        ("wait missing (timeout given)", lambda: st.wait(["never"], short)),
        ("set_timeout", lambda: st.set_timeout(short)),
        ("get missing (store timeout)", lambda: st.get("never")),
        ("wait missing (store timeout)", lambda: st.wait(["never"])),
        ("value of 64 KiB", lambda: st.set("mid", b"m" * 65536)),
        ("get 64 KiB", lambda: st.get("mid")),
    ]


def mode_semantics():
    """Against TCPStore (what env:// uses), then what 1.13's TCPStore gets
    wrong, against the values themselves."""
    server, mine = local_store()
    # torch 2.4+ asks for libuv by default, which Debian 13's torch 2.6
    # lacks ("use_libuv was requested but PyTorch was build without libuv
    # support"): the classic server, which answers the same.
    extra = {}
    if "use_libuv" in (dist.TCPStore.__init__.__doc__ or ""):
        extra["use_libuv"] = False
    theirs = dist.TCPStore("127.0.0.1", 0, 1, True,
                           timeout=datetime.timedelta(seconds=5), **extra)
    ops_mine, ops_theirs = script(mine), script(theirs)
    differ = compared = 0
    for (name, a), (_, b) in zip(ops_mine, ops_theirs):
        ra, rb = outcome(a), outcome(b)
        if rb is None:          # not in this torch: checked below
            continue
        compared += 1
        if ra != rb:
            differ += 1
            print(f"differs: {name}: ddp {ra}, TCPStore {rb}", flush=True)
    mine.set_timeout(datetime.timedelta(seconds=5))
    check("check present", mine.check(["a", "b", "n"]) is True)
    check("check missing", mine.check(["a", "nope"]) is False)
    check("check after a failed compare_set", mine.check(["d"]) is False)
    # TCPStore 1.13 times out on a key set to b"" and returns b"" for a
    # value of 3 MiB; these are the values.
    mine.set("e", b"")
    check("an empty value", mine.get("e") == b"")
    mine.set("big", b"x" * (3 << 20))
    check("a value of 3 MiB", mine.get("big") == b"x" * (3 << 20))
    server.close()
    print(f"semantics: {compared} operations against TCPStore, {differ} "
          f"differ; {_checks[0]} checks of values, {_checks[1]} failed",
          flush=True)
    return 1 if differ or _checks[1] else 0


# ---- strangers ---------------------------------------------------------------

def closed_soon(sock, secs=3.0):
    """The server closed sock within secs (EOF after what it sent)."""
    sock.settimeout(secs)
    try:
        while sock.recv(4096):
            pass
        return True
    except (socket.timeout, OSError):
        return False


def mode_strangers():
    secret = os.urandom(32)
    server, st = local_store(secret)
    st.set("k", b"v")

    # Garbage instead of a handshake: closed.
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(b"GET / HTTP/1.0\r\n\r\n" * 8)
    check("garbage is closed", closed_soon(s))
    s.close()

    # A well-formed handshake with a wrong secret: closed, nothing read.
    try:
        _store.Client(["127.0.0.1"], server.port, b"w" * 32,
                      time.monotonic() + 1.5)
        check("a wrong secret is refused", False, "it connected")
    except _store.StoreError as e:
        check("a wrong secret is refused", "could not reach" in str(e)
              and "closed the connection at the handshake" in str(e), str(e))

    # 300 silent connections (more than PENDING_MAX): a client's round
    # trips stay fast, and the oldest silent ones are closed.
    silent = [socket.create_connection(("127.0.0.1", server.port))
              for _ in range(300)]
    t0 = time.monotonic()
    for i in range(200):
        st.set(f"r{i}", b"x")
        st.get(f"r{i}")
    took = time.monotonic() - t0
    print(f"strangers: 200 set+get with 300 silent connections: "
          f"{took * 1000:.0f} ms", flush=True)
    check("silent strangers do not slow a client", took < 2.0, f"{took:.2f} s")
    check("the oldest silent connections are closed",
          closed_soon(silent[0], 1.0))
    fresh = socket.create_connection(("127.0.0.1", server.port))
    client = _store.Client(["127.0.0.1"], server.port, secret,
                           time.monotonic() + 5)
    check("a new client gets in beside them",
          client.call(_store.GET, [b"k", b"1000"])[1] == [b"v"])
    for x in silent + [fresh]:
        x.close()
    client.close()

    # Another job's store on the first address, ours on the second, the
    # same port (as a docker0 address every node has): skipped.
    other = _store.Server(os.urandom(32), host="127.0.0.2")
    ours = _store.Server(secret, host="127.0.0.1", port=other.port)
    c = _store.Client(["127.0.0.2", "127.0.0.1"], other.port, secret,
                      time.monotonic() + 5)
    check("another job's store is skipped", c.addr == "127.0.0.1", c.addr)
    c.close()
    other.close()
    ours.close()

    # The server goes away: the next call fails at once, naming it.
    t0 = time.monotonic()
    server.close()
    try:
        st.get("k")
        check("a closed store fails the call", False, "get returned")
    except ddp.PeerError as e:
        took = time.monotonic() - t0
        check("a closed store fails the call", took < 2.0
              and "rank 0's store" in str(e), f"{took:.2f} s: {e}")
    print(f"strangers: {_checks[0]} checks, {_checks[1]} failed", flush=True)
    return 1 if _checks[1] else 0


# ---- job -----------------------------------------------------------------------

def mode_job():
    for v in ("MASTER_ADDR", "MASTER_PORT"):
        check(f"no {v}", v not in os.environ, os.environ.get(v, ""))
    t0 = time.monotonic()
    store = ddp.torch.init_process_group(
        timeout=datetime.timedelta(seconds=60))
    took = time.monotonic() - t0
    r, n = ddp.rank(), ddp.world_size()
    check("rank", dist.get_rank() == r, f"{dist.get_rank()} != {r}")
    check("world size", dist.get_world_size() == n)
    x = torch.full((5,), float(r + 1))
    dist.all_reduce(x)
    check("all_reduce", x.tolist() == [n * (n + 1) / 2] * 5, str(x))
    ys = [torch.zeros(3) for _ in range(n)]
    dist.all_gather(ys, torch.full((3,), float(r)))
    check("all_gather", [y.tolist() for y in ys]
          == [[float(i)] * 3 for i in range(n)])
    b = torch.full((2,), float(r))
    dist.broadcast(b, src=n - 1)
    check("broadcast", b.tolist() == [float(n - 1)] * 2, str(b))
    # A group made after init: torch rendezvouses it through the store.
    g = dist.new_group(list(range(0, n, 2)))
    if r % 2 == 0:
        z = torch.ones(1)
        dist.all_reduce(z, group=g)
        check("a new group's all_reduce", z.item() == len(range(0, n, 2)))
    dist.barrier()
    where = getattr(getattr(store, "_client", None), "addr", "none")
    print(f"rank {r}/{n} node {ddp.node_rank()} on {socket.gethostname()}: "
          f"job {'ok' if not _checks[1] else 'FAILED'}, store at {where}, "
          f"init {took:.2f} s", flush=True)
    dist.destroy_process_group()
    return 1 if _checks[1] else 0


# ---- unreachable --------------------------------------------------------------

class _GoneServer(_store.Server):
    """A store that closes as soon as it is made: its port refuses."""

    def __init__(self, secret):
        super().__init__(secret)
        self.close()


def mode_unreachable():
    _store.Server = _GoneServer
    t0 = time.monotonic()
    try:
        ddp.torch.init_process_group(timeout=datetime.timedelta(seconds=2))
        print(f"rank {ddp.rank()}: FAIL: init_process_group returned",
              flush=True)
        return 1
    except ddp.PeerError as e:
        # One write: the ranks share this stdout, and print() writes the
        # line and its newline apart (unbuffered, as here).
        sys.stdout.write(f"rank {ddp.rank()}: PeerError after "
                         f"{time.monotonic() - t0:.1f} s: {e}\n")
        sys.stdout.flush()
    # The ranks leave together: the first to finish must not end the
    # others' wait for the store as a lost rank.
    ddp.barrier()
    return 0


def main(argv):
    modes = {"semantics": mode_semantics, "strangers": mode_strangers,
             "job": mode_job, "unreachable": mode_unreachable}
    if len(argv) != 2 or argv[1] not in modes:
        print(f"usage: torch_store.py {'|'.join(modes)}", file=sys.stderr)
        return 2
    return modes[argv[1]]()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
