#!/usr/bin/python3
"""Hostile SSH handshakes for make bench: each from its own loopback
address, each repeated as fast as the server lets it, up to the server's
expensive step and no further.

A handshake sends the version line, a KEXINIT and an ECDH init with a
random curve25519 point (no key is made, nothing is computed), then waits
for the server's ECDH reply: by then the server has done its share of
the key exchange and signed with its host key, the costly part of any
login.  Then the connection is dropped and the next one begins.  So the
cost lands on the server, as it would from attackers on other hosts, and
not on this machine's CPU through the attackers' own ssh processes (an
OpenSSH client spends more CPU on a handshake than the server does).

  ssh_flood.py PORT SOURCE...     until killed (SIGTERM ends it cleanly)

Prints, at the end, how many handshakes reached the server's reply and
how many connections were refused or dropped early.
"""
import os
import signal
import socket
import struct
import sys
import threading

KEX = b"curve25519-sha256,curve25519-sha256@libssh.org"
HOSTKEY = b"ssh-ed25519,ecdsa-sha2-nistp256,rsa-sha2-512,rsa-sha2-256"
CIPHER = b"chacha20-poly1305@openssh.com,aes128-ctr,aes256-gcm@openssh.com"
MAC = b"hmac-sha2-256-etm@openssh.com,hmac-sha2-256"
MSG_KEXINIT, MSG_ECDH_INIT, MSG_ECDH_REPLY = 20, 30, 31


def string(b):
    return struct.pack(">I", len(b)) + b


def packet(payload):
    """An unencrypted binary packet (RFC 4253 6): padded to 8 bytes."""
    pad = 8 - (5 + len(payload)) % 8
    if pad < 4:
        pad += 8
    return struct.pack(">IB", 1 + len(payload) + pad, pad) + payload + bytes(pad)


def kexinit():
    lists = [KEX, HOSTKEY, CIPHER, CIPHER, MAC, MAC, b"none", b"none", b"", b""]
    return packet(bytes([MSG_KEXINIT]) + os.urandom(16) +
                  b"".join(string(x) for x in lists) + b"\0" + bytes(4))


def read_exact(sock, n):
    out = b""
    while len(out) < n:
        got = sock.recv(n - len(out))
        if not got:
            raise ConnectionError("closed")
        out += got
    return out


def read_line(sock):
    line = b""
    while not line.endswith(b"\n"):
        line += read_exact(sock, 1)
        if len(line) > 255:
            raise ConnectionError("no version line")
    return line


def handshake(port, source, timeout=10):
    """One handshake; True when the server sent its ECDH reply."""
    with socket.socket() as s:
        s.settimeout(timeout)
        s.bind((source, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(b"SSH-2.0-flood\r\n")
        while not read_line(s).startswith(b"SSH-"):
            pass
        s.sendall(kexinit() + packet(bytes([MSG_ECDH_INIT]) +
                                     string(os.urandom(32))))
        while True:
            length, = struct.unpack(">I", read_exact(s, 4))
            if length > 35000:
                raise ConnectionError("bad packet")
            body = read_exact(s, length)
            if body[1] == MSG_ECDH_REPLY:
                return True


class Flood:
    def __init__(self, port, sources):
        self.port, self.sources = port, sources
        self.stop = threading.Event()
        self.done = self.failed = 0
        self.lock = threading.Lock()

    def _loop(self, source):
        while not self.stop.is_set():
            try:
                ok = handshake(self.port, source)
            except OSError:
                ok = False
            with self.lock:
                if ok:
                    self.done += 1
                else:
                    self.failed += 1
            if not ok:
                # Refused (a per-source limit): try again soon, as an
                # attacker would, without spinning on the refusals.
                self.stop.wait(0.01)

    def run(self):
        threads = [threading.Thread(target=self._loop, args=(s,), daemon=True)
                   for s in self.sources]
        for t in threads:
            t.start()
        return threads


def main():
    port, sources = int(sys.argv[1]), sys.argv[2:]
    flood = Flood(port, sources)
    signal.signal(signal.SIGTERM, lambda *_: flood.stop.set())
    threads = flood.run()
    for t in threads:
        while t.is_alive():
            t.join(0.5)
    print("handshakes %d failed %d" % (flood.done, flood.failed), flush=True)


if __name__ == "__main__":
    main()
