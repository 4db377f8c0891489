"""A WebSocket client that breaks the rules (atriumd(8), HTTP, WebSocket
limits): binary messages, a message over 1 MiB in fragments, pings at a
high rate, and a client that sends and never reads.  Each is answered by
a close with the code RFC 6455 names, and none makes atriumd-http grow.

The client here is a raw socket, so that the frames are exactly what the
test says and the client can refuse to read.
"""
import base64
import os
import socket
import struct
import time

import pytest

from conftest import make_room
from http_run import http_server, token_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")

TEXT, BINARY, CLOSE, PING, PONG = 1, 2, 8, 9, 10


def frame(opcode, payload, fin=True):
    """One masked client frame."""
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    mask = os.urandom(4)
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload)) \
        if n < 4096 else _mask_big(payload, mask)
    return head + mask + body


def _mask_big(payload, mask):
    m = (mask * (len(payload) // 4 + 1))[:len(payload)]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(m, "big")
            ).to_bytes(len(payload), "big")


class Ws:
    """A raw WebSocket to /api/rooms/ROOM/ws (or path)."""

    def __init__(self, srv, room, token, rcvbuf=None, path=None):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.s.settimeout(30)
        self.s.connect(("127.0.0.1", srv.http_port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET %s HTTP/1.1\r\n"
                        "Host: 127.0.0.1:%d\r\n"
                        "Authorization: Bearer %s\r\n"
                        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Version: 13\r\n"
                        "Sec-WebSocket-Key: %s\r\n\r\n"
                        % (path or "/api/rooms/%s/ws" % room,
                           srv.http_port, token, key)).encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            got = self.s.recv(4096)
            assert got, "closed before the upgrade"
            self.buf += got
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 101"), head

    def _need(self, n):
        while len(self.buf) < n:
            got = self.s.recv(65536)
            if not got:
                raise EOFError(self.buf[:200])
            self.buf += got

    def recv(self):
        """(opcode, payload) of the next frame from the server."""
        self._need(2)
        op, n = self.buf[0] & 0x0F, self.buf[1] & 0x7F
        at = 2
        if n == 126:
            self._need(4)
            n, at = struct.unpack(">H", self.buf[2:4])[0], 4
        elif n == 127:
            self._need(10)
            n, at = struct.unpack(">Q", self.buf[2:10])[0], 10
        self._need(at + n)
        payload, self.buf = self.buf[at:at + n], self.buf[at + n:]
        return op, payload

    def close_code(self):
        """The server's close: (code, reason), skipping what comes first."""
        while True:
            op, payload = self.recv()
            if op == CLOSE:
                return (struct.unpack(">H", payload[:2])[0],
                        payload[2:].decode())

    def send(self, data):
        self.s.sendall(data)

    def close(self):
        self.s.close()


def http_pid(srv):
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv0 = f.read().split(b"\0")[0]
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if argv0.endswith(b"atriumd-http") and ppid == srv.proc.pid:
            return int(entry)
    raise AssertionError("no atriumd-http")


def vm_kb(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError("no " + field)


def welcomed(ws):
    op, payload = ws.recv()
    assert op == TEXT and b'"welcome"' in payload, payload


@pytest.fixture
def served(atriumd, data_dir, ssh_run):
    srv = http_server(atriumd, data_dir, "--http-idle-timeout", "2")
    make_room(srv, "work")
    return srv, token_for(srv, "alice")


def test_a_binary_message_is_closed_with_1003(served):
    srv, tok = served
    ws = Ws(srv, "work", tok)
    welcomed(ws)
    ws.send(frame(BINARY, b'{"type":"chat","text":"as bytes"}'))
    code, reason = ws.close_code()
    assert code == 1003 and "binary" in reason
    ws.close()
    # text that is not UTF-8: 1007
    ws = Ws(srv, "work", tok)
    welcomed(ws)
    ws.send(frame(TEXT, b'{"type":"chat","text":"\xff\xfe"}'))
    assert ws.close_code()[0] == 1007
    ws.close()


def test_a_message_over_1_mib_in_fragments_is_closed_with_1009(served):
    srv, tok = served
    pid = http_pid(srv)
    before = vm_kb(pid, "VmHWM")
    ws = Ws(srv, "work", tok)
    welcomed(ws)
    piece = b"x" * (256 * 1024)
    ws.send(frame(TEXT, b'{"type":"chat","text":"' + piece, fin=False))
    try:
        for _ in range(64):   # 16 MiB offered; refused after the first
            ws.send(frame(0, piece, fin=False))
    except (BrokenPipeError, ConnectionResetError):
        pass
    code, _ = ws.close_code()
    assert code == 1009
    ws.close()
    assert vm_kb(pid, "VmHWM") - before < 8 * 1024


def test_pings_at_a_high_rate_are_closed_with_1008(served):
    srv, tok = served
    ws = Ws(srv, "work", tok)
    welcomed(ws)
    ws.send(b"".join(frame(PING, b"p%d" % i) for i in range(200)))
    pongs = 0
    while True:
        op, payload = ws.recv()
        if op == PONG:
            pongs += 1
        if op == CLOSE:
            break
    assert struct.unpack(">H", payload[:2])[0] == 1008
    assert "pings" in payload[2:].decode()
    assert pongs <= 50
    # a client that pings now and then is answered and kept
    ws2 = Ws(srv, "work", tok)
    welcomed(ws2)
    for i in range(5):
        ws2.send(frame(PING, b"k%d" % i))
        assert ws2.recv() == (PONG, b"k%d" % i)
    ws2.close()
    ws.close()


def test_a_client_that_sends_and_never_reads_is_closed_in_bounded_memory(
        served):
    srv, tok = served
    pid = http_pid(srv)
    before = vm_kb(pid, "VmHWM")
    ws = Ws(srv, "work", tok, rcvbuf=4096)
    chunk = frame(TEXT, b"x") * 20000   # each message answered by an error
    ws.s.settimeout(5)
    try:
        for _ in range(20):   # 400,000 messages, their answers never read
            ws.send(chunk)
    except (socket.timeout, BrokenPipeError, ConnectionResetError):
        pass
    ws.s.settimeout(30)
    # reading now: the answers that went out, then the close, then the end
    try:
        code, reason = ws.close_code()
    except (EOFError, ConnectionResetError):
        code = reason = None   # cut while it read nothing: no close
    assert code == 1008 and "not read" in reason, (code, reason)
    assert vm_kb(pid, "VmHWM") - before < 8 * 1024
    ws.close()
    # and the server serves others as before
    ws2 = Ws(srv, "work", tok)
    welcomed(ws2)
    ws2.close()



def test_a_reader_that_takes_nothing_is_cut(served):
    srv, tok = served
    ws = Ws(srv, "work", tok, rcvbuf=4096)
    # commands whose answers (500 kB of output each) it never reads
    for i in range(12):
        ws.send(frame(TEXT, (
            '{"type":"exec","id":"e%d","command":"head -c 500000 '
            '/dev/zero | tr \\\\\\\\0 a"}' % i).encode()))
    # http-idle-timeout (2 s here) without a byte taken: the server cuts
    deadline = time.monotonic() + 30
    while "read nothing for 2 s: cut" not in srv.read_log():
        assert time.monotonic() < deadline, "not cut"
        time.sleep(0.1)
    # reading now: what was on its way, then the end (no endless stream)
    ws.s.settimeout(10)
    got = 0
    with pytest.raises(EOFError):
        while True:
            got += len(ws.recv()[1])
    assert got < 32 << 20
    ws.close()


def test_rhemas_websocket_is_held_to_the_same_rules(served):
    srv, tok = served
    ws = Ws(srv, "work", tok, path="/sessions/work/ws")
    ws.send(frame(BINARY, b"\x00\x01"))
    assert ws.close_code()[0] == 1003
    ws.close()
    ws = Ws(srv, "work", tok, path="/sessions/work/ws")
    piece = b"y" * (512 * 1024)
    try:
        ws.send(frame(TEXT, b'{"type":"chat","text":"' + piece, fin=False))
        for _ in range(8):
            ws.send(frame(0, piece, fin=False))
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert ws.close_code()[0] == 1009
    ws.close()
