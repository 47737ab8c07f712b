"""python3 -m ddp --version: the module's version and how it finds CUDA
and NCCL (ddp.nccl_info()), without initialising anything."""

import sys

from . import nccl_info, version


def main(argv):
    """Print what was asked; return the exit status."""
    if argv in (["--version"], ["-V"]):
        print("slurm-ddp %s" % version())
        print("CUDA and NCCL: %s" % nccl_info())
        return 0
    print("usage: python3 -m ddp --version", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
