"""A room's workspace files over HTTP (atriumd(8), HTTP, Files): GET (with
Range), HEAD, PUT, DELETE and a directory's listing at
/api/rooms/ROOM/files/PATH, and Cloudflare's /c/NAME/file/workspace/PATH,
against a running atriumd with --http-listen, checked over SSH as a
member of the room sees them.
"""
import hashlib
import http.client
import json
import os
import signal
import socket
import subprocess
import time

import pytest

from conftest import _pids_using, make_room
from http_run import http_server, token_for


def url(srv, path):
    return "http://127.0.0.1:%d%s" % (srv.http_port, path)


def curl(srv, tok, method, path, *args, timeout=120, input=None):
    """(status, body bytes, headers text) of one curl request."""
    p = subprocess.run(["curl", "-sS", "--path-as-is", "-X", method,
                        "-D", "-", "-H", "Authorization: Bearer " + tok,
                        *args, url(srv, path)],
                       capture_output=True, timeout=timeout, input=input)
    assert p.returncode == 0, p.stderr
    head, _, body = p.stdout.partition(b"\r\n\r\n")
    while head.startswith(b"HTTP/1.1 100"):
        head, _, body = body.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, body, head.decode("latin-1")


def files(room, path=""):
    return "/api/rooms/%s/files/%s" % (room, path)


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


def vm_hwm_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM")


def wait_for(pred, what, timeout=20):
    end = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError("%s: not within %s s" % (what, timeout))
        time.sleep(0.05)


def ls_la(srv, ssh_run, room, path="."):
    rc, out, err = ssh_run(srv, room, "ls -A1 " + path)
    assert rc == 0, err
    return sorted(out.split())


@pytest.fixture
def served(atriumd, data_dir, ssh_run):
    srv = http_server(atriumd, data_dir)
    make_room(srv, "work")
    return srv, token_for(srv, "alice")


def test_put_then_get_100_mb_byte_for_byte_in_bounded_memory(
        atriumd, data_dir, ssh_run, tmp_path):
    srv = http_server(atriumd, data_dir, "--http-max-body", "128M")
    make_room(srv, "work")
    tok = token_for(srv, "alice")
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        for _ in range(100):
            f.write(os.urandom(1 << 20))
    md5 = hashlib.md5(big.read_bytes()).hexdigest()
    pid = http_pid(srv)
    before = vm_hwm_kb(pid)
    status, body, _ = curl(srv, tok, "PUT", files("work", "data/big.bin"),
                           "-T", str(big))
    assert status == 201, body
    assert json.loads(body) == {"path": "data/big.bin", "size": 100 << 20}
    rc, out, err = ssh_run(srv, "work", "md5sum data/big.bin")
    assert out.split()[0] == md5, err
    p = subprocess.run(["curl", "-sS", "-H", "Authorization: Bearer " + tok,
                        url(srv, files("work", "data/big.bin"))],
                       capture_output=True, timeout=120)
    assert hashlib.md5(p.stdout).hexdigest() == md5
    after = vm_hwm_kb(pid)
    # 200 MB went through; the process grew by far less than one copy
    assert after - before < 16 * 1024, (before, after)
    # a replaced file is 204, and ssh sees the new bytes
    status, body, _ = curl(srv, tok, "PUT", files("work", "data/big.bin"),
                           "--data-binary", "small now\n")
    assert status == 204, body
    assert ssh_run(srv, "work", "cat data/big.bin")[1] == "small now\n"


