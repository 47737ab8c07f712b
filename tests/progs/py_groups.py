"""py_groups.py - groups, requests and reduce-scatter of the Python module
ddp (tests/t0720-python.t), on buffers and DLPack producers (no torch, no
numpy needed).

Usage: py_groups.py MODE, MODE one of
  single   one process: a group of one, requests, finalize with a request
           in flight
  groups   split (keys, UNDEFINED, nested), new_group, every collective
           with group=, requests (several in flight, test(), dropped ones),
           the errors: bad colour, op, sizes, ranks that disagree
  rs       reduce_scatter on the world and on groups, in place or not,
           blocking or not
Run as the ranks of a job under ddp-local-run for groups and rs (any
world size from 2; the test runs 4 and 5).  Each check prints "ok NAME" or
"FAIL NAME: why" (with the rank in a job); a mode ends with "MODE: N
checks, F failed" and exits 1 if one failed.
"""

import array
import gc
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ddp  # noqa: E402
from py_check import DLPackDoubles, check, raises, summary  # noqa: E402


class Unpicklable:
    def __reduce__(self):
        raise ValueError("no pickling: 7")


def wait_test(req, secs=20.0):
    """Poll req.test() until it says done (at most secs); True if it did."""
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if req.test():
            return True
        time.sleep(0.001)
    return False


# ---- One process -------------------------------------------------------------

def mode_single():
    g = ddp.split(0)
    check("split in a world of one: a group of one",
          isinstance(g, ddp.Group) and (g.rank, g.size, g.ranks)
          == (0, 1, (0,)), repr(g))
    check("split with UNDEFINED: None", ddp.split(ddp.UNDEFINED) is None)
    a = array.array("d", [1.5, 2.5])
    check("all_reduce on the group", ddp.all_reduce(a, group=g) is a
          and list(a) == [1.5, 2.5])
    check("all_reduce of numbers on the group",
          ddp.all_reduce([1, 2], "max", group=g) == [1, 2])
    req = ddp.all_reduce(a, async_op=True, group=g)
    check("async_op: a Request", isinstance(req, ddp.Request)
          and req.where == "ddp.all_reduce" and req.group is g, repr(req))
    check("wait returns x", req.wait() is a and req.test()
          and req.is_completed())
    check("wait again returns x again", req.wait() is a)
    b = ddp.barrier(async_op=True)
    check("async barrier", b.wait() is None)
    ng = ddp.new_group([0])
    check("new_group([0])", ng is not None and ng.ranks == (0,))
    check("new_group([]): None", ddp.new_group([]) is None)
    # finalize() completes a request in flight and frees the groups.
    req = ddp.all_reduce(array.array("i", [7]), "sum", async_op=True)
    ddp.finalize()
    check("finalize completes the requests in flight",
          req.test() and list(req.wait()) == [7])
    check("finalize frees the groups", g.freed and ng.freed, repr(g))
    raises("a freed group is refused", ValueError, "ddp.all_reduce: the "
           "group was freed", ddp.all_reduce, a, group=g)
    g.free()            # again: nothing to do
    with ddp.split(3) as h:
        check("a group in a with-block", h.size == 1 and not h.freed)
    check("freed at the end of the with-block", h.freed)
    return summary("single")


# ---- Groups ------------------------------------------------------------------

