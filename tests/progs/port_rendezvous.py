"""port_rendezvous.py: meet at MASTER_ADDR:MASTER_PORT as PyTorch's
env:// does (t0156).  RANK 0 listens on 0.0.0.0:MASTER_PORT and waits
(20 s at most) for a line from each of the WORLD_SIZE - 1 others, which
connect to MASTER_ADDR:MASTER_PORT (retrying for 20 s while nothing
listens) and send "rank R".  Rank 0 prints "rendezvous of N ranks on
PORT"; the others "rank R met rank 0 on PORT".  Exits 1 with a message on
a failure.
"""
import os
import socket
import sys
import time


def serve(port, others):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(64)
    s.settimeout(20)
    seen = set()
    while len(seen) < others:
        c, _ = s.accept()
        c.settimeout(20)
        line = c.makefile().readline().split()
        if len(line) == 2 and line[0] == "rank":
            seen.add(line[1])
            c.sendall(b"ok\n")
        c.close()
    print("rendezvous of %d ranks on %d" % (others + 1, port), flush=True)


def join(addr, port, rank):
    deadline = time.time() + 20
    while True:
        try:
            c = socket.create_connection((addr, port), timeout=5)
            c.sendall(b"rank %d\n" % rank)
            if c.makefile().readline().strip() != "ok":
                raise OSError("no ok from %s:%d" % (addr, port))
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    print("rank %d met rank 0 on %d" % (rank, port), flush=True)


def main():
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    port = int(os.environ["MASTER_PORT"])
    try:
        if rank == 0:
            serve(port, size - 1)
        else:
            join(os.environ["MASTER_ADDR"], port, rank)
    except OSError as e:
        print("port_rendezvous: rank %d: %s" % (rank, e), file=sys.stderr)
        sys.exit(1)


main()