def test_range_head_listing_and_delete(served, ssh_run):
    srv, tok = served
    data = bytes(range(256)) * 40
    assert ssh_run(srv, "work", "mkdir -p d/sub")[0] == 0
    assert curl(srv, tok, "PUT", files("work", "d/f.bin"), "--data-binary",
                "@-", input=data)[0] == 201
    rc, out, _ = ssh_run(srv, "work", "md5sum d/f.bin")
    assert out.split()[0] == hashlib.md5(data).hexdigest()
    status, body, head = curl(srv, tok, "GET", files("work", "d/f.bin"))
    assert status == 200 and body == data
    assert "Accept-Ranges: bytes" in head and "ETag: " in head
    assert "Last-Modified: " in head
    assert "Content-Length: %d" % len(data) in head
    status, body, head = curl(srv, tok, "GET", files("work", "d/f.bin"),
                              "-H", "Range: bytes=100-199")
    assert status == 206 and body == data[100:200]
    assert "Content-Range: bytes 100-199/%d" % len(data) in head
    status, body, head = curl(srv, tok, "GET", files("work", "d/f.bin"),
                              "-H", "Range: bytes=-10")
    assert status == 206 and body == data[-10:]
    status, body, head = curl(srv, tok, "GET", files("work", "d/f.bin"),
                              "-H", "Range: bytes=%d-" % len(data))
    assert status == 416
    assert "Content-Range: bytes */%d" % len(data) in head
    p = subprocess.run(["curl", "-sS", "-I", "-H", "Authorization: Bearer " +
                        tok, url(srv, files("work", "d/f.bin"))],
                       capture_output=True, timeout=60, text=True)
    assert p.stdout.startswith("HTTP/1.1 200")
    assert "Content-Length: %d" % len(data) in p.stdout
    status, body, head = curl(srv, tok, "GET", files("work", "d"))
    assert status == 200 and "application/json" in head
    listing = json.loads(body)
    assert [(e["name"], e["type"]) for e in listing] == [
        ("f.bin", "file"), ("sub", "directory")]
    assert listing[0]["size"] == len(data) and listing[0]["mtime"] > 0
    status, body, _ = curl(srv, tok, "GET", "/api/rooms/work/files")
    assert status == 200 and "d" in [e["name"] for e in json.loads(body)]
    status, body, _ = curl(srv, tok, "DELETE", files("work", "d"))
    assert status == 409, body
    assert "not empty" in json.loads(body)["error"]
    assert curl(srv, tok, "DELETE", files("work", "d/f.bin"))[0] == 204
    assert curl(srv, tok, "DELETE", files("work", "d/sub"))[0] == 204
    assert curl(srv, tok, "DELETE", files("work", "d/nope"))[0] == 404
    assert curl(srv, tok, "GET", files("work", "d/f.bin"))[0] == 404
    assert ls_la(srv, ssh_run, "work", "d") == []


def test_a_cut_upload_leaves_the_old_file_and_no_stray(served, ssh_run):
    srv, tok = served
    assert ssh_run(srv, "work", "echo precious > keep.txt")[0] == 0
    s = socket.create_connection(("127.0.0.1", srv.http_port), timeout=30)
    s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Content-Length: %d\r\n\r\n" % (files("work", "keep.txt"), tok,
                                               10 << 20)).encode())
    for _ in range(4):
        s.sendall(b"x" * (1 << 20))
    # the upload is on its way: its temporary file is in the directory
    wait_for(lambda: len(ls_la(srv, ssh_run, "work")) == 2,
             "the upload's temporary file")
    s.close()
    wait_for(lambda: ls_la(srv, ssh_run, "work") == ["keep.txt"],
             "the cut upload removed")
    assert ssh_run(srv, "work", "cat keep.txt")[1] == "precious\n"
    status, body, _ = curl(srv, tok, "GET", files("work"))
    assert [e["name"] for e in json.loads(body)] == ["keep.txt"]


def test_a_full_workspace_is_507_and_keeps_nothing(atriumd, data_dir,
                                                   ssh_run, tmp_path):
    srv = http_server(atriumd, data_dir, "--quota", "8M")
    make_room(srv, "work")
    tok = token_for(srv, "alice")
    big = tmp_path / "big.bin"
    big.write_bytes(b"\x07" * (12 << 20))
    status, body, _ = curl(srv, tok, "PUT", files("work", "big.bin"),
                           "-T", str(big))
    assert status == 507, body
    assert "full" in json.loads(body)["error"]
    wait_for(lambda: ls_la(srv, ssh_run, "work") == [], "nothing left")
    assert json.loads(curl(srv, tok, "GET", files("work"))[1]) == []
    # what fits still goes in
    status, _, _ = curl(srv, tok, "PUT", files("work", "small.txt"),
                        "--data-binary", "fits")
    assert status == 201


def test_hostile_paths_are_refused_and_nothing_is_written(served, ssh_run):
    srv, tok = served
    assert ssh_run(srv, "work", "mkdir real && ln -s /etc/passwd pw && "
                   "ln -s real rel && ln -s /workspace/real abs")[0] == 0
    before = ls_la(srv, ssh_run, "work")
    for path, want in [("../x", 400), ("%2e%2e/x", 400), ("a/%2e%2e/x", 400),
                       ("a%2fb", 400), ("a%2Fb", 400), ("a%00b", 400),
                       ("./x", 400), ("a//b", 400),
                       ("pw", 403), ("rel/x", 403), ("abs/x", 403)]:
        for method in ("PUT", "DELETE", "GET"):
            args = ("--data-binary", "evil") if method == "PUT" else ()
            status, body, _ = curl(srv, tok, method, files("work", path),
                                   *args)
            assert status == want, (method, path, status, body)
            assert json.loads(body)["error"], body
    assert ls_la(srv, ssh_run, "work") == before
    assert ls_la(srv, ssh_run, "work", "real") == []
    assert ssh_run(srv, "work", "readlink pw")[1] == "/etc/passwd\n"
    with open("/etc/passwd", "rb") as f:
        assert b"evil" not in f.read()


