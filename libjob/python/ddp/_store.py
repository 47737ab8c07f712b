"""A key-value store for torch.distributed, served by rank 0 and reached
through libddp (ddp.torch uses it; torch is not imported here).

Rank 0 serves it on a port the kernel picks (no MASTER_PORT, nothing a
neighbouring job can hold); the port, rank 0's addresses (ddp.host_addrs,
the ones libddp's own links use) and a random secret reach the other ranks
through ddp.broadcast_object, inside the job.  A connection counts only
after both ends have shown they hold the secret (HMAC-SHA256 of the other's
nonce), so a stranger on the node can neither read nor write the store, and
a rank never talks to another job's server on a duplicate address (a
docker0 172.17.0.1 on every node): it tries the next address.

One thread serves every connection (selectors): a stranger's silent
connection costs a socket and is closed after HANDSHAKE_SECS, never a
thread or a wait of the ranks'.

The semantics are torch's TCPStore's: get() and wait() wait for keys until
the store's timeout, add() keeps a decimal integer, compare_set() sets
when the key holds expected (or is missing and expected is empty) and
returns what the key holds after.

Wire: frames of a 4-byte big-endian length, then the body.  A request's
body is an op byte then fields (each a 4-byte length and its bytes); a
reply's is a status byte (OK, TIMEOUT, FAILED) then fields.
"""

import hashlib
import hmac
import os
import selectors
import socket
import struct
import threading
import time

# Ops.
SET, GET, ADD, CHECK, WAIT, CSET, DELETE, NKEYS = range(1, 9)
# Reply status.
OK, TIMEOUT, FAILED = range(3)

MAGIC = b"ddp-store 1\n"
NONCE = 16
DIGEST = 32
# How long a connection has to prove it holds the secret.
HANDSHAKE_SECS = 10.0
# The largest frame of a proven connection (keys and values), and of one
# that has not proven itself yet (the handshake).
FRAME_MAX = 256 << 20
HELLO_MAX = 64
# Unproven connections kept at once; the oldest goes first beyond it.
PENDING_MAX = 256


def _mac(secret, who, nonce):
    return hmac.new(secret, who + nonce, hashlib.sha256).digest()


def _frame(body):
    return struct.pack(">I", len(body)) + body


def _fields(items):
    out = bytearray()
    for f in items:
        out += struct.pack(">I", len(f)) + f
    return bytes(out)


def _parse_fields(data):
    """The fields of a body, or None when it is malformed."""
    out, pos = [], 0
    while pos < len(data):
        if pos + 4 > len(data):
            return None
        (n,) = struct.unpack_from(">I", data, pos)
        pos += 4
        if pos + n > len(data):
            return None
        out.append(bytes(data[pos:pos + n]))
        pos += n
    return out


