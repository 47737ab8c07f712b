"""port_squatter.py LO HI SECONDS [FREE...]: squat a node's MASTER_PORT
range as a user with no privilege would (t0156): bind the abstract
AF_UNIX name the plugin once claimed its ports with
("slurm-ddp/master-port/PORT") for every port LO..HI, and listen on TCP
0.0.0.0:PORT for every one of them but the FREE ports.  Prints "squatting
N names, M listeners as uid U" (flushed) once all are held, then sleeps
SECONDS (or until killed), after a line "pid P" (its own pid, for the
test to kill it: as nobody under setpriv and nsenter, $! is not it).  A
port it cannot bind is skipped, said on stderr.
"""
import os
import socket
import sys
import time


def main():
    lo, hi, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    free = {int(p) for p in sys.argv[4:]}
    held, names, listeners = [], 0, 0
    for port in range(lo, hi + 1):
        u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            u.bind(b"\0slurm-ddp/master-port/%d" % port)
            held.append(u)
            names += 1
        except OSError as e:
            print("port_squatter: name %d: %s" % (port, e), file=sys.stderr)
        if port in free:
            continue
        t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            t.bind(("0.0.0.0", port))
            t.listen(8)
            held.append(t)
            listeners += 1
        except OSError as e:
            print("port_squatter: tcp %d: %s" % (port, e), file=sys.stderr)
    print("pid %d" % os.getpid())
    print("squatting %d names, %d listeners as uid %d"
          % (names, listeners, os.getuid()), flush=True)
    time.sleep(secs)


main()
