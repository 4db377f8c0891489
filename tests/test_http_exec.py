"""POST /api/rooms/{room}/exec: a command over HTTP, driven with the real
curl against a running atriumd with --http-listen (atriumd(8), HTTP).

stdin is the request body, stdout and stderr come back as they are
written, one JSON object a line ({"stream", "data": base64}), and the exit
status last ({"exit", "signal"}).
"""
import base64
import json
import os
import subprocess
import time

import pytest

from conftest import free_port, make_room
from http_run import http_server, token_for


def exec_url(srv, room, query):
    return "http://127.0.0.1:%d/api/rooms/%s/exec?%s" % (srv.http_port, room,
                                                          query)


def records(text):
    """The response's JSON lines, in order."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def output(recs, stream="stdout"):
    return b"".join(base64.b64decode(r["data"]) for r in recs
                    if r.get("stream") == stream)


def curl_exec(srv, token, room, query, data_args=(), timeout=120):
    p = subprocess.run(["curl", "-sS", "-X", "POST", "-H",
                        "Authorization: Bearer " + token] + list(data_args) +
                       [exec_url(srv, room, query)],
                       capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def test_exit_status_stdout_and_stderr(atriumd, data_dir, ssh_run):
    srv = http_server(atriumd, data_dir)
    make_room(srv, "work")
    tok = token_for(srv, "alice")
    rc, out, err = curl_exec(srv, tok, "work",
                             "command=echo+out%3B+echo+err+%3E%262%3B+exit+3")
    assert rc == 0, err
    recs = records(out)
    assert output(recs) == b"out\n"
    assert output(recs, "stderr") == b"err\n"
    assert recs[-1] == {"exit": 3}


def test_argv_and_cwd(atriumd, data_dir, ssh_run):
    srv = http_server(atriumd, data_dir)
    make_room(srv, "work")
    assert ssh_run(srv, "work", "mkdir -p sub/dir")[0] == 0
    tok = token_for(srv, "alice")
    rc, out, err = curl_exec(srv, tok, "work",
                             "arg=sh&arg=-c&arg=pwd%3B+echo+%24%23&arg=x&"
                             "arg=a+b&cwd=/workspace/sub/dir")
    assert rc == 0, err
    recs = records(out)
    assert output(recs) == b"/workspace/sub/dir\n1\n"
    assert recs[-1] == {"exit": 0}


def test_stdin_streams_a_large_body(atriumd, data_dir, ssh_run, tmp_path):
    """A 50 MB body reaches the command through its pipe as it arrives:
    wc -c counts every byte, and the process never holds the body."""
    srv = http_server(atriumd, data_dir)
    make_room(srv, "work")
    tok = token_for(srv, "alice")
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.write(os.urandom(1 << 20) * 50)
    rc, out, err = curl_exec(srv, tok, "work", "command=wc+-c",
                             ["--data-binary", "@" + str(big)])
    assert rc == 0, err
    recs = records(out)
    assert output(recs).strip() == str(50 << 20).encode()
    assert recs[-1] == {"exit": 0}


def test_stdout_streams_before_the_end(atriumd, data_dir, ssh_run):
    """The first line arrives while the command still runs: it waits for
    a file that the test makes only after it has read that line."""
    srv = http_server(atriumd, data_dir)
    make_room(srv, "work")
    tok = token_for(srv, "alice")
    cmd = ("echo+first%3B+while+%5B+%21+-e+go+%5D%3B+do+sleep+0.05%3B+done"
           "%3B+echo+second")
    p = subprocess.Popen(["curl", "-sS", "-N", "-X", "POST", "-H",
                          "Authorization: Bearer " + tok,
                          exec_url(srv, "work", "command=" + cmd)],
                         stdout=subprocess.PIPE)
    try:
        first = json.loads(p.stdout.readline())
        assert base64.b64decode(first["data"]) == b"first\n"
        assert p.poll() is None
        assert ssh_run(srv, "work", "touch go")[0] == 0
        rest = records(p.stdout.read().decode())
    finally:
        p.kill()
        p.wait()
    assert output(rest) == b"second\n"
    assert rest[-1] == {"exit": 0}


def test_killed_by_a_signal(atriumd, data_dir, ssh_run):
    srv = http_server(atriumd, data_dir)
    make_room(srv, "work")
    tok = token_for(srv, "alice")
    rc, out, err = curl_exec(srv, tok, "work", "command=kill+-9+%24%24")
    assert rc == 0, err
    assert records(out)[-1] == {"exit": 137, "signal": "KILL"}


def test_read_only_token_cannot_exec(atriumd, data_dir, ssh_run):
    srv = http_server(atriumd, data_dir)
    make_room(srv, "work")
    tok = token_for(srv, "alice", read_only=True)
    p = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                        "-X", "POST", "-H", "Authorization: Bearer " + tok,
                        exec_url(srv, "work", "command=touch+x")],
                       capture_output=True, text=True, timeout=60)
    assert p.stdout == "403"
    assert ssh_run(srv, "work", "test -e x")[0] == 1


def test_bad_requests(atriumd, data_dir, ssh_run):
    srv = http_server(atriumd, data_dir)
    make_room(srv, "work")
    tok = token_for(srv, "alice")
    for query in ("", "command=ls&arg=ls", "command=ls&cwd=/etc",
                  "command=ls&cwd=../x"):
        p = subprocess.run(["curl", "-sS", "-w", "\n%{http_code}", "-X",
                            "POST", "-H", "Authorization: Bearer " + tok,
                            exec_url(srv, "work", query)],
                           capture_output=True, text=True, timeout=60)
        body, code = p.stdout.rsplit("\n", 1)
        assert code == "400", (query, p.stdout)
        assert "error" in json.loads(body)


def _rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _pid_of(name, arg=""):
    """The pid of a process called name whose command line holds arg."""
    for pid in subprocess.run(["pgrep", "-x", name], capture_output=True,
                              text=True).stdout.split():
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if arg.encode() in f.read():
                    return int(pid)
        except OSError:
            continue
    return None


def _wchan(pid):
    try:
        with open("/proc/%d/wchan" % pid) as f:
            return f.read()
    except OSError:
        return ""


def test_a_slow_reader_holds_the_command_not_memory(atriumd, data_dir,
                                                    ssh_run):
    """A client that stops reading leaves the command blocked on its full
    pipe: atriumd-http's memory stays small, and every byte still comes
    once the client reads again."""
    srv = http_server(atriumd, data_dir)
    make_room(srv, "work")
    tok = token_for(srv, "alice")
    total = 300 << 20
    p = subprocess.Popen(["curl", "-sS", "-N", "-X", "POST", "-H",
                          "Authorization: Bearer " + tok,
                          exec_url(srv, "work",
                                   "command=head+-c+%d+/dev/zero" % total)],
                         stdout=subprocess.PIPE)
    try:
        first = json.loads(p.stdout.readline())  # it runs; now read nothing
        # argv: atriumd-http MONITOR-PID ...
        http = _pid_of("atriumd-http", "\0%d\0" % srv.proc.pid)
        head = None
        deadline = time.time() + 60
        while time.time() < deadline:
            head = head or _pid_of("head", str(total))
            if head and _wchan(head).endswith("pipe_write"):
                break
            time.sleep(0.05)
        assert head and _wchan(head).endswith("pipe_write"), \
            "the command never blocked on its pipe"
        assert _rss_kb(http) < 24 * 1024
        n = len(base64.b64decode(first["data"]))
        last = None
        for line in p.stdout:
            rec = json.loads(line)
            if "data" in rec:
                n += len(base64.b64decode(rec["data"]))
            last = rec
    finally:
        p.kill()
        p.wait()
    assert last == {"exit": 0}
    assert n == total
    assert _rss_kb(http) < 24 * 1024


def test_a_client_that_leaves_kills_its_command(atriumd, data_dir, ssh_run):
    srv = http_server(atriumd, data_dir)
    make_room(srv, "work")
    tok = token_for(srv, "alice")
    p = subprocess.Popen(["curl", "-sS", "-N", "-X", "POST", "-H",
                          "Authorization: Bearer " + tok,
                          exec_url(srv, "work",
                                   "command=echo+up%3B+exec+sleep+4242")],
                         stdout=subprocess.PIPE)
    try:
        assert base64.b64decode(json.loads(p.stdout.readline())["data"]) \
            == b"up\n"
        deadline = time.time() + 30
        while time.time() < deadline and not _pid_of("sleep", "4242"):
            time.sleep(0.05)
        assert _pid_of("sleep", "4242")
    finally:
        p.kill()
        p.wait()
    deadline = time.time() + 30
    while time.time() < deadline and _pid_of("sleep", "4242"):
        time.sleep(0.05)
    assert not _pid_of("sleep", "4242")
