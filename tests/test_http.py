"""atriumd-http: Atrium over HTTP (atriumd(8), HTTP).

Each test starts atriumd with --http-listen on a free loopback port and
speaks HTTP to it with the standard library (raw sockets where the bytes
themselves are the test: hostile request heads, half-sent requests).
Tokens come from `ssh HOST atrium-token create`, as a user makes them.
"""
import http.client
import json
import os
import re
import socket
import subprocess
import time

import pytest

from conftest import SSH_OPTS, free_port


class Http:
    """An atriumd with its HTTP front."""

    def __init__(self, server, port):
        self.server = server
        self.port = port

    def request(self, method, path, body=None, headers=None, timeout=20):
        c = http.client.HTTPConnection("127.0.0.1", self.port,
                                       timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def raw(self, data, timeout=20):
        """Send data as is; what comes back until the server closes."""
        with socket.create_connection(("127.0.0.1", self.port),
                                      timeout=timeout) as s:
            s.sendall(data)
            out = b""
            while True:
                try:
                    got = s.recv(65536)
                except ConnectionResetError:
                    break
                if not got:
                    break
                out += got
            return out

    def pid(self):
        """atriumd-http's pid (the child of this atriumd named so)."""
        deadline = time.time() + 10
        while time.time() < deadline:
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open("/proc/%s/cmdline" % entry, "rb") as f:
                        argv = f.read().split(b"\0")
                    with open("/proc/%s/stat" % entry) as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                except OSError:
                    continue
                if argv[0].endswith(b"atriumd-http") and \
                        ppid == self.server.proc.pid:
                    return int(entry)
            time.sleep(0.05)
        raise AssertionError("no atriumd-http process")


def wait_http(port):
    deadline = time.time() + 15
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("atriumd-http did not listen on %d" % port)


@pytest.fixture
def http_server(atriumd, data_dir):
    """Factory: http_server(*extra_args) -> Http of a started atriumd."""
    def start(*extra):
        port = free_port()
        srv = atriumd(data_dir, "--http-listen", "127.0.0.1:%d" % port,
                      *extra)
        wait_http(port)
        return Http(srv, port)
    return start


def test_health_answers_ok(http_server):
    h = http_server()
    status, headers, body = h.request("GET", "/health")
    assert (status, body) == (200, b"ok\n")
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_http_process_has_no_privilege(http_server):
    h = http_server()
    with open("/proc/%d/status" % h.pid()) as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    assert status["Uid"].split()[0] != "0"
    assert all(u != "0" for u in status["Uid"].split())
    assert int(status["CapEff"], 16) == 0
    assert status["NoNewPrivs"].strip() == "1"
    assert status["Seccomp"].strip() == "2"


def test_without_a_token_is_401(http_server):
    h = http_server()
    status, _, body = h.request("GET", "/api/rooms")
    assert status == 401
    assert "Bearer" in json.loads(body)["error"]
    status, _, body = h.request("GET", "/api/rooms",
                                headers={"Authorization": "Bearer atrium_x"})
    assert status == 401


def test_http_is_off_without_the_flag(atriumd, data_dir):
    srv = atriumd(data_dir)
    assert srv.proc.poll() is None
    assert not [e for e in os.listdir("/proc") if e.isdigit()
                and _argv0(e).endswith(b"atriumd-http")
                and _ppid(e) == srv.proc.pid]


def _argv0(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")[0]
    except OSError:
        return b""


def _ppid(pid):
    try:
        with open("/proc/%s/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1
