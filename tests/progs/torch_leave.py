"""torch_leave.py MODE: one rank leaves while the others wait in gloo.

Every rank joins a gloo process group (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT from srun --ddp or ddp-run) and makes one all_reduce with the
others; then rank 1 calls sys.exit(0) and the others enter a second
all_reduce, which gloo fails when rank 1's process is gone.  They print

    rank R: gloo failed S s after rank 1 left: TYPE

(S: seconds from rank 1's sys.exit to the failure, on the wall clock of
the machine; all the test's nodes are one machine) and exit 1.

MODE ddp: the program does `import ddp` and asks ddp.rank(), so libddp is
initialized and ddp.finalize() runs at exit (also on the failing ranks,
after rank 1 left: it must be quiet).  MODE plain: no ddp, the same
program, for the time it takes without libddp.
"""
import os
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "ddp"
if mode == "ddp":
    import ddp
    rank, size = ddp.rank(), ddp.world_size()
else:
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])

import torch                    # noqa: E402 (after ddp, as a program would)
import torch.distributed as dist  # noqa: E402

dist.init_process_group(
    "gloo", rank=rank, world_size=size,
    init_method=f"tcp://{os.environ['MASTER_ADDR']}:"
                f"{os.environ['MASTER_PORT']}")
t = torch.ones(4)
dist.all_reduce(t)
stamp = os.path.join(os.environ.get("LEAVE_DIR", "."), "left.at")
if rank == 1:
    with open(stamp + ".tmp", "w") as f:
        f.write(f"{time.time():.6f}\n")
    os.rename(stamp + ".tmp", stamp)
    print(f"rank 1: sys.exit(0) after {t[0].item():.0f}", flush=True)
    sys.exit(0)
try:
    dist.all_reduce(t)
    print(f"rank {rank}: the all_reduce without rank 1 succeeded?",
          flush=True)
    sys.exit(2)
except Exception as e:      # gloo's RuntimeError
    end = time.time()
    try:
        with open(stamp) as f:
            left = float(f.read())
        took = f"{end - left:.2f}"
    except OSError:
        took = "?"
    print(f"rank {rank}: gloo failed {took} s after rank 1 left: "
          f"{type(e).__name__}", flush=True)
    sys.exit(1)
