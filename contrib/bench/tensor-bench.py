#!/usr/bin/env python3
"""tensor-bench.py - ddp.all_reduce() on a torch tensor against
torch.distributed's gloo all_reduce() of the same tensor, per size.

    srun --ddp=host -N2 -n2 python3 tensor-bench.py [--sizes LIST]
         [--budget BYTES] [--iters N] [--no-gloo] [--tsv FILE]

Both reduce a float32 CPU tensor of zeros in place with SUM (zeros: the
values stay the same however many calls), each call timed alone
(time.perf_counter_ns) after a warm-up; per rank the median and the
fastest call, the table the slowest rank's (as ddp-bench reports).  Before the timed
calls of each size one call with every rank's value checks the sum.
gloo joins through env:// from the variables srun --ddp sets
(MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE).  tensor-compare.sh runs it
beside ddp-bench (the C API) on the test cluster.

The TSV (rank 0): impl bytes iters median_us min_us check, impl
"py-tensor" or "gloo".
Exit status 0, 1 when a result was wrong, 2 on a usage error.
"""
import argparse
import statistics
import sys
import time

import torch

import ddp

DEFAULT_SIZES = "8,64,512,4K,32K,256K,2M,16M,64M"


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip()
    if s and s[-1].upper() in mult:
        return int(s[:-1]) * mult[s[-1].upper()]
    return int(s)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="tensor-bench.py")
    p.add_argument("--sizes", default=DEFAULT_SIZES,
                   help=f"bytes, a multiple of 4 (default {DEFAULT_SIZES})")
    p.add_argument("--budget", default="256M",
                   help="bytes to reduce per size: sets the calls (256M)")
    p.add_argument("--iters", type=int, default=1000,
                   help="most timed calls per size (1000)")
    p.add_argument("--min-iters", type=int, default=10,
                   help="fewest timed calls per size (10)")
    p.add_argument("--no-gloo", action="store_true", help="ddp only")
    p.add_argument("--tsv", help="also write the rows to FILE (rank 0)")
    o = p.parse_args(argv)
    try:
        o.sizes = [parse_size(s) for s in o.sizes.split(",")]
        o.budget = parse_size(o.budget)
    except ValueError as e:
        p.error(f"bad size: {e}")
    if any(s < 4 or s % 4 for s in o.sizes):
        p.error("sizes must be multiples of 4 bytes (float32)")
    return o


def iters_for(size, o):
    return max(o.min_iters, min(o.iters, o.budget // size))


def timed(call, t, n):
    """The median and the fastest of n calls of call(t), microseconds,
    after n // 10 + 1 untimed ones."""
    for _ in range(n // 10 + 1):
        call(t)
    ns = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        call(t)
        ns.append(time.perf_counter_ns() - t0)
    return statistics.median(ns) / 1e3, min(ns) / 1e3


def checked(call, size):
    """One call with rank + 1 everywhere: the sum of 1 .. world_size?"""
    n, r = ddp.world_size(), ddp.rank()
    t = torch.full((size // 4,), float(r + 1))
    call(t)
    return bool((t == n * (n + 1) / 2).all())


def main(argv):
    o = parse_args(argv)
    ddp.init()
    impls = [("py-tensor", lambda t: ddp.all_reduce(t))]
    if not o.no_gloo:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        impls.append(("gloo", lambda t: dist.all_reduce(t)))
    rows, bad = [], 0
    for size in o.sizes:
        n = iters_for(size, o)
        for name, call in impls:
            ok = checked(call, size)
            us, fastest = timed(call, torch.zeros(size // 4), n)
            # The slowest rank's median and fastest call; a wrong result
            # anywhere counts.
            us, fastest = ddp.all_reduce([us, fastest], "max")
            wrong = ddp.all_reduce(0 if ok else 1)
            bad += wrong > 0
            rows.append((name, size, n, us, fastest,
                         "ok" if wrong == 0 else f"FAIL:{wrong}"))
    if ddp.is_main():
        print(f"{ddp.world_size()} ranks, {ddp.num_nodes()} nodes, float32 "
              f"SUM in place; slowest rank's median call, microseconds")
        print(f"{'bytes':>10} {'impl':>10} {'iters':>6} {'median_us':>12} "
              f"{'min_us':>12} check")
        for name, size, n, us, fastest, ck in rows:
            print(f"{size:>10} {name:>10} {n:>6} {us:>12.2f} {fastest:>12.2f} "
                  f"{ck}")
        if o.tsv:
            with open(o.tsv, "w") as f:
                f.write("impl\tbytes\titers\tmedian_us\tmin_us\tcheck\n")
                for name, size, n, us, fastest, ck in rows:
                    f.write(f"{name}\t{size}\t{n}\t{us:.3f}\t{fastest:.3f}"
                            f"\t{ck}\n")
    if not o.no_gloo:
        torch.distributed.destroy_process_group()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
