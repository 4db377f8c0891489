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
import shutil
import socket
import ssl
import sqlite3
import subprocess
import time

import pytest

from conftest import free_port, make_room
from test_access import events, make_private

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")

TOKEN_RE = re.compile(r"^atrium_[A-Za-z0-9_-]{43}$")
WS_CLIENT = "/usr/bin/python3"   # Debian's python3-websockets


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


def make_token(ssh_run, h, *args, user="alice"):
    """A token made as a user makes one: ssh HOST atrium-token create."""
    rc, out, err = ssh_run(h.server, "anything", "atrium-token", "create",
                           *args, user=user)
    assert rc == 0, err
    text = out.splitlines()[0]
    assert TOKEN_RE.match(text), out
    return text


def bearer(token):
    return {"Authorization": "Bearer " + token}


class Sse:
    """A server-sent event stream, read event by event."""

    def __init__(self, h, room, token, last_id=None):
        self.conn = http.client.HTTPConnection("127.0.0.1", h.port,
                                               timeout=20)
        headers = bearer(token)
        if last_id is not None:
            headers["Last-Event-ID"] = str(last_id)
        self.conn.request("GET", "/api/rooms/%s/events" % room,
                          headers=headers)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status

    def next(self):
        """The next event: {"id", "event", "data"}; comments skipped."""
        ev = {}
        while True:
            line = self.resp.fp.readline()
            assert line, "the stream ended"
            line = line.decode().rstrip("\n")
            if not line:
                if ev:
                    return ev
                continue
            if line.startswith(":"):
                continue
            key, _, value = line.partition(": ")
            ev[key] = value

    def until(self, pred, limit=200):
        seen = []
        for _ in range(limit):
            ev = self.next()
            seen.append(ev)
            if pred(ev):
                return seen
        raise AssertionError("not seen in %r" % seen)

    def close(self):
        self.conn.close()


def chat_over_ssh(h, room, text, user="alice"):
    events(h.server, room, {"type": "chat", "text": text}, user=user,
           until=lambda e: e["type"] == "message" and e.get("text") == text)


