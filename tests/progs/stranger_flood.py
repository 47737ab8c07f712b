#!/usr/bin/env python3
"""stranger_flood.py - another user's process holding silent connections to
the listening ports of a job's ranks (t0265-ddp-strangers.t).

Usage (as root): stranger_flood.py COMM CONNS PHASE_FILE ON_PHASES
The parent, root, finds the processes named COMM (the job's ranks) and the
TCP ports they listen on (/proc/PID/fd against /proc/PID/net/tcp: what
`ss -ltnp` shows), as soon as they appear and for as long as they live,
and reads PHASE_FILE (written by progs/ddp_loop: a phase number, "end"
after the last).  Its child, which drops to the user nobody before it opens
anything, holds CONNS silent connections to every port while the phase is
one of ON_PHASES (comma-separated numbers; and before the file exists: the
flood is on while the ranks start), none in the others, and opens a new one
for every one the ranks close.  The parent ends when PHASE_FILE says "end" or the ranks are
gone; the child then prints (one line)
  "stranger_flood: ports P conns C opened O closed_by_job K
   opened_in_setup S cpu_s T"
(P: the ports it found, however many were still listening at the end:
the ranks of a node that finish first close theirs before the phase file
says "end"; O: connections it opened, K: of those, closed by
the other end, S: opened before ddp_loop's first phase began, while the
ranks were still in ddp_init, T: the CPU seconds the child used: the
strangers' own load on the machine).
With STRANGER_FLOOD_DECOY=1 in the environment the child opens as many
connections, at the same times, to a listening socket of its own that
never accepts instead of the ranks' ports: the control, everything the
strangers do but to someone else.
"""
import errno
import os
import pwd
import select
import socket
import sys
import time


def rank_pids(comm):
    """The processes named comm in this network namespace: the ranks on
    this node (on a networked test cluster each node has its own; run one
    flooder on each node)."""
    pids = []
    mine = os.stat("/proc/self/ns/net").st_ino
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % d) as f:
                if (f.read().strip() == comm
                        and os.stat("/proc/%s/ns/net" % d).st_ino == mine):
                    pids.append(int(d))
        except OSError:
            pass
    return pids


def listen_ports(pid):
    """The (ip, port) pid listens on, over TCP/IPv4."""
    inodes = set()
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
        with open("/proc/%d/net/tcp" % pid) as f:
            lines = f.readlines()[1:]
    except OSError:
        return []
    out = []
    for line in lines:
        v = line.split()
        if v[3] != "0A" or v[9] not in inodes:   # 0A: LISTEN
            continue
        iphex, porthex = v[1].split(":")
        ip = socket.inet_ntoa(int(iphex, 16).to_bytes(4, "little"))
        out.append(("127.0.0.1" if ip == "0.0.0.0" else ip, int(porthex, 16)))
    return out


def read_phase(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def parent(comm, path, on_phases, w):
    """Tell the child on w: "P ip:port ..." (the ports), "on", "off", "end"."""
    seen = False
    sent_ports = None
    sent_state = None
    ports = set()
    last_scan = 0.0
    while True:
        phase = read_phase(path)
        t = time.monotonic()
        # Often while the ranks start (their ports open then), then less.
        if t - last_scan > (0.02 if sent_ports is None or phase in ("", "0")
                            else 0.5):
            last_scan = t
            pids = rank_pids(comm)
            seen = seen or bool(pids)
            if seen and not pids:
                break
            ports = set()
            for pid in pids:
                ports.update(listen_ports(pid))
        msgs = []
        if ports != sent_ports and (ports or sent_ports):
            sent_ports = set(ports)
            msgs.append("P " + " ".join("%s:%d" % p for p in sorted(ports)))
        if phase == "end":
            break
        state = "setup" if phase == "" else "on" if (
            phase in on_phases) else "off"
        if state != sent_state:
            sent_state = state
            msgs.append(state)
        if msgs:
            os.write(w, ("\n".join(msgs) + "\n").encode())
        time.sleep(0.01)
    os.write(w, b"end\n")


def child(conns, r):
    nobody = pwd.getpwnam("nobody")
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)
    decoy = None
    if os.environ.get("STRANGER_FLOOD_DECOY") == "1":
        decoy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        decoy.bind(("127.0.0.1", 0))
        decoy.listen(4096)
    ports = []
    found = set()       # every port the parent named, for the report
    socks = {}          # port -> list of sockets
    on = False
    opened = closed = in_setup = 0
    setup = False
    buf = b""
    done = False
    while not done:
        if on:
            for p in ports:
                lst = socks.setdefault(p, [])
                while len(lst) < conns:
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    s.setblocking(False)
                    try:
                        s.connect(p[0] if decoy else p)
                    except BlockingIOError:
                        pass
                    except OSError:
                        s.close()
                        break
                    lst.append(s)
                    opened += 1
                    in_setup += setup
        watch = [r] + [s for lst in socks.values() for s in lst]
        ready, _, _ = select.select(watch, [], [], 0.02)
        for s in ready:
            if s == r:
                data = os.read(r, 4096)
                if not data:
                    done = True
                buf += data
                continue
            try:
                got = s.recv(1)
            except BlockingIOError:
                continue
            except OSError:
                got = b""
            if got:
                continue
            closed += 1
            for lst in socks.values():
                if s in lst:
                    lst.remove(s)
            s.close()
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            words = line.decode().split()
            if not words:
                continue
            if words[0] == "P":
                ports = [(a.split(":")[0], int(a.split(":")[1]))
                         for a in words[1:]]
                found.update(ports)
                if decoy:   # as many targets, all of them ours
                    ports = [(decoy.getsockname(), i)
                             for i in range(len(ports))]
                for p in list(socks):
                    if p not in ports:      # no longer listening
                        for s in socks.pop(p):
                            s.close()
            elif words[0] in ("setup", "on", "off"):
                on = words[0] != "off"
                setup = words[0] == "setup"
                if not on:
                    for lst in socks.values():
                        for s in lst:
                            s.close()
                    socks = {}
            elif words[0] == "end":
                done = True
    print("stranger_flood: ports %d conns %d opened %d closed_by_job %d "
          "opened_in_setup %d cpu_s %.2f"
          % (len(found), conns, opened, closed, in_setup,
             os.times().user + os.times().system), flush=True)


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    comm, conns, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    on_phases = set(sys.argv[4].split(","))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(w)
        child(conns, r)
        os._exit(0)
    os.close(r)
    try:
        parent(comm, path, on_phases, w)
    finally:
        try:
            os.write(w, b"end\n")
        except OSError:
            pass
        os.close(w)
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