def test_a_file_put_over_http_is_there_for_ssh_cat(served, ssh_run):
    srv, tok = served
    status, body, _ = curl(srv, tok, "PUT", files("work", "notes/hello.txt"),
                           "--data-binary", "hello from http\n")
    assert status == 201, body
    assert ssh_run(srv, "work", "cat notes/hello.txt")[1] == \
        "hello from http\n"
    assert ssh_run(srv, "work", "stat -c %U notes/hello.txt")[0] == 0


def test_a_read_only_token_reads_but_may_not_write(served, ssh_run):
    srv, tok = served
    ro = token_for(srv, "alice", read_only=True)
    assert curl(srv, tok, "PUT", files("work", "r.txt"),
                "--data-binary", "x")[0] == 201
    assert curl(srv, ro, "GET", files("work", "r.txt"))[1] == b"x"
    assert curl(srv, ro, "PUT", files("work", "r.txt"),
                "--data-binary", "y")[0] == 403
    assert curl(srv, ro, "PUT", files("work", "new.txt"),
                "--data-binary", "y")[0] == 403
    assert curl(srv, ro, "DELETE", files("work", "r.txt"))[0] == 403
    assert ls_la(srv, ssh_run, "work") == ["r.txt"]
    assert ssh_run(srv, "work", "cat r.txt")[1] == "x"


def test_cloudflare_file_recipe(served, ssh_run):
    srv, tok = served
    status, _, _ = curl(srv, tok, "PUT", "/c/work/file/workspace/app/main.py",
                        "--data-binary", "print('hi')\n")
    assert status in (200, 201, 204)
    assert ssh_run(srv, "work", "cat app/main.py")[1] == "print('hi')\n"
    status, body, head = curl(srv, tok, "GET",
                              "/c/work/file/workspace/app/main.py")
    assert status == 200 and body == b"print('hi')\n"
    assert "application/octet-stream" in head
    for path in ("/c/work/file/etc/passwd", "/c/work/file/tmp/x",
                 "/c/work/file/workspace"):
        assert curl(srv, tok, "GET", path)[0] == 400, path
        assert curl(srv, tok, "PUT", path, "--data-binary", "x")[0] == 400
    assert curl(srv, tok, "GET", "/c/work/file/workspace/app")[0] == 400


def test_conditional_get_answers_304_and_a_changed_file_200(served, ssh_run):
    srv, tok = served
    assert curl(srv, tok, "PUT", files("work", "c.txt"), "--data-binary",
                "one\n")[0] == 201
    status, body, head = curl(srv, tok, "GET", files("work", "c.txt"))
    assert status == 200 and body == b"one\n"
    fields = dict(line.split(": ", 1) for line in head.split("\r\n")[1:])
    etag, modified = fields["ETag"], fields["Last-Modified"]
    status, body, head = curl(srv, tok, "GET", files("work", "c.txt"),
                              "-H", "If-None-Match: " + etag)
    assert status == 304 and body == b""
    assert "ETag: " + etag in head
    status, body, _ = curl(srv, tok, "GET", files("work", "c.txt"),
                           "-H", "If-Modified-Since: " + modified)
    assert status == 304 and body == b""
    # an ETag that is not the file's wins over a date that is current
    status, body, _ = curl(srv, tok, "GET", files("work", "c.txt"),
                           "-H", 'If-None-Match: "stale"',
                           "-H", "If-Modified-Since: " + modified)
    assert status == 200 and body == b"one\n"
    status, body, _ = curl(srv, tok, "GET", files("work", "c.txt"),
                           "-H", "If-Modified-Since: "
                           "Thu, 01 Jan 1970 00:00:00 GMT")
    assert status == 200 and body == b"one\n"
    # changed over ssh: the old ETag no longer matches
    assert ssh_run(srv, "work", "echo two-longer > c.txt")[0] == 0
    status, body, head = curl(srv, tok, "GET", files("work", "c.txt"),
                              "-H", "If-None-Match: " + etag)
    assert status == 200 and body == b"two-longer\n"
    assert "ETag: " + etag not in head