def ws_run(h, room, token, script, headers=None, timeout=60, base=None,
           query=""):
    """Run a WebSocket client (script: Python with `ws` open) as Debian's
    python3 with python3-websockets; its stdout.  base: "wss://HOST:PORT"
    through a proxy (its certificate not checked), else atriumd-http."""
    code = """
import asyncio, json, ssl, sys, websockets
async def main():
    url = %r
    tls = ssl._create_unverified_context() if url.startswith("wss:") else None
    async with websockets.connect(url, extra_headers=%r, open_timeout=20,
                                  ssl=tls) as ws:
%s
asyncio.run(main())
""" % ("%s/api/rooms/%s/ws%s" % (base or "ws://127.0.0.1:%d" % h.port, room,
                                  query),
       dict(bearer(token), **(headers or {})),
       "\n".join("        " + l for l in script.strip("\n").splitlines()))
    p = subprocess.run([WS_CLIENT, "-c", code], capture_output=True,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def wait_http(port):
    """Until atriumd-http answers /health (a whole request, so that no
    half-open probe is left for a limit to count)."""
    deadline = time.time() + 15
    while time.time() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                c.close()
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError("atriumd-http did not answer on %d" % port)


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
    status, headers, body = h.request("GET", "/api/rooms")
    assert status == 401
    assert "Bearer" in json.loads(body)["error"]
    assert headers["WWW-Authenticate"].startswith("Bearer")
    status, _, body = h.request("GET", "/api/rooms",
                                headers={"Authorization": "Bearer atrium_x"})
    assert status == 401


def test_a_token_lists_exactly_the_rooms_its_key_may_enter(http_server,
                                                          ssh_run):
    h = http_server()
    for room, user in (("ours", "alice"), ("open-one", "bob"),
                       ("bobs", "bob")):
        make_room(h.server, room, user=user)
    make_private(h.server, "bobs", user="bob")
    token = make_token(ssh_run, h)
    status, headers, body = h.request("GET", "/api/rooms",
                                      headers=bearer(token))
    assert status == 200, body
    assert headers["Content-Type"] == "application/json"
    names = sorted(r["room"] for r in json.loads(body)["rooms"])
    assert names == ["open-one", "ours"]
    # A token for one room sees that one only.
    one = make_token(ssh_run, h, "--rooms", "ours")
    status, _, body = h.request("GET", "/api/rooms", headers=bearer(one))
    assert [r["room"] for r in json.loads(body)["rooms"]] == ["ours"]
    status, _, body = h.request("GET", "/api/rooms/open-one/events",
                                headers=bearer(one))
    assert status == 403, body


def test_an_expired_token_is_401(http_server, ssh_run, data_dir):
    h = http_server()
    token = make_token(ssh_run, h)
    assert h.request("GET", "/api/rooms", headers=bearer(token))[0] == 200
    db = sqlite3.connect(os.path.join(str(data_dir), "tokens.db"))
    db.execute("UPDATE tokens SET expires = 1")
    db.commit()
    db.close()
    status, _, body = h.request("GET", "/api/rooms", headers=bearer(token))
    assert status == 401
    assert "expired" in json.loads(body)["error"]


def test_a_token_of_a_removed_key_is_401(http_server, ssh_run, data_dir):
    h = http_server()
    token = make_token(ssh_run, h)
    assert h.request("GET", "/api/rooms", headers=bearer(token))[0] == 200
    path = os.path.join(str(data_dir), "authorized_keys")
    with open(path) as f:
        lines = [l for l in f if data_dir.pubkey("alice") not in l]
    with open(path, "w") as f:
        f.writelines(lines)
    status, _, body = h.request("GET", "/api/rooms", headers=bearer(token))
    assert status == 401, body
    assert token not in h.server.read_log()


def test_hostile_request_heads_are_refused(http_server):
    h = http_server()
    long_path = "/" + "a" * 9000
    assert h.request("GET", long_path)[0] == 414
    assert h.request("GET", "/health",
                     headers={"X-Big": "b" * 33000})[0] == 431
    status, _, body = h.request("POST", "/api/session", body=b"x" * 4096)
    assert status == 413, body
    for path in ("/api/rooms/../events", "/api/rooms/%2e%2e/events",
                 "/api/rooms/a%2Fb/events", "/api/rooms/A!/events"):
        status, _, body = h.request("GET", path)
        assert status == 400, (path, body)
    assert h.request("GET", "/nowhere")[0] == 404
    assert h.request("PUT", "/api/rooms")[0] == 405


def test_a_half_sent_request_is_closed_after_the_timeout(http_server):
    h = http_server("--http-request-timeout", "1")
    start = time.time()
    got = h.raw(b"GET /health HTTP/1.1\r\nHost: x\r\n", timeout=15)
    assert b"200" not in got
    assert time.time() - start < 10


def _trickle(s, limit, meanwhile):
    """Send a request head one byte a second on s until the server ends
    the connection: (seconds it took, what it said), or (None, b"") when
    it still held it after limit seconds.  meanwhile() is called once,
    after the first bytes."""
    head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000
    start = time.time()
    s.settimeout(1)
    for i in range(len(head)):
        if time.time() - start > limit:
            return None, b""
        if i == 2:
            meanwhile()
        try:
            s.send(head[i:i + 1])
            got = s.recv(4096)    # the one-second pace, or the end
        except socket.timeout:
            continue
        except OSError:
            return time.time() - start, b""
        if got is not None:
            rest = got
            try:
                while got:
                    got = s.recv(4096)
                    rest += got
            except OSError:
                pass
            return time.time() - start, rest
    return None, b""


def test_a_trickled_request_head_is_cut_after_the_timeout(http_server):
    """A client that keeps sending, one header byte a second, never goes
    silent for the whole timeout: the head's whole time is bounded."""
    h = http_server("--http-request-timeout", "3")
    served = []
    with socket.create_connection(("127.0.0.1", h.port), 5) as slow:
        took, said = _trickle(slow, 15, lambda: served.append(
            h.request("GET", "/health")[0]))
        assert took is not None, "a trickling client held its connection"
        assert 2.5 < took < 8, took
        assert said.startswith(b"HTTP/1.1 408 "), said
        assert b"http-request-timeout" in said
    assert served == [200]    # another connection, served meanwhile
    status, _, body = h.request("GET", "/metrics")
    assert b"atrium_http_slow_heads_closed_total 1\n" in body


def test_a_kept_alive_connection_trickling_its_next_head_is_cut(
        http_server):
    """After a request, the next head may take the idle wait and the
    request timeout together, no more, however steadily it trickles."""
    h = http_server("--http-request-timeout", "2", "--http-idle-timeout",
                    "2")
    with socket.create_connection(("127.0.0.1", h.port), 5) as s:
        assert _served(s)
        took, said = _trickle(s, 15, lambda: None)
        assert took is not None, "a trickling client held its connection"
        assert took < 7, took
        assert said.startswith(b"HTTP/1.1 408 "), said


def _served(s):
    """Ask for /health on s: True when it answered."""
    try:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        return b" 200 " in s.recv(4096)
    except OSError:
        return False


def _hold(port, n, timeout=15):
    """n connections, each served once and kept open (keep-alive); the
    probes of the fixture may hold a place until they time out."""
    deadline = time.time() + timeout
    while True:
        held = [socket.create_connection(("127.0.0.1", port), 5)
                for _ in range(n)]
        if all([_served(s) for s in held]):
            return held
        for s in held:
            s.close()
        assert time.time() < deadline, "never served %d at once" % n
        time.sleep(0.2)


def test_refused_tokens_from_one_address_are_slowed(http_server, ssh_run):
    h = http_server("--http-auth-failures", "3",
                    "--http-trusted-proxy", "127.0.0.1")
    token = make_token(ssh_run, h)
    guess = bearer("atrium_" + "A" * 43)
    for _ in range(3):
        assert h.request("GET", "/api/rooms", headers=guess)[0] == 401
    status, headers, body = h.request("GET", "/api/rooms", headers=guess)
    assert status == 429, body
    assert 0 < int(headers["Retry-After"]) <= 60
    assert "too many refused tokens" in json.loads(body)["error"]
    # Even a good token waits, from there; another address does not.
    assert h.request("GET", "/api/rooms", headers=bearer(token))[0] == 429
    elsewhere = dict(bearer(token), **{"X-Forwarded-For": "192.0.2.9"})
    assert h.request("GET", "/api/rooms", headers=elsewhere)[0] == 200
    assert h.request("GET", "/health")[0] == 200


def test_an_idle_kept_alive_connection_is_closed(http_server):
    h = http_server("--http-idle-timeout", "1", "--http-request-timeout",
                    "30")
    with socket.create_connection(("127.0.0.1", h.port), 15) as s:
        assert _served(s)
        start = time.time()
        assert s.recv(1024) == b""
        assert time.time() - start < 10


def test_too_many_connections_from_one_address(http_server):
    h = http_server("--http-per-source", "2", "--http-request-timeout", "2")
    held = _hold(h.port, 2)
    try:
        with socket.create_connection(("127.0.0.1", h.port), 5) as s:
            assert not _served(s)
    finally:
        for s in held:
            s.close()
    # Their places come back once they are gone.
    for s in _hold(h.port, 2):
        s.close()


def test_origins_are_checked(http_server, ssh_run):
    h = http_server()
    make_room(h.server, "demo")
    token = make_token(ssh_run, h)
    # A WebSocket from another origin.
    rc, out, err = ws_run(h, "demo", token, "print(await ws.recv())",
                          headers={"Origin": "http://evil.example"})
    assert rc != 0 and "403" in err
    # A cookie-authenticated POST from another origin.
    cookie = {"Cookie": "atrium_session=" + token,
              "Origin": "http://evil.example"}
    status, _, body = h.request("POST", "/api/session", headers=cookie)
    assert status == 403, body
    # The same origin is fine, and the cookie it gets is strict.
    status, headers, body = h.request("POST", "/api/session",
                                      headers=bearer(token))
    assert status == 200, body
    assert json.loads(body)["user"] == "alice"
    set_cookie = headers["Set-Cookie"]
    for attr in ("HttpOnly", "SameSite=Strict", "Path=/", "Secure"):
        assert attr in set_cookie
    status, _, body = h.request("GET", "/api/rooms", headers={
        "Cookie": "atrium_session=" + token})
    assert status == 200, body


def test_a_chat_line_arrives_as_an_event_and_resumes(http_server, ssh_run):
    h = http_server()
    make_room(h.server, "demo")
    token = make_token(ssh_run, h)
    sse = Sse(h, "demo", token)
    assert sse.status == 200
    assert sse.resp.getheader("Content-Type").startswith("text/event-stream")
    sse.until(lambda e: e.get("event") == "welcome")
    chat_over_ssh(h, "demo", "first line")
    seen = sse.until(lambda e: e.get("event") == "message")
    first = seen[-1]
    assert json.loads(first["data"])["text"] == "first line"
    assert int(first["id"]) == json.loads(first["data"])["seq"]
    sse.close()
    chat_over_ssh(h, "demo", "second line")
    again = Sse(h, "demo", token, last_id=first["id"])
    seen = again.until(lambda e: e.get("event") == "message")
    again.close()
    texts = [json.loads(e["data"])["text"] for e in seen
             if e.get("event") == "message"]
    assert texts == ["second line"]
    assert int(seen[-1]["id"]) > int(first["id"])


def test_a_websocket_chats_in_the_room(http_server, ssh_run):
    h = http_server()
    make_room(h.server, "demo")
    token = make_token(ssh_run, h)
    rc, out, err = ws_run(h, "demo", token, """
first = json.loads(await ws.recv())
print(first["type"])
await ws.send(json.dumps({"type": "chat", "text": "hi from the web"}))
while True:
    ev = json.loads(await asyncio.wait_for(ws.recv(), 20))
    if ev["type"] == "message":
        print(ev["user"], ev["text"], ev["seq"] > 0)
        break
""")
    assert rc == 0, err
    assert out.splitlines() == ["welcome", "alice hi from the web True"]
    # ?since= replays what came after that seq.
    rc, out, err = ws_run(h, "demo", token, """
while True:
    ev = json.loads(await asyncio.wait_for(ws.recv(), 20))
    if ev["type"] == "message":
        print(ev["text"], ev.get("replay", False))
        break
""", query="?since=0")
    assert rc == 0, err
    assert out.strip() == "hi from the web True"
    # And over SSH, in the room's history.
    seen = events(h.server, "demo", {"type": "history", "limit": 20},
                  {"type": "sync", "id": "s1"},
                  until=lambda e: e["type"] == "synced")
    assert [e["user"] for e in seen if e["type"] == "message"
            and e.get("text") == "hi from the web"] == ["alice"]


def test_a_read_only_token_reads_and_cannot_chat(http_server, ssh_run):
    h = http_server()
    make_room(h.server, "demo")
    token = make_token(ssh_run, h, "--read-only")
    sse = Sse(h, "demo", token)
    assert sse.status == 200
    sse.until(lambda e: e.get("event") == "welcome")
    chat_over_ssh(h, "demo", "visible to readers")
    seen = sse.until(lambda e: e.get("event") == "message")
    assert "visible to readers" in seen[-1]["data"]
    sse.close()
    rc, out, err = ws_run(h, "demo", token, """
json.loads(await ws.recv())
await ws.send(json.dumps({"type": "chat", "text": "not allowed"}))
while True:
    ev = json.loads(await asyncio.wait_for(ws.recv(), 20))
    if ev["type"] in ("error", "message"):
        print(ev["type"], ev.get("message", ev.get("text")))
        break
""")
    assert rc == 0, err
    assert out.startswith("error read-only"), out


def test_metrics_for_loopback_and_an_admins_token(http_server, ssh_run,
                                                  data_dir):
    from test_access import set_options
    h = http_server("--http-trusted-proxy", "127.0.0.1")
    status, headers, body = h.request("GET", "/metrics")
    assert status == 200, body
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    text = body.decode()
    assert re.search(r'^atrium_rooms_active\{state="ready"\} \d+$', text,
                     re.M)
    assert re.search(r"^atrium_http_requests_total \d+$", text, re.M)
    assert "# TYPE atrium_http_refusals_total counter" in text
    assert re.search(r'^atrium_http_sessions\{kind="websocket"\} 0$', text,
                     re.M)
    # Through the proxy, from elsewhere: an operator's token only.
    away = {"X-Forwarded-For": "203.0.113.7"}
    assert h.request("GET", "/metrics", headers=away)[0] == 401
    token = make_token(ssh_run, h)
    status, _, body = h.request("GET", "/metrics",
                                headers=dict(away, **bearer(token)))
    assert status == 403, body
    set_options(data_dir, "alice", "atrium-admin")
    status, _, body = h.request("GET", "/metrics",
                                headers=dict(away, **bearer(token)))
    assert status == 200, body


def test_each_request_is_one_log_line_without_its_token(http_server,
                                                        ssh_run):
    h = http_server()
    make_room(h.server, "demo")
    token = make_token(ssh_run, h)
    assert h.request("GET", "/api/rooms?secret=1",
                     headers=bearer(token))[0] == 200
    deadline = time.time() + 5
    while "GET /api/rooms 200" not in h.server.read_log():
        assert time.time() < deadline, h.server.read_log()
        time.sleep(0.05)
    line = [l for l in h.server.read_log().splitlines()
            if "GET /api/rooms 200" in l][-1]
    assert re.search(r" GET /api/rooms 200 \d+ \d+ms user=alice room=- "
                     r"token=[0-9a-f]{12} addr=127\.0\.0\.1$", line), line
    assert "secret" not in line
    assert token not in h.server.read_log()
    assert token[7:] not in h.server.read_log()


def test_the_http_process_is_restarted_and_ssh_goes_on(http_server,
                                                       ssh_run):
    h = http_server()
    first = h.pid()
    os.kill(first, 9)
    make_room(h.server, "demo")
    deadline = time.time() + 15
    while True:
        try:
            if h.request("GET", "/health", timeout=2)[0] == 200:
                break
        except OSError:
            pass
        assert time.time() < deadline, h.server.read_log()
        time.sleep(0.1)
    assert h.pid() != first
    assert "HTTP process killed by signal 9; starting it again" in \
        h.server.read_log()


def test_a_slow_reader_has_its_backlog_dropped_and_is_told(http_server,
                                                          ssh_run):
    h = http_server("--input-rate", "0")
    make_room(h.server, "demo")
    token = make_token(ssh_run, h)
    # A reader that reads nothing, with a small window.
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(30)
    s.connect(("127.0.0.1", h.port))
    s.sendall(("GET /api/rooms/demo/events HTTP/1.1\r\nHost: x\r\n"
               "Authorization: Bearer %s\r\n\r\n" % token).encode())
    time.sleep(0.5)
    # The room goes on: about 10 MB of chat, each line seen over SSH.
    big = "x" * 60000
    lines = [{"type": "chat", "text": "%d %s" % (i, big)} for i in range(160)]
    seen = events(h.server, "demo", *lines,
                  until=lambda e: e["type"] == "message"
                  and e["text"].startswith("159 "), timeout=120)
    assert seen[-1]["text"].startswith("159 ")
    # The reader, reading now, is told what it missed.
    data = b""
    while b"event: dropped" not in data:
        got = s.recv(1 << 20)
        assert got, "the stream ended without a dropped event"
        data += got
        data = data[-(2 << 20):]
    s.close()
    assert "a slow event stream's backlog dropped" in h.server.read_log()


CADDY = shutil.which("caddy")


@pytest.mark.skipif(not CADDY, reason="Debian's caddy is not installed")
def test_the_caddy_example_serves_rooms_over_tls(http_server, ssh_run,
                                                 tmp_path):
    h = http_server("--http-trusted-proxy", "127.0.0.1")
    make_room(h.server, "demo")
    token = make_token(ssh_run, h)
    port = free_port()
    with open(os.path.join(os.path.dirname(__file__), "..", "packaging",
                           "Caddyfile.example")) as f:
        example = f.read()
    # The example as shipped, on a port of ours with Caddy's own CA.
    site = example.replace("atrium.example.org {",
                           "{\n\tadmin off\n}\n\nhttps://localhost:%d {\n"
                           "\ttls internal" % port)
    site = site.replace("127.0.0.1:8080", "127.0.0.1:%d" % h.port)
    assert site != example and "tls internal" in site
    conf = tmp_path / "Caddyfile"
    conf.write_text(site)
    env = dict(os.environ, HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path))
    caddy = subprocess.Popen([CADDY, "run", "--config", str(conf),
                              "--adapter", "caddyfile"], env=env,
                             stdout=subprocess.DEVNULL,
                             stderr=open(tmp_path / "caddy.log", "w"))
    tls = ssl._create_unverified_context()
    try:
        deadline = time.time() + 30
        while True:
            try:
                c = http.client.HTTPSConnection("localhost", port,
                                                timeout=5, context=tls)
                c.request("GET", "/health")
                r = c.getresponse()
                if r.status == 200 and r.read() == b"ok\n":
                    break
            except OSError:
                pass
            assert time.time() < deadline, (tmp_path / "caddy.log").read_text()
            time.sleep(0.2)
        c = http.client.HTTPSConnection("localhost", port, timeout=20,
                                        context=tls)
        c.request("GET", "/api/rooms/demo/events", headers=bearer(token))
        r = c.getresponse()
        assert r.status == 200
        sse = Sse.__new__(Sse)
        sse.conn, sse.resp, sse.status = c, r, r.status
        sse.until(lambda e: e.get("event") == "welcome")
        chat_over_ssh(h, "demo", "through the proxy")
        seen = sse.until(lambda e: e.get("event") == "message")
        assert json.loads(seen[-1]["data"])["text"] == "through the proxy"
        c.close()
        rc, out, err = ws_run(h, "demo", token, """
json.loads(await ws.recv())
await ws.send(json.dumps({"type": "chat", "text": "wss works"}))
while True:
    ev = json.loads(await asyncio.wait_for(ws.recv(), 20))
    if ev["type"] == "message":
        print(ev["text"])
        break
""", base="wss://localhost:%d" % port)
        assert rc == 0, err
        assert out.strip() == "wss works"
    finally:
        caddy.kill()
        caddy.wait(10)