def split_checks(r, w):
    """Even and odd ranks, each ordered by descending world rank."""
    g = ddp.split(r % 2, key=-r)
    want = tuple(sorted((q for q in range(w) if q % 2 == r % 2),
                        reverse=True))
    check("split even/odd with keys: ranks in key order",
          g.ranks == want and g.size == len(want)
          and g.rank == want.index(r), repr(g))
    check("world_rank / group_rank", g.world_rank(g.rank) == r
          and g.group_rank(r) == g.rank
          and [g.world_rank(i) for i in range(g.size)] == list(want))
    raises("world_rank out of range", ValueError, "r=99 is not in 0 ..",
           g.world_rank, 99)
    other = next(q for q in range(w) if q % 2 != r % 2)
    raises("group_rank of a rank not in the group", ValueError,
           f"world rank {other} is not in the group", g.group_rank, other)
    u = ddp.split(0 if r < 2 else ddp.UNDEFINED)
    check("UNDEFINED: None; the others a group",
          (u is None) if r >= 2 else (u.ranks == (0, 1)), repr(u))
    if u is not None:
        u.free()
    sub = g.split(g.rank // 2, key=g.rank)
    mine = want[g.rank // 2 * 2:g.rank // 2 * 2 + 2]
    check("nested split (pairs of the even/odd group)",
          sub.ranks == mine and sub.rank == mine.index(r), repr(sub))
    sub2 = ddp.split(0, group=sub)
    check("split(group=) is Group.split", sub2.ranks == sub.ranks)
    sub2.free()
    check("free()", sub2.freed and "freed" in repr(sub2))
    return g, sub


def collective_checks(g, r):
    ddp.barrier(group=g)
    check("barrier(group=)", True)
    check("all_reduce of an int on the group",
          ddp.all_reduce(r, group=g) == sum(g.ranks))
    check("all_reduce of a list, max", ddp.all_reduce([r, -r], "max", group=g)
          == [max(g.ranks), -min(g.ranks)])
    a = array.array("d", [float(r), 1.0])
    ddp.all_reduce(a, "avg", group=g)
    check("all_reduce avg divides by the group's size",
          list(a) == [sum(g.ranks) / g.size, 1.0], repr(a))
    m = ddp.all_reduce(memoryview(bytes([r])), group=g)
    check("all_reduce read-only on the group: a new memoryview",
          isinstance(m, memoryview) and m.tolist() == [sum(g.ranks)])
    x = array.array("q", [r, r * 10])
    ddp.broadcast(x, src=g.size - 1, group=g)
    s = g.ranks[-1]
    check("broadcast(src= a group rank)", list(x) == [s, s * 10], repr(x))
    x = array.array("i", [r, 1])
    ddp.reduce(x, dst=0, op="sum", group=g)
    check("reduce(dst= a group rank)", list(x) == ([sum(g.ranks), g.size]
                                                   if g.rank == 0 else [r, 1]))
    out = array.array("q", [0] * (2 * g.size))
    got = ddp.all_gather_into(out, array.array("q", [r, -r]), group=g)
    want = [v for q in g.ranks for v in (q, -q)]
    check("all_gather_into on the group: group rank order",
          got is out and list(out) == want, repr(out))
    out = array.array("q", [0] * g.size)
    dst = min(1, g.size - 1)
    got = ddp.gather_into(out if g.rank == dst else None,
                          array.array("q", [r]), dst=dst, group=g)
    check("gather_into(dst=1) on the group",
          (got is out and list(out) == list(g.ranks)) if g.rank == dst
          else got is None, repr(got))
    # A strided DLPack producer, written back through its strides.
    t = DLPackDoubles([float(r), -1.0] * 3, (3,), (2,))
    ddp.all_reduce(t, group=g)
    check("all_reduce of a strided tensor on the group",
          list(t.mem) == [float(sum(g.ranks)), -1.0] * 3, list(t.mem))
    # The object calls on the group.
    check("broadcast_object(group=)", ddp.broadcast_object(
        {"from": r} if g.rank == 1 % g.size else None, src=1 % g.size,
        group=g) == {"from": g.ranks[1 % g.size]})
    got = ddp.gather(("r", r), dst=0, group=g)
    check("gather(group=)", got == [("r", q) for q in g.ranks]
          if g.rank == 0 else got is None, repr(got))
    check("all_gather(group=) of objects of several sizes",
          ddp.all_gather("x" * r, group=g) == ["x" * q for q in g.ranks])
    if g.size > 1:
        bad = g.size - 1
        obj = Unpicklable() if g.rank == bad else r
        if g.rank == bad:
            raises("all_gather(group=): an object that cannot be pickled "
                   "raises here", ValueError, "no pickling: 7", ddp.all_gather, obj,
                   group=g)
        else:
            e = raises("... RemoteError on the others, naming its world "
                       "rank", ddp.RemoteError, f"ddp.all_gather: rank "
                       f"{g.ranks[bad]} raised ", ddp.all_gather, obj,
                       group=g)
            check("... .rank, .type_name", e is not None
                  and e.rank == g.ranks[bad]
                  and e.type_name == "ValueError"
                  and e.remote_message == "no pickling: 7", repr(e))
    raises("src not a rank of the group", ValueError,
           f"ddp.broadcast: src={g.size} is not a rank of this group "
           f"(0 .. {g.size - 1})", ddp.broadcast, x, g.size, group=g)
    raises("out sized for the world, not the group", ValueError,
           f"must hold the group's size ({g.size}) times x's 1",
           ddp.all_gather_into, array.array("q", [0] * (g.size + 1)),
           array.array("q", [r]), group=g)
    raises("group= not a Group", TypeError, "group must be a ddp.Group",
           ddp.barrier, group=3)


def new_group_checks(r, w):
    new_group_of_two(r, w)
    with ddp.new_group() as every:
        check("new_group(): every rank", every.ranks == tuple(range(w))
              and every.rank == r)
    e = raises("new_group: ranks that pass different lists", ddp.Error,
               "the ranks passed different lists of ranks",
               ddp.new_group, [0, 1] if r == 0 else [0, 2])
    check("... with code EMISMATCH", e is not None and e.code == ddp.EMISMATCH)
    if r == 1:
        raises("new_group: a malformed list raises here", ValueError,
               "99 is not a rank of this job", ddp.new_group, [0, 99])
    else:
        raises("new_group: ... and ddp.Error on the others", ddp.Error,
               "different lists of ranks", ddp.new_group, [0, 1])


def new_group_of_two(r, w):
    ng = ddp.new_group([w - 1, 0])
    if r in (0, w - 1):
        check("new_group: members in world order", ng is not None
              and ng.ranks == (0, w - 1) and ng.rank == (r != 0), repr(ng))
        check("all_reduce on new_group",
              ddp.all_reduce(r + 1, group=ng) == w + 1)
        ng.free()
    else:
        check("new_group: None on the others", ng is None, repr(ng))


class FileGather:
    """An all-gather of the members' bytes through files in a directory of
    this job (keys: the call's number and the world rank), for groups made
    by their members alone."""

    def __init__(self, tag, members, secs=30.0):
        self.dir = os.path.join(os.getcwd(), f"cg-{os.getppid()}")
        os.makedirs(self.dir, exist_ok=True)
        self.tag, self.members, self.secs, self.calls = tag, members, secs, 0

    def path(self, call, w):
        return os.path.join(self.dir, f"{self.tag}.{call}.{w}")

    def put(self, call, data):
        tmp = self.path(call, ddp.rank()) + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.rename(tmp, self.path(call, ddp.rank()))

    def get(self, call, w):
        end = time.monotonic() + self.secs
        while True:
            try:
                with open(self.path(call, w), "rb") as f:
                    return f.read()
            except FileNotFoundError:
                if time.monotonic() > end:
                    raise TimeoutError(f"no file from world rank {w}")
                time.sleep(0.002)

    def __call__(self, data):
        call, self.calls = self.calls, self.calls + 1
        self.put(call, data)
        return [self.get(call, w) for w in self.members]


def create_group_checks(r, w):
    """create_group: each half of the world made by its ranks alone (the
    odd ranks make no call until the even half has made and used its
    group), a group made through a group its members share, the errors."""
    mine = [x for x in range(w - 1, -1, -1) if x % 2 == r % 2]
    done = FileGather("even-done", [0], secs=60)
    if r % 2:
        done.get(0, 0)
    g = ddp.create_group(mine, FileGather("even" if r % 2 == 0 else "odd",
                                          mine))
    check("create_group: the half, its order", g.ranks == tuple(mine)
          and g.rank == mine.index(r), repr(g))
    check("create_group: all_reduce on it",
          ddp.all_reduce(r + 1, group=g) == sum(x + 1 for x in mine))
    if r == 0:
        done.put(0, b"y")
    g.free()
    with ddp.split(r % 2) as parity:
        def over_parity(data):
            return ddp.all_gather(data, group=parity)
        n = parity.size
        with ddp.create_group(list(range(n)), over_parity,
                              group=parity) as again:
            check("create_group through a shared group",
                  again.ranks == parity.ranks
                  and ddp.all_reduce(1, group=again) == n, repr(again))

    def boom(data):
        raise ValueError("boom from the all-gather")
    raises("create_group: what allgather raises is raised", ValueError,
           "boom from the all-gather", ddp.create_group, [r], boom)
    raises("create_group: a wrong result", TypeError,
           "must return the members' bytes", ddp.create_group, [r],
           lambda data: 7)
    raises("create_group: a result of the wrong size", ValueError,
           "the all-gather returned 1 bytes", ddp.create_group, [r],
           lambda data: b"x")
    e = raises("create_group: a list without this rank", ddp.Error,
               "not in ranks", ddp.create_group, [(r + 1) % w], boom)
    check("... with code EINVAL", e is not None and e.code == ddp.EINVAL)
    raises("create_group: not callable", TypeError, "must be callable",
           ddp.create_group, [r], None)
    with ddp.create_group([r], lambda data: [data]) as alone:
        check("create_group: this rank alone", alone.ranks == (r,)
              and ddp.all_reduce(5, group=alone) == 5)


def async_checks(g, r, w):
    # Several in flight on the world, waited for in reverse order.
    arrs = [array.array("d", [float(r + i)] * 1000) for i in range(6)]
    reqs = [ddp.all_reduce(a, async_op=True) for a in arrs]
    check("async_op: Requests", all(isinstance(q, ddp.Request) for q in reqs))
    res = [q.wait() for q in reversed(reqs)][::-1]
    base = w * (w - 1) / 2
    check("several all_reduce in flight, then wait",
          all(res[i] is arrs[i] and arrs[i][0] == base + w * i
              and arrs[i][-1] == base + w * i for i in range(6)),
          repr([a[0] for a in arrs]))
    # The world and a group, interleaved.
    a, b = array.array("i", [r]), array.array("i", [r])
    qa = ddp.all_reduce(a, async_op=True)
    qb = ddp.all_reduce(b, "max", group=g, async_op=True)
    qc = ddp.barrier(group=g, async_op=True)
    check("world and group requests",
          qb.wait() is b and b[0] == max(g.ranks) and qc.wait() is None
          and qa.wait() is a and a[0] == w * (w - 1) // 2)
    # test() until done.
    c = array.array("f", [1.0] * 4096)
    q = ddp.all_reduce(c, "sum", group=g, async_op=True)
    check("test() says done, wait() then returns x",
          wait_test(q) and q.is_completed() and q.wait() is c
          and c[0] == g.size and c[-1] == g.size)
    # A blocking call after requests waits for them (order kept).
    d = array.array("q", [r])
    q = ddp.all_reduce(d, async_op=True)
    e = ddp.all_reduce(r)
    check("a blocking call after a request", e == w * (w - 1) // 2
          and q.wait() is d and d[0] == e)
    # Every collective as a request.
    x = array.array("q", [r])
    y = ddp.broadcast(x, src=0, group=g, async_op=True).wait()
    check("async broadcast", y is x and x[0] == g.ranks[0])
    x = array.array("q", [1])
    y = ddp.reduce(x, dst=0, group=g, async_op=True).wait()
    check("async reduce", y is x and x[0] == (g.size if g.rank == 0 else 1))
    out = array.array("q", [0] * w)
    y = ddp.all_gather_into(out, array.array("q", [r]), async_op=True).wait()
    check("async all_gather_into", y is out and list(out) == list(range(w)))
    out = array.array("q", [0] * g.size)
    y = ddp.gather_into(out, array.array("q", [r]), dst=0, group=g,
                        async_op=True).wait()
    check("async gather_into", (y is out and list(out) == list(g.ranks))
          if g.rank == 0 else y is None)
    m = ddp.all_reduce(memoryview(bytes([1, 2])), async_op=True).wait()
    check("async read-only: wait returns a new memoryview",
          isinstance(m, memoryview) and m.tolist() == [w, 2 * w])
    # The objects stay alive while the request holds them.
    q = _request_on_a_temporary(r)
    gc.collect()
    y = q.wait()
    check("the request keeps its object alive",
          isinstance(y, bytearray) and list(y) == [w, 2 * w])
    # Dropped requests: waited for when freed, the memory written back.
    z = array.array("d", [float(r)] * 8)
    ddp.all_reduce(z, async_op=True)        # dropped at once
    check("a dropped request completed before it went",
          list(z) == [w * (w - 1) / 2] * 8, repr(z))
    t = DLPackDoubles([float(r), 7.0] * 4, (4,), (2,))
    ddp.all_reduce(t, "max", async_op=True)
    check("a dropped request on a strided tensor: written back",
          list(t.mem) == [float(w - 1), 7.0] * 4, list(t.mem))
    q = ddp.all_reduce(array.array("i", [1]), group=g, async_op=True)
    del q
    check("a request deleted in flight, then a call on the group",
          ddp.all_reduce(1, group=g) == g.size)
    # wait() releases the GIL: another thread runs while it waits (rank 0
    # comes late).
    counter, stop = [0], [False]

    def spin():
        while not stop[0]:
            counter[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    if r == 0:
        time.sleep(0.5)
    q = ddp.all_reduce(array.array("d", [1.0]), async_op=True)
    before = counter[0]
    q.wait()
    after = counter[0]
    stop[0] = True
    t.join()
    check("wait() releases the GIL", r == 0 or after - before > 1000,
          f"{after - before} turns of another thread during the wait")
    raises("async_op with numbers", TypeError, "ddp.all_reduce: "
           "async_op=True takes a tensor or a buffer", ddp.all_reduce, 3,
           async_op=True)


def _request_on_a_temporary(r):
    return ddp.all_reduce(bytearray([1, 2]), async_op=True)


def error_checks(r, w):
    g = ddp.split(0, key=-r)
    raises("split: colour not an int", TypeError, "", ddp.split, "red")
    a = array.array("d", [1.0])
    raises("a bad op", ValueError, "ddp.all_reduce: unknown op 'median'",
           ddp.all_reduce, a, "median", group=g)
    raises("reduce_scatter: x not a multiple of the size", ValueError,
           f"ddp.reduce_scatter: x holds {w + 1} elements: it must hold a "
           f"multiple of world_size ({w})", ddp.reduce_scatter,
           array.array("d", [0.0] * (w + 1)))
    raises("reduce_scatter: out of the wrong size", ValueError,
           f"out holds 3 elements: it must hold x's {2 * w} divided by "
           f"world_size ({w}), 2", ddp.reduce_scatter,
           array.array("d", [0.0] * (2 * w)), array.array("d", [0.0] * 3))
    raises("reduce_scatter: out of another dtype", ValueError,
           "out holds float32 elements and x float64", ddp.reduce_scatter,
           array.array("d", [0.0] * w), array.array("f", [0.0]))
    x = array.array("d", [0.0] * (2 * w))
    wrong = memoryview(x)[(r + 1) % w * 2:(r + 1) % w * 2 + 2]
    raises("reduce_scatter: out overlapping x, not this rank's block",
           ValueError, "out shares memory with x but is not this rank's "
           "block", ddp.reduce_scatter, x, wrong)
    raises("reduce_scatter: a read-only x in place", ValueError,
           "x (a memoryview) is read-only", ddp.reduce_scatter,
           memoryview(bytes(w)))
    raises("reduce_scatter: a bad op", ValueError, "unknown op 'avgg'",
           ddp.reduce_scatter, array.array("d", [0.0] * w), None, "avgg")
    # Ranks that pass different sizes on a group: ddp.Error (EMISMATCH)
    # on each, blocking and at wait(); the group is broken then (a
    # mismatch is sticky), the others go on.
    g2 = ddp.split(0, key=r)
    n = 3 if g.rank == 0 else 4
    e = raises("different sizes on a group: ddp.Error", ddp.Error,
               "ddp.all_reduce: ranks disagree: the ranks passed different "
               "data", ddp.all_reduce, array.array("d", [1.0] * n), group=g)
    check("... EMISMATCH", e is not None and e.code == ddp.EMISMATCH,
          repr(e))
    raises("... the group is broken: the next call raises at once",
           ddp.Error, "broke the collectives of this group",
           ddp.all_reduce, array.array("d", [1.0]), group=g, async_op=True)
    q = ddp.all_reduce(array.array("d", [1.0] * n), group=g2, async_op=True)
    e = raises("... and at wait() of a request", ddp.Error,
               "ddp.all_reduce: ranks disagree", q.wait)
    check("... EMISMATCH at wait(), again at a second wait()",
          e is not None and e.code == ddp.EMISMATCH
          and q.test() and raises("second wait", ddp.Error, "", q.wait)
          is not None)
    g.free()
    g2.free()
    check("the world goes on", ddp.all_reduce(1) == w)
    ddp.barrier()


def mode_groups():
    r, w = ddp.rank(), ddp.world_size()
    g, sub = split_checks(r, w)
    collective_checks(g, r)
    collective_checks(sub, r)
    new_group_checks(r, w)
    create_group_checks(r, w)
    async_checks(g, r, w)
    error_checks(r, w)
    bad_colour_checks(r, w)
    sub.free()
    g.free()
    ddp.barrier()
    return summary("groups")


def bad_colour_checks(r, w):
    """A bad colour on rank 1: EINVAL there (it takes part as UNDEFINED),
    the others get their group and use it; then a split of every rank."""
    if r == 1:
        e = raises("split: a bad colour", ddp.Error, "ddp.split: invalid "
                   "argument", ddp.split, -5)
        check("... EINVAL", e is not None and e.code == ddp.EINVAL)
    else:
        g = ddp.split(0)
        check("split: the others get theirs without rank 1",
              g is not None and g.ranks == tuple(q for q in range(w)
                                                 if q != 1), repr(g))
        check("... and use it", ddp.all_reduce(1, group=g) == w - 1)
        g.free()
    with ddp.split(r % 2) as g:
        check("a split after those", g.size == (w + 1 - r % 2) // 2)


# ---- Reduce-scatter -----------------------------------------------------------

def mode_rs():
    r, w = ddp.rank(), ddp.world_size()
    n = 3
    vals = [float(r * 100 + i) for i in range(w * n)]
    want = [100.0 * w * (w - 1) / 2 + w * (r * n + j) for j in range(n)]
    out = array.array("d", [0.0] * n)
    got = ddp.reduce_scatter(array.array("d", vals), out)
    check("reduce_scatter into out", got is out and list(out) == want,
          f"{list(out)} != {want}")
    x = array.array("d", vals)
    got = ddp.reduce_scatter(x)
    check("reduce_scatter in place (out=None): this rank's block of x",
          got is x and list(x[r * n:r * n + n]) == want, repr(x))
    x = array.array("d", vals)
    block = memoryview(x)[r * n:r * n + n]
    got = ddp.reduce_scatter(x, block)
    check("reduce_scatter in place (out is x's block)",
          got is block and list(x[r * n:r * n + n]) == want)
    x = array.array("i", [r + 1] * (2 * w))
    ddp.reduce_scatter(x, op="max")
    check("reduce_scatter max", list(x[2 * r:2 * r + 2]) == [w, w])
    out = array.array("i", [0, 0])
    ddp.reduce_scatter(array.array("i", [r] * (2 * w)), out, "avg")
    check("reduce_scatter avg of ints: truncated",
          list(out) == [(w * (w - 1) // 2) // w] * 2, repr(out))
    t = DLPackDoubles([float(r), -1.0] * w, (w,), (2,))
    ddp.reduce_scatter(t)
    check("reduce_scatter of a strided tensor in place",
          t.mem[2 * r] == w * (w - 1) / 2, list(t.mem))
    out = array.array("d")
    check("reduce_scatter of nothing",
          ddp.reduce_scatter(array.array("d"), out) is out)
    # On groups.
    g = ddp.split(r % 2, key=r)
    x = array.array("q", [r] * (2 * g.size))
    out = array.array("q", [0, 0])
    ddp.reduce_scatter(x, out, group=g)
    check("reduce_scatter on a group", list(out) == [sum(g.ranks)] * 2,
          repr(out))
    xs = [array.array("d", [float(r + i)] * (4 * g.size)) for i in range(4)]
    reqs = [ddp.reduce_scatter(xi, group=g, async_op=True) for xi in xs]
    res = [q.wait() for q in reqs]
    check("several async reduce_scatter on a group",
          all(res[i] is xs[i] and list(xs[i][4 * g.rank:4 * g.rank + 4])
              == [float(sum(g.ranks) + g.size * i)] * 4 for i in range(4)))
    out = array.array("d", [0.0])
    q = ddp.reduce_scatter(array.array("d", [1.0] * w), out, "sum",
                           async_op=True)
    check("async reduce_scatter on the world", wait_test(q)
          and q.wait() is out and out[0] == w)
    g.free()
    ddp.barrier()
    return summary("rs")


def main(argv):
    mode = argv[1] if len(argv) > 1 else ""
    if mode == "single":
        return mode_single()
    if mode == "groups":
        return mode_groups()
    if mode == "rs":
        return mode_rs()
    print(f"py_groups.py: unknown mode {mode!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