def test_file_types_never_let_a_workspace_file_run_in_the_page(served):
    srv, tok = served
    page = b"<script>alert(1)</script>"
    expect = {
        "notes.txt": ("text/plain; charset=utf-8", False),
        "main.c": ("text/plain; charset=utf-8", False),
        "app.js": ("text/plain; charset=utf-8", False),
        "data.json": ("application/json", False),
        "pic.png": ("image/png", False),
        "blob.bin": ("application/octet-stream", False),
        "index.html": ("application/octet-stream", True),
        "page.HTM": ("application/octet-stream", True),
        "logo.svg": ("application/octet-stream", True),
        "feed.xml": ("application/octet-stream", True),
    }
    for name, (ctype, attached) in expect.items():
        assert curl(srv, tok, "PUT", files("work", name), "--data-binary",
                    "@-", input=page)[0] == 201
        for method in ("GET", "HEAD"):
            args = ["-I"] if method == "HEAD" else []
            status, body, head = curl(srv, tok, "GET" if method == "GET"
                                      else "HEAD", files("work", name), *args)
            assert status == 200, (name, method)
            assert "Content-Type: %s\r\n" % ctype in head + "\r\n", (name,
                                                                    head)
            assert ("Content-Disposition: attachment" in head) == attached, \
                (name, head)
            assert "X-Content-Type-Options: nosniff" in head, (name, head)
    # Cloudflare's route stays octet-stream, as its example says
    status, body, head = curl(srv, tok, "GET",
                              "/c/work/file/workspace/notes.txt")
    assert status == 200 and body == page
    assert "Content-Type: application/octet-stream" in head


def agent_pid(srv, room):
    """The pid of room's atrium-agent."""
    for pid in _pids_using(os.path.join(srv.data, "rooms", room)):
        try:
            with open("/proc/%d/comm" % pid) as f:
                if f.read().strip() == "atrium-agent":
                    return pid
        except OSError:
            pass
    raise AssertionError("no atrium-agent for room %s" % room)


def ls_la_all(srv, ssh_run, room, path="."):
    """Every name of path, hidden ones too (ssh ROOM@host ls -la)."""
    rc, out, err = ssh_run(srv, room, "ls -la " + path)
    assert rc == 0, err
    return sorted(line.split()[-1] for line in out.splitlines()[1:]
                  if line.split()[-1] not in (".", ".."))


def test_an_upload_cut_by_the_agents_end_leaves_no_temporary_file(
        served, ssh_run):
    srv, tok = served
    assert ssh_run(srv, "work", "mkdir -p deep/er && echo precious > "
                   "deep/er/keep.txt && echo top > top.txt")[0] == 0
    socks = []
    for path in ("deep/er/keep.txt", "new.bin"):
        s = socket.create_connection(("127.0.0.1", srv.http_port),
                                     timeout=30)
        s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                   "%s\r\nContent-Length: %d\r\n\r\n"
                   % (files("work", path), tok, 10 << 20)).encode())
        s.sendall(b"x" * (1 << 20))
        socks.append(s)
    # both uploads are on their way: their temporary files are there
    wait_for(lambda: len(ls_la_all(srv, ssh_run, "work", "deep/er")) == 2
             and len(ls_la_all(srv, ssh_run, "work")) == 3,
             "the uploads' temporary files")
    os.kill(agent_pid(srv, "work"), signal.SIGKILL)
    for s in socks:
        s.close()
    # the agent is started again by the next use (a command that ran
    # while it stopped is refused: asked again); after it no stray is
    # left, and the files the uploads were to replace are as they were

    def listing(path):
        rc, out, _ = ssh_run(srv, "work", "ls -la " + path)
        return sorted(line.split()[-1] for line in out.splitlines()[1:]
                      if line.split()[-1] not in (".", "..")) \
            if rc == 0 else None

    wait_for(lambda: listing("deep/er") == ["keep.txt"] and
             listing(".") == ["deep", "top.txt"],
             "the temporary files removed")
    assert ssh_run(srv, "work", "cat deep/er/keep.txt")[1] == "precious\n"
    # and an upload after the restart works as before
    status, body, _ = curl(srv, tok, "PUT", files("work", "deep/er/n.txt"),
                           "--data-binary", "fresh\n")
    assert status == 201, body
    assert ls_la_all(srv, ssh_run, "work", "deep/er") == ["keep.txt",
                                                          "n.txt"]
