"""py-perf.py - the latency of ddp.barrier() and of an 8-byte
ddp.all_reduce() through the Python module, printed on rank 0 in the form
of tests/progs/ddp_perf (the same loops in C) so that python-overhead.sh
can put them side by side.

Usage (as the ranks of a job): py-perf.py [ITERS]
"""
import array
import sys
import time

import ddp


def timed(fn, iters):
    ddp.barrier()
    t = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - t) / iters * 1e6


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    buf = array.array("d", [1.0])
    for _ in range(1000):
        ddp.barrier()
    results = [
        ("barrier", timed(ddp.barrier, iters)),
        ("allreduce 8 B", timed(lambda: ddp.all_reduce(1.0), iters)),
        ("allreduce 8 B buffer", timed(lambda: ddp.all_reduce(buf), iters)),
    ]
    if ddp.is_main():
        for name, us in results:
            print(f"{name:<20} {us:8.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
