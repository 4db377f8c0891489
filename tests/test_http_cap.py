"""max-commands-per-user over SSH and HTTP together (atriumd(8), LIMITS
and HTTP), and the command counts of GET /metrics.

The monitor counts a person's running commands for both fronts: a command
started over SSH and one over HTTP fill a cap of 2, and a third over
either is refused with the same words.  Commands are known to be running
when they printed "started"; over when their end is seen.
"""
import base64
import http.client
import json
import os
import re
import subprocess
import time

import pytest

from conftest import make_room, ssh_command
from http_run import http_server, token_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")

WORDS = re.compile(r"command refused: you already run 2 commands \(.*\), "
                   r"the most allowed per user \(max-commands-per-user = 2\)"
                   r"; wait for one to end")


class HttpExec:
    """POST /api/rooms/{room}/exec, its records read as they come."""

    def __init__(self, srv, token, room, command):
        self.conn = http.client.HTTPConnection("127.0.0.1", srv.http_port,
                                               timeout=60)
        self.conn.request("POST", "/api/rooms/%s/exec?command=%s" % (
            room, command.replace(" ", "+").replace(";", "%3B")), body=b"",
            headers={"Authorization": "Bearer " + token})
        self.resp = self.conn.getresponse()
        self.status = self.resp.status

    def record(self):
        line = self.resp.readline()
        assert line, "the response ended"
        return json.loads(line)

    def until_stdout(self, text):
        got = b""
        while text.encode() not in got:
            rec = self.record()
            assert "exit" not in rec, rec
            if rec.get("stream") == "stdout":
                got += base64.b64decode(rec["data"])

    def until_exit(self):
        while True:
            rec = self.record()
            if "exit" in rec:
                return rec["exit"]

    def close(self):
        self.conn.close()


def http_refusal(srv, token, room, command="true"):
    x = HttpExec(srv, token, room, command)
    try:
        body = x.resp.read()
        return x.status, body
    finally:
        x.close()