def test_a_websocket_keeps_to_max_commands_per_user(http_server, ssh_run):
    h = http_server("--max-commands-per-user", "1")
    make_room(h.server, "demo")
    token = make_token(ssh_run, h)
    rc, out, err = ws_run(h, "demo", token, """
json.loads(await ws.recv())
await ws.send(json.dumps({"type": "exec", "id": "a", "command": "sleep 3"}))
await ws.send(json.dumps({"type": "exec", "id": "b", "command": "true"}))
while True:
    ev = json.loads(await asyncio.wait_for(ws.recv(), 30))
    if ev["type"] == "error" and ev.get("id") == "b":
        print("refused", "max-commands-per-user" in ev["message"])
    if ev["type"] == "exec_result" and ev.get("id") == "a":
        print("a", ev["exitCode"])
        break
await ws.send(json.dumps({"type": "exec", "id": "c", "command": "true"}))
while True:
    ev = json.loads(await asyncio.wait_for(ws.recv(), 30))
    if ev.get("id") == "c" and ev["type"] in ("exec_result", "error"):
        print("c", ev["type"], ev.get("exitCode"))
        break
""")
    assert rc == 0, err
    assert out.splitlines() == ["refused True", "a 0", "c exec_result 0"]


def test_health_answers_while_a_large_rooms_listing_is_built(
        http_server, data_dir, ssh_run):
    import select
    from test_access import set_options
    h = http_server()
    make_room(h.server, "demo")
    token = make_token(ssh_run, h)
    set_options(data_dir, "alice", "atrium-admin")
    # rooms made quickly: a directory each is a room to the listing (an
    # open room with no record yet), and an admin may see every one
    rooms = os.path.join(str(data_dir), "rooms")
    for i in range(20000):
        os.mkdir(os.path.join(rooms, "r%05d" % i))
    first = []
    for _ in range(3):
        listing = socket.create_connection(("127.0.0.1", h.port), timeout=60)
        listing.sendall(("GET /api/rooms HTTP/1.1\r\nHost: x\r\n"
                         "Authorization: Bearer %s\r\nConnection: close"
                         "\r\n\r\n" % token).encode())
        health = socket.create_connection(("127.0.0.1", h.port), timeout=60)
        health.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n"
                       b"Connection: close\r\n\r\n")
        ready, _, _ = select.select([listing, health], [], [], 60)
        first.append("health" if health in ready and listing not in ready
                     else "listing")
        got = b""
        while True:
            more = listing.recv(1 << 20)
            if not more:
                break
            got += more
        assert got.startswith(b"HTTP/1.1 200"), got[:200]
        body = json.loads(got.partition(b"\r\n\r\n")[2])
        assert len(body["rooms"]) == 1000 and body["truncated"] is True
        assert health.recv(4096).startswith(b"HTTP/1.1 200")
        listing.close()
        health.close()
    assert first == ["health"] * 3, first