def _as_int(text):
    try:
        return int(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None


class _Conn:
    """One connection to the server: its buffers and whether it proved
    it holds the secret."""

    def __init__(self, sock, nonce):
        self.sock = sock
        self.rbuf = bytearray()
        self.wbuf = bytearray()
        self.nonce = nonce
        self.since = time.monotonic()


class Server:
    """The store, served from a thread of rank 0 on an ephemeral port of
    every address.  data holds the keys (str) and values (bytes)."""

    def __init__(self, secret, host="0.0.0.0", port=0):
        """Listen on host:port (every address, a port the kernel picks)
        and serve from a daemon thread until close()."""
        self.secret = secret
        self.data = {}
        self.waits = []     # (conn, keys, deadline, op)
        self.conns = {}     # socket -> _Conn
        # The connections yet to prove the secret, oldest first.
        self.unproven = {}  # socket -> _Conn
        self.sel = selectors.DefaultSelector()
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.bind((host, port))
        self.lsock.listen(128)
        self.lsock.setblocking(False)
        self.port = self.lsock.getsockname()[1]
        self.sel.register(self.lsock, selectors.EVENT_READ)
        self.wake_r, self.wake_w = socket.socketpair()
        self.sel.register(self.wake_r, selectors.EVENT_READ)
        self.thread = threading.Thread(target=self._loop, name="ddp-store",
                                       daemon=True)
        self.thread.start()

    def close(self):
        """Stop serving: every connection is closed (the clients' next
        call fails at once)."""
        if self.thread.is_alive():
            self.wake_w.send(b"x")
            self.thread.join()

    # ---- the loop ----------------------------------------------------------

    def _loop(self):
        try:
            self._serve()
        finally:
            for c in list(self.conns.values()):
                self._close(c)
            self.sel.close()
            self.lsock.close()

    def _serve(self):
        while True:
            for key, mask in self.sel.select(self._next_deadline()):
                if key.fileobj is self.wake_r:
                    return
                if key.fileobj is self.lsock:
                    self._accept()
                    continue
                c = self.conns.get(key.fileobj)
                if c is None:
                    continue
                if mask & selectors.EVENT_READ:
                    self._read(c)
                if c.sock in self.conns and mask & selectors.EVENT_WRITE:
                    self._flush(c)
            self._expire()

    def _next_deadline(self):
        now = time.monotonic()
        ends = [w[2] for w in self.waits]
        if self.unproven:
            ends.append(next(iter(self.unproven.values())).since
                        + HANDSHAKE_SECS)
        return max(0.0, min(ends) - now) if ends else None

    def _accept(self):
        while True:
            try:
                s, _ = self.lsock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:     # out of descriptors: try again later
                return
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            c = _Conn(s, os.urandom(NONCE))
            self.conns[s] = self.unproven[s] = c
            self.sel.register(s, selectors.EVENT_READ)
            self._send(c, MAGIC + c.nonce)
            while len(self.unproven) > PENDING_MAX:
                self._close(next(iter(self.unproven.values())))

    def _close(self, c):
        self.conns.pop(c.sock, None)
        self.unproven.pop(c.sock, None)
        self.waits = [w for w in self.waits if w[0] is not c]
        try:
            self.sel.unregister(c.sock)
        except (KeyError, ValueError):
            pass
        c.sock.close()

    def _read(self, c):
        try:
            data = c.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(c)
            return
        c.rbuf += data
        while c.sock in self.conns and len(c.rbuf) >= 4:
            proven = c.sock not in self.unproven
            (n,) = struct.unpack_from(">I", c.rbuf, 0)
            if n > (FRAME_MAX if proven else HELLO_MAX):
                self._close(c)
                return
            if len(c.rbuf) < 4 + n:
                return
            body = bytes(c.rbuf[4:4 + n])
            del c.rbuf[:4 + n]
            if proven:
                self._request(c, body)
            else:
                self._hello(c, body)

    def _hello(self, c, body):
        """The client's MAC of our nonce and its own nonce: answer with our
        MAC of its nonce, or close."""
        if len(body) != DIGEST + NONCE or not hmac.compare_digest(
                body[:DIGEST], _mac(self.secret, b"client", c.nonce)):
            self._close(c)
            return
        del self.unproven[c.sock]
        self._send(c, _frame(_mac(self.secret, b"server", body[DIGEST:])))

    def _send(self, c, data):
        c.wbuf += data
        self._flush(c)

    def _flush(self, c):
        try:
            while c.wbuf:
                n = c.sock.send(c.wbuf)
                del c.wbuf[:n]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self._close(c)
            return
        events = selectors.EVENT_READ
        if c.wbuf:
            events |= selectors.EVENT_WRITE
        self.sel.modify(c.sock, events)

    def _reply(self, c, status, *items):
        self._send(c, _frame(bytes([status]) + _fields(items)))

    # ---- requests ----------------------------------------------------------

    def _request(self, c, body):
        f = _parse_fields(body[1:]) if body else None
        if f is None:
            self._reply(c, FAILED, b"malformed request")
            return
        op = body[0]
        try:
            handler = self._handlers[op]
        except KeyError:
            self._reply(c, FAILED, b"unknown request %d" % op)
            return
        handler(self, c, f)

    def _key(self, raw):
        return raw.decode("utf-8", "surrogateescape")

    def _set(self, c, f):
        if len(f) != 2:
            return self._reply(c, FAILED, b"set: wants a key and a value")
        self.data[self._key(f[0])] = f[1]
        self._reply(c, OK)
        self._wake()

    def _get(self, c, f):
        if len(f) != 2 or _as_int(f[1]) is None:
            return self._reply(c, FAILED, b"get: wants a key and a timeout")
        key = self._key(f[0])
        if key in self.data:
            return self._reply(c, OK, self.data[key])
        self._park(c, [key], _as_int(f[1]), GET)

    def _wait(self, c, f):
        if len(f) < 1 or _as_int(f[0]) is None:
            return self._reply(c, FAILED, b"wait: wants a timeout and keys")
        keys = [self._key(k) for k in f[1:]]
        if all(k in self.data for k in keys):
            return self._reply(c, OK)
        self._park(c, keys, _as_int(f[0]), WAIT)

    def _park(self, c, keys, ms, op):
        self.waits.append((c, keys, time.monotonic() + ms / 1000.0, op))

    def _add(self, c, f):
        if len(f) != 2 or _as_int(f[1]) is None:
            return self._reply(c, FAILED, b"add: wants a key and an integer")
        key = self._key(f[0])
        old = _as_int(self.data.get(key, b"0"))
        if old is None:
            return self._reply(c, FAILED, b"add: the value of %s is not an "
                               b"integer" % f[0])
        new = old + _as_int(f[1])
        self.data[key] = str(new).encode("ascii")
        self._reply(c, OK, self.data[key])
        self._wake()

    def _cset(self, c, f):
        if len(f) != 3:
            return self._reply(c, FAILED, b"compare_set: wants a key, the "
                               b"expected and the desired value")
        key = self._key(f[0])
        have = self.data.get(key)
        if have == f[1] or (have is None and f[1] == b""):
            self.data[key] = f[2]
            self._wake()
        elif have is None:
            return self._reply(c, OK, f[1])
        self._reply(c, OK, self.data[key])

    def _check(self, c, f):
        ok = all(self._key(k) in self.data for k in f)
        self._reply(c, OK, b"1" if ok else b"0")

    def _delete(self, c, f):
        if len(f) != 1:
            return self._reply(c, FAILED, b"delete_key: wants a key")
        gone = self.data.pop(self._key(f[0]), None) is not None
        self._reply(c, OK, b"1" if gone else b"0")

    def _nkeys(self, c, f):
        self._reply(c, OK, str(len(self.data)).encode("ascii"))

    _handlers = {SET: _set, GET: _get, ADD: _add, CHECK: _check, WAIT: _wait,
                 CSET: _cset, DELETE: _delete, NKEYS: _nkeys}

    def _wake(self):
        """Answer the waits the last change completed."""
        left = []
        for w in self.waits:
            c, keys, _, op = w
            if not all(k in self.data for k in keys):
                left.append(w)
            elif op == GET:
                self._reply(c, OK, self.data[keys[0]])
            else:
                self._reply(c, OK)
        self.waits = left

    def _expire(self):
        now = time.monotonic()
        left = []
        for w in self.waits:
            if w[2] > now:
                left.append(w)
                continue
            missing = [k for k in w[1] if k not in self.data]
            self._reply(w[0], TIMEOUT, ", ".join(missing).encode(
                "utf-8", "surrogateescape"))
        self.waits = left
        while self.unproven:
            c = next(iter(self.unproven.values()))
            if now - c.since < HANDSHAKE_SECS:
                break
            self._close(c)


class StoreError(Exception):
    """What the client raises; ddp.torch maps it to ddp's exceptions."""


def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        part = sock.recv(n - len(buf))
        if not part:
            raise EOFError
        buf += part
    return bytes(buf)


def _recv_frame(sock, limit):
    (n,) = struct.unpack(">I", _recv_exact(sock, 4))
    if n > limit:
        raise StoreError(f"a frame of {n} bytes (at most {limit})")
    return _recv_exact(sock, n)


class Client:
    """A proven connection to rank 0's server (one request at a time)."""

    def __init__(self, addrs, port, secret, deadline):
        """Connect to the first of addrs (tried in turn, in rounds whose
        connect timeout doubles from 0.25 s) that proves it holds secret,
        before the time.monotonic() deadline; StoreError otherwise, naming
        what each address did."""
        self.lock = threading.Lock()
        self.sock = None
        self.addr = None
        wait, seen = 0.25, {}
        while self.sock is None:
            for a in addrs:
                left = deadline - time.monotonic()
                if left <= 0:
                    tried = "; ".join(f"{k}: {v}" for k, v in seen.items())
                    raise StoreError(
                        f"could not reach rank 0's store on port {port} "
                        f"({tried})")
                try:
                    self.sock = self._prove(a, port, secret, min(wait, left))
                    self.addr = a
                    break
                except (OSError, EOFError, StoreError) as e:
                    seen[a] = _describe(e)
            if self.sock is None:
                time.sleep(min(wait, max(0.0, deadline - time.monotonic())))
                wait = min(wait * 2, 4.0)
        self.sock.settimeout(None)

    @staticmethod
    def _prove(addr, port, secret, secs):
        s = socket.create_connection((addr, port), timeout=secs)
        try:
            s.settimeout(max(secs, 2.0))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            hello = _recv_exact(s, len(MAGIC) + NONCE)
            if not hello.startswith(MAGIC):
                raise StoreError("not a ddp store")
            mine = os.urandom(NONCE)
            s.sendall(_frame(_mac(secret, b"client", hello[len(MAGIC):])
                             + mine))
            try:
                answer = _recv_frame(s, DIGEST)
            except EOFError:
                raise StoreError("closed the connection at the handshake "
                                 "(another job's store?)") from None
            if not hmac.compare_digest(answer,
                                       _mac(secret, b"server", mine)):
                raise StoreError("did not prove it holds the job's secret")
            return s
        except BaseException:
            s.close()
            raise

    def call(self, op, items, wait_secs=None):
        """One request; (status, fields) of the reply.  wait_secs: how long
        the server may take (a get or wait), None for at once."""
        body = bytes([op]) + _fields(items)
        with self.lock:
            if self.sock is None:
                raise StoreError("the connection to rank 0's store is closed")
            # A reply comes at once, or at the server's own timeout; a
            # silent link gets this long before the call gives up.
            self.sock.settimeout(30.0 + (wait_secs or 0.0))
            try:
                self.sock.sendall(_frame(body))
                reply = _recv_frame(self.sock, FRAME_MAX)
            except (OSError, EOFError) as e:
                self.close()
                raise StoreError(
                    f"no reply from rank 0's store at {self.addr}: "
                    f"{_describe(e)}") from None
        if not reply:
            raise StoreError("an empty reply from rank 0's store")
        fields = _parse_fields(reply[1:])
        if fields is None:
            raise StoreError("a malformed reply from rank 0's store")
        return reply[0], fields

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def _describe(e):
    if isinstance(e, EOFError):
        return "it closed the connection"
    if isinstance(e, socket.timeout):
        return "no answer in time"
    if isinstance(e, OSError):
        return e.strerror or str(e)
    return str(e)