class SshCommand:
    """ssh ROOM@host 'echo started; cat >/dev/null', until stdin ends."""

    def __init__(self, srv, room, user="alice"):
        self.p = subprocess.Popen(
            ssh_command(srv, room, "echo started; cat >/dev/null", user=user),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        assert line == "started\n", (line, self.p.stderr.read())

    def end(self):
        if self.p.stdin.closed:
            return
        self.p.stdin.close()
        self.p.stdin = None
        out, err = self.p.communicate(timeout=60)
        assert self.p.returncode == 0, err


def metric(srv, name, labels):
    """The value of one series of GET /metrics (from loopback)."""
    c = http.client.HTTPConnection("127.0.0.1", srv.http_port, timeout=20)
    try:
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
    finally:
        c.close()
    m = re.search(r"^%s\{%s\} (\d+)$" % (re.escape(name), re.escape(labels)),
                  text, re.M)
    assert m, text
    return int(m.group(1))


def wait_for(pred, what, timeout=30):
    deadline = time.time() + timeout
    while not pred():
        assert time.time() < deadline, what
        time.sleep(0.05)


def test_the_cap_is_shared_by_ssh_and_http(atriumd, data_dir, ssh_run):
    srv = http_server(atriumd, data_dir, "--max-commands-per-user", "2")
    make_room(srv, "demo")
    tok = token_for(srv, "alice")
    held = SshCommand(srv, "demo")
    x = HttpExec(srv, tok, "demo", "echo started; sleep 2")
    try:
        assert x.status == 200
        x.until_stdout("started")
        assert metric(srv, "atrium_commands_running", 'front="ssh"') == 1
        assert metric(srv, "atrium_commands_running", 'front="http"') == 1
        # A third over SSH, and over HTTP: the same words.
        rc, out, err = ssh_run(srv, "demo", "echo third")
        assert rc != 0 and out == "", (rc, out, err)
        said = WORDS.search(err)
        assert said, err
        status, body = http_refusal(srv, tok, "demo")
        assert status == 429, body
        assert json.loads(body)["error"] == said.group(0)
        assert metric(srv, "atrium_refusals_total",
                      'reason="cap",front="ssh"') == 1
        assert metric(srv, "atrium_refusals_total",
                      'reason="cap",front="http"') == 1
        # Someone else is not counted with alice.
        assert ssh_run(srv, "demo", "echo bob", user="bob")[:2] == \
            (0, "bob\n")
        # Once the HTTP one ends, another runs (over either front).
        assert x.until_exit() == 0
        x.close()
        x = HttpExec(srv, tok, "demo", "echo fourth")
        assert x.status == 200 and x.until_exit() == 0
        x.close()
        assert ssh_run(srv, "demo", "echo fifth")[:2] == (0, "fifth\n")
    finally:
        x.close()
        held.end()


def test_a_restarted_http_process_frees_its_count(atriumd, data_dir,
                                                  ssh_run):
    from test_http import Http
    srv = http_server(atriumd, data_dir, "--max-commands-per-user", "2")
    make_room(srv, "demo")
    tok = token_for(srv, "alice")
    held = SshCommand(srv, "demo")
    x = HttpExec(srv, tok, "demo", "echo started; sleep 600")
    try:
        x.until_stdout("started")
        rc, _, err = ssh_run(srv, "demo", "true")
        assert rc != 0 and WORDS.search(err), err
        os.kill(Http(srv, srv.http_port).pid(), 9)
        x.close()
        wait_for(lambda: "HTTP process killed by signal 9" in srv.read_log(),
                 srv.read_log())
        assert ssh_run(srv, "demo", "echo freed")[:2] == (0, "freed\n")
    finally:
        x.close()
        held.end()


def test_metrics_show_ssh_sessions_by_kind(atriumd, data_dir, ssh_run):
    """The network process reports its sessions to the monitor (at most a
    moment late): one ssh exec held open shows as one exec channel on one
    connection, and is gone from the counts once it ends."""
    srv = http_server(atriumd, data_dir)
    make_room(srv, "demo")
    held = SshCommand(srv, "demo")
    try:
        wait_for(lambda: metric(srv, "atrium_ssh_sessions",
                                'kind="exec"') == 1, "no exec counted")
        assert metric(srv, "atrium_ssh_sessions", 'kind="connections"') == 1
        assert metric(srv, "atrium_ssh_sessions", 'kind="chat"') == 0
        assert metric(srv, "atrium_refusals_total",
                      'reason="limit",front="ssh"') == 0
    finally:
        held.end()
    wait_for(lambda: metric(srv, "atrium_ssh_sessions",
                            'kind="connections"') == 0, "still counted")
    assert metric(srv, "atrium_ssh_sessions", 'kind="exec"') == 0


def test_metrics_count_model_requests_tokens_and_errors(atriumd, data_dir,
                                                       model_server):
    """One turn answered (100 tokens in, 7 out) and one refused by the
    model server: the provider's requests, tokens and errors, as the
    agent reports them to the monitor's watchdog (at most a ping late)."""
    from model_server import Fault, Reply
    from test_access import events
    model_server.script(Reply(text="hello there", usage=(100, 7)),
                        Fault(400, message="no such model"))
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-test-metrics")
    srv = http_server(atriumd, data_dir, "--provider", "anthropic",
                      "--model-url", model_server.url, "--model",
                      "test-model", env=env)
    make_room(srv, "demo")
    for text in ("hi", "again"):
        events(srv, "demo", {"type": "prompt", "text": text},
               until=lambda e: e["type"] == "turn_end", timeout=60)
    series = [("atrium_model_requests_total", 'provider="anthropic"', 1),
              ("atrium_model_tokens_total",
               'provider="anthropic",direction="input"', 100),
              ("atrium_model_tokens_total",
               'provider="anthropic",direction="output"', 7),
              ("atrium_model_errors_total", 'provider="anthropic"', 1)]

    def seen():
        try:
            return all(metric(srv, n, l) == v for n, l, v in series)
        except AssertionError:
            return False
    wait_for(seen, [(n, l) for n, l, _ in series])
