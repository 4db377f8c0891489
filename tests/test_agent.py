"""atrium-agent driven directly: a room's actor on its unix socket, with a
scripted model server, a real sandbox and a real room.db.

Run as root: /usr/bin/python3 -m pytest -q tests/test_agent.py
The binaries are $ATRIUM_BUILD/atrium-agent and atrium-sandbox-init
(ATRIUM_BUILD defaults to build).  Each test gets its own data directory;
every agent and model server is stopped at teardown, also when a test fails.
"""
import json
import contextlib
import os
import re
import select
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from model_server import (Cut, Fault, Hang, ModelServer, Reply,  # noqa: E402
                          StreamError, ToolCall)

BUILD = os.environ.get("ATRIUM_BUILD", "build")
BIN_DIR = BUILD if os.path.isabs(BUILD) else os.path.join(ROOT, BUILD)
AGENT = os.path.join(BIN_DIR, "atrium-agent")
FS = os.path.join(BIN_DIR, "atrium-fs")
ROOM = "demo"
SANDBOX_UID = 64222  # atrium-agent's --sandbox-uid default: a room with no uid file

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root"),
    pytest.mark.skipif(not os.path.exists(AGENT), reason="build first: "
                       "make all"),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bwrap"),
]


class Client:
    """One connection to agent.sock, speaking JSON lines."""

    def __init__(self, path, user="alice", kind="chat", **hello):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""
        self.events = []
        # As atriumd says of a key without rooms=: the first user of a new
        # room owns it (and so may change its settings).
        hello.setdefault("may_create", True)
        self.send(dict(type="hello", user=user, kind=kind, **hello))
        self.welcome = self.wait("welcome")

    def send(self, obj, fds=None):
        data = (json.dumps(obj) + "\n").encode()
        if fds:
            socket.send_fds(self.sock, [data], fds)
        else:
            self.sock.sendall(data)

    def _read(self, timeout):
        self.sock.settimeout(max(timeout, 0.01))
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            return True
        if not chunk:
            return False
        self.buf += chunk
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            ev = json.loads(line)
            assert "seq" in ev and "time" in ev, ev
            self.events.append(ev)
        return True

    def wait(self, type, timeout=15, **match):
        """The first event of type (matching fields) not yet taken."""
        end = time.monotonic() + timeout
        while True:
            for i, ev in enumerate(self.events):
                if ev.get("type") == type and all(
                        ev.get(k) == v for k, v in match.items()):
                    del self.events[:i + 1]
                    return ev
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError("no %s %s within %ss; got %s" % (
                    type, match, timeout, self.events[-20:]))
            if not self._read(left):
                raise AssertionError("agent closed the connection waiting "
                                     "for %s; got %s" % (type, self.events))

    def collect(self, until, timeout=15, stop=None, **match):
        """Every event up to and including the first `until` event; None
        (the events kept for later) when stop() comes true first."""
        end = time.monotonic() + timeout
        out = []
        while True:
            while self.events:
                ev = self.events.pop(0)
                out.append(ev)
                if ev.get("type") == until and all(
                        ev.get(k) == v for k, v in match.items()):
                    return out
            if stop and stop():
                self.events[:0] = out
                return None
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError("no %s within %ss; got %s" % (
                    until, timeout, out[-20:]))
            if not self._read(min(left, 0.1) if stop else left):
                raise AssertionError("closed; got %s" % out)

    def close(self):
        self.sock.close()


class Room:
    """A data directory for one room and the agent processes serving it."""

    def __init__(self, base):
        self.base = base
        self.room_dir = os.path.join(base, "rooms", ROOM)
        self.run_dir = os.path.join(base, "run", ROOM)
        self.workspace = os.path.join(self.run_dir, "workspace")
        os.makedirs(self.room_dir)
        os.makedirs(self.workspace)
        os.chmod(self.workspace, 0o777)  # the sandbox uid writes here
        self.sock = os.path.join(self.run_dir, "agent.sock")
        self.log = os.path.join(base, "agent.log")
        self.procs = []
        self.clients = []
        self.args = []
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}

    def start(self, *args):
        """Start atrium-agent and wait for its "ready" line."""
        if args:
            self.args = list(args)
        r, w = os.pipe()
        with open(self.log, "ab") as log:
            p = subprocess.Popen(
                [AGENT, "--room-dir", self.room_dir, "--run-dir",
                 self.run_dir, "--ready-fd", str(w), "--bin-dir", BIN_DIR,
                 *self.args], pass_fds=(w,), env=self.env, stderr=log)
        os.close(w)
        self.procs.append(p)
        with os.fdopen(r, "rb") as f:
            line = f.readline()
        assert line == b"ready\n", self.log_text()
        self.proc = p
        return p

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def connect(self, user="alice", **kw):
        c = Client(self.sock, user=user, **kw)
        self.clients.append(c)
        return c

    def kill9(self):
        self.proc.kill()
        self.proc.wait(10)

    def db(self):
        return sqlite3.connect(os.path.join(self.room_dir, "room.db"))

    @contextlib.contextmanager
    def on_atrium_fs(self, opts=None):
        """The workspace as a real atrium-fs mount (with -o opts, e.g. a
        quota), for the block's length; the agent is stopped before it is
        unmounted."""
        db = os.path.join(self.room_dir, "workspace.db")
        subprocess.run([FS, "mkfs", db], check=True, capture_output=True,
                       timeout=30)
        # control_uid: the agent asks for snapshots as the room's uid.
        opts = ",".join(o for o in (opts, "control_uid=%d" % SANDBOX_UID)
                        if o)
        subprocess.run([FS, "mount", "-o", opts, db,
                        self.workspace], check=True,
                       capture_output=True, timeout=30)
        try:
            os.chmod(self.workspace, 0o777)
            yield
        finally:
            self.cleanup()
            self.procs, self.clients = [], []
            subprocess.run(["umount", "-l", self.workspace],
                           capture_output=True)

    def cleanup(self):
        for c in self.clients:
            c.close()
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        # A sanitizer build (ATRIUM_BUILD=build/asan) reports here.
        if os.path.exists(self.log):
            assert "Sanitizer" not in self.log_text(), self.log_text()


def wait_until(pred, what, timeout=15):
    """pred()'s first true value, looked for every 50 ms; AssertionError
    naming what was awaited after timeout seconds."""
    end = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError("%s: not within %s s" % (what, timeout))
        time.sleep(0.05)


def pgrep(pattern):
    """The pids whose command line holds pattern."""
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True,
                         text=True).stdout
    return [int(p) for p in out.split()]


def fs_pid(room):
    """The pid of the atrium-fs serving the room's workspace (mounted by
    room.on_atrium_fs())."""
    db = os.path.join(room.room_dir, "workspace.db")
    out = subprocess.run(["pgrep", "-f", "atrium-fs mount (-o [^ ]+ )?%s " %
                          re.escape(db)],
                         capture_output=True, text=True).stdout.split()
    assert len(out) == 1, out
    return int(out[0])


def stopped(pid):
    """Whether each thread of pid is stopped (by SIGSTOP)."""
    states = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        except FileNotFoundError:
            pass                # a thread that has just ended
    return bool(states) and all(st == "T" for st in states)


def stop_process(pid, timeout=10):
    """SIGSTOP pid, and return once each of its threads has stopped: from
    then on it answers nothing until SIGCONT."""
    os.kill(pid, signal.SIGSTOP)
    end = time.monotonic() + timeout
    while not stopped(pid):
        if time.monotonic() > end:
            raise AssertionError("process %d not stopped within %ss"
                                 % (pid, timeout))
        time.sleep(0.01)


@pytest.fixture
def room():
    base = tempfile.mkdtemp(prefix="atrium-agent-")
    r = Room(base)
    try:
        yield r
    finally:
        r.cleanup()
        shutil.rmtree(base, ignore_errors=True)


def fast(*extra):
    """Flags that keep retries and timeouts short."""
    return ["--retry-base-ms", "50", "--max-retries", "3",
            "--approval-timeout", "2", *extra]


def tool_results_in(body):
    """Tool results the model was sent, in either wire format."""
    out = []
    for m in body.get("messages", []):
        if m.get("role") == "tool":
            out.append(m.get("content"))
        elif isinstance(m.get("content"), list):
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    c = b.get("content")
                    out.append(c if isinstance(c, str) else json.dumps(c))
    return out


# --- turns ---------------------------------------------------------------------

def test_prompt_streams_deltas_then_message(room, model):
    room.start("--model-url", model.url, *fast())
    c = room.connect()
    c.send({"type": "prompt", "text": "hello agent"})
    evs = [e for e in c.collect("turn_end") if e["type"] != "presence"]
    types = [e["type"] for e in evs]
    # The question is shown to the room as its asker's, then the turn.
    assert types[0] == "prompt" and evs[0]["user"] == "alice"
    assert evs[0]["text"] == "hello agent"
    assert types[1] == "turn_start" and evs[1]["user"] == "alice"
    assert "agent_delta" in types
    msg = [e for e in evs if e["type"] == "message"][0]
    assert msg["user"] == "agent"
    assert msg["text"] == "".join(e["text"] for e in evs
                                  if e["type"] == "agent_delta")
    assert "hello agent" in msg["text"]
    assert evs[-1]["stop_reason"] == "end_turn"
    assert evs[-1]["usage"]["output_tokens"] > 0
    # The prompt reached the model with its text unchanged, on its own line.
    body = model.requests[0]["body"]
    assert body["messages"][-1]["content"][-1]["text"] == "alice:\nhello agent"
    assert ROOM in body["system"] and "/workspace" in body["system"]
    assert body["tools"][0]["name"] == "bash"


@pytest.mark.parametrize("variant", ["anthropic", "openai", "ollama",
                                     "workers"])
def test_tool_call_runs_in_workspace(room, variant):
    srv = ModelServer(variant=None if variant in ("anthropic", "openai")
                      else variant).start()
    try:
        provider = "anthropic" if variant == "anthropic" else "openai"
        url = srv.url if provider == "anthropic" else srv.openai_url
        room.start("--provider", provider, "--model-url", url,
                   "--model", "test-model", "--approval", "allow_all",
                   *fast())
        c = room.connect()
        c.send({"type": "chat", "text": "@agent please\nrun: echo hi > f.txt"})
        evs = c.collect("turn_end", timeout=20)
        call = [e for e in evs if e["type"] == "tool_call"][0]
        assert call["name"] == "bash"
        assert call["input"] == {"command": "echo hi > f.txt"}
        res = [e for e in evs if e["type"] == "tool_result"][0]
        assert res["status"] == "ok" and res["id"] == call["id"]
        assert evs[-1]["stop_reason"] == "end_turn"
        with open(os.path.join(room.workspace, "f.txt")) as f:
            assert f.read() == "hi\n"
        # The next request carried the tool result.
        assert len(srv.requests) == 2
        assert tool_results_in(srv.requests[1]["body"]) == [""]
        final = [e for e in evs if e["type"] == "message" and
                 e["user"] == "agent"][-1]
        assert final["text"].startswith("Command output:")
    finally:
        srv.stop()


def test_bash_output_and_exit_status_reach_model(room, model):
    room.start("--model-url", model.url, "--approval", "allow_all",
               *fast())
    c = room.connect()
    c.send({"type": "prompt", "text": "run: echo out; echo err >&2; exit 3"})
    evs = c.collect("turn_end")
    res = [e for e in evs if e["type"] == "tool_result"][0]
    assert res["status"] == "error"
    assert "out\n" in res["output"] and "err\n" in res["output"]
    assert res["output"].endswith("exit status 3")
    outs = [e for e in evs if e["type"] == "tool_output"]
    assert {e["stream"] for e in outs} == {"stdout", "stderr"}
    sent = tool_results_in(model.requests[1]["body"])[0]
    assert sent.endswith("exit status 3")


def test_retry_on_429_with_retry_after(room, model):
    model.script(Fault(429, retry_after="1"))
    room.start("--model-url", model.url, *fast())
    c = room.connect()
    c.send({"type": "prompt", "text": "hi"})
    t0 = time.monotonic()
    notice = c.wait("notice")
    assert "429" in notice["text"] and "retrying in 1 s" in notice["text"]
    assert "attempt 2 of 3" in notice["text"]
    assert "rate limit" in notice["text"]
    msg = c.wait("message", user="agent")
    assert msg["text"] == "echo: alice:\nhi"
    assert time.monotonic() - t0 >= 0.9   # retry-after was honoured
    assert len(model.requests) == 2
    assert c.wait("turn_end")["stop_reason"] == "end_turn"


def test_retry_after_cut_stream_and_overload(room, model):
    model.script(Cut(Reply(text="partial answer"), after_events=2),
                 StreamError(Reply(text="x"), after_events=1), Reply("ok"))
    room.start("--model-url", model.url, *fast("--max-retries", "4"))
    c = room.connect()
    c.send({"type": "prompt", "text": "hi"})
    evs = c.collect("turn_end")
    notices = [e["text"] for e in evs if e["type"] == "notice"]
    assert len(notices) == 2, notices
    assert "overloaded" in notices[1].lower()
    assert [e for e in evs if e["type"] == "message"][-1]["text"] == "ok"
    assert len(model.requests) == 3


def test_401_ends_turn_with_error_and_keeps_history(room):
    srv = ModelServer(api_key="right-key").start()
    try:
        keyfile = os.path.join(room.base, "key")
        with open(keyfile, "w") as f:
            f.write("wrong-key\n")
        room.start("--model-url", srv.url, "--api-key-file", keyfile,
                   *fast())
        c = room.connect()
        c.send({"type": "chat", "text": "a line to keep"})
        c.send({"type": "prompt", "text": "are you there?"})
        evs = c.collect("turn_end")
        err = [e for e in evs if e["type"] == "error"][0]
        assert "invalid x-api-key" in err["message"]
        assert "API key" in err["message"] and "401" in err["message"]
        assert evs[-1]["stop_reason"] == "error"
        assert len(srv.requests) == 1          # 401 is not retried
        assert srv.requests[0]["headers"]["x-api-key"] == "wrong-key"
        # Nothing lost: the chat replays and the prompt stays in the
        # transcript.
        d = room.connect("bob", history=50)
        replay = d.collect("turn_end")
        assert any(e["type"] == "message" and e["text"] == "a line to keep"
                   and e["replay"] for e in replay)
        rows = room.db().execute("SELECT role, json FROM transcript").fetchall()
        assert rows and rows[0][0] == "user"
        assert "are you there?" in rows[0][1]
        # The key never reached room.db.
        with open(os.path.join(room.room_dir, "room.db"), "rb") as f:
            assert b"wrong-key" not in f.read()
    finally:
        srv.stop()


def test_model_server_down_names_url(room):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    url = "http://127.0.0.1:%d" % port
    room.start("--model-url", url, *fast("--max-retries", "2"))
    c = room.connect()
    c.send({"type": "prompt", "text": "hi"})
    evs = c.collect("turn_end")
    assert any(e["type"] == "notice" and "retrying" in e["text"]
               for e in evs)
    err = [e for e in evs if e["type"] == "error"][0]
    assert url in err["message"] and "running" in err["message"]
    assert evs[-1]["stop_reason"] == "error"


def test_hung_model_is_detected(room, model):
    model.script(Hang())
    room.start("--model-url", model.url, "--model-idle-timeout", "1",
               *fast())
    c = room.connect()
    c.send({"type": "prompt", "text": "hi"})
    notice = c.wait("notice", timeout=10)
    assert "retrying" in notice["text"]
    assert c.wait("message", user="agent")["text"] == "echo: alice:\nhi"


def test_no_model_configured_explains_setup(room):
    room.start()           # the provider's public URL and no key
    c = room.connect()
    c.send({"type": "prompt", "text": "hi"})
    evs = c.collect("turn_end")
    msg = [e for e in evs if e["type"] == "message"][0]
    assert msg["user"] == "agent"
    assert "ANTHROPIC_API_KEY" in msg["text"]
    assert "--model-url http://127.0.0.1:11434/v1" in msg["text"]
    assert evs[-1]["stop_reason"] == "end_turn"


def test_deny_all_does_not_run(room, model):
    room.start("--model-url", model.url, "--approval", "deny_all", *fast())
    c = room.connect()
    c.send({"type": "prompt", "text": "run: touch nope.txt"})
    evs = c.collect("turn_end")
    res = [e for e in evs if e["type"] == "tool_result"][0]
    assert res["status"] == "denied"
    assert not os.path.exists(os.path.join(room.workspace, "nope.txt"))
    assert "denied" in tool_results_in(model.requests[1]["body"])[0]


def test_ask_is_the_default_and_a_member_answers(room, model):
    room.start("--model-url", model.url, *fast())
    c = room.connect()
    assert c.welcome["approval"] == "ask"
    bob = room.connect("bob")
    c.send({"type": "prompt", "text": "run: touch asked.txt"})
    req = bob.wait("approval_request")
    assert req["tool"] == "bash" and req["input"]["command"] == "touch asked.txt"
    assert not os.path.exists(os.path.join(room.workspace, "asked.txt"))
    bob.send({"type": "approve", "id": req["id"], "approve": True})
    assert c.wait("tool_result")["status"] == "ok"
    assert os.path.exists(os.path.join(room.workspace, "asked.txt"))
    c.wait("turn_end")


def test_ask_with_no_one_connected_is_denied_at_once(room, model):
    room.start("--model-url", model.url, *fast("--approval-timeout", "60"))
    model.script(Reply("Running it.", tool_calls=[
        ToolCall("bash", {"command": "touch alone.txt"})], delay=0.3),
        Reply("I could not run it."))
    c = room.connect()
    c.send({"type": "prompt", "text": "go"})
    start = c.wait("turn_start")
    c.close()
    t0 = time.monotonic()
    while len(model.requests) < 2 and time.monotonic() - t0 < 15:
        time.sleep(0.05)
    # Denied long before the 60 s an unanswered request would wait.
    assert len(model.requests) == 2 and time.monotonic() - t0 < 15
    d = room.connect("alice", since=start["seq"])
    res = d.wait("tool_result")
    assert res["status"] == "denied"
    assert "no one who could approve" in res["output"]
    assert "no one who could approve" in tool_results_in(
        model.requests[1]["body"])[0]
    assert not os.path.exists(os.path.join(room.workspace, "alone.txt"))


def test_ask_is_denied_when_everyone_who_could_answer_leaves(room, model):
    room.start("--model-url", model.url, *fast("--approval-timeout", "60"))
    c = room.connect()
    c.send({"type": "prompt", "text": "run: touch left.txt"})
    req = c.wait("approval_request")
    c.close()
    t0 = time.monotonic()
    while len(model.requests) < 2 and time.monotonic() - t0 < 15:
        time.sleep(0.05)
    assert len(model.requests) == 2     # long before the 60 s
    d = room.connect("alice", since=req["seq"])
    res = d.wait("tool_result")
    assert res["status"] == "denied" and "left the room" in res["output"]
    assert not os.path.exists(os.path.join(room.workspace, "left.txt"))


def test_first_write_of_a_turn_is_its_undo_point(room, model):
    with open(os.path.join(room.workspace, "seen.txt"), "w") as f:
        f.write("seen\n")
    room.start("--model-url", model.url, "--approval", "allow_all", *fast())
    model.script(Reply("Working.", tool_calls=[
        ToolCall("read", {"path": "seen.txt"}),
        ToolCall("write", {"path": "u.txt", "content": "u\n"}),
        ToolCall("bash", {"command": "echo more >> u.txt"})]),
        Reply("Done."))
    c = room.connect()
    c.send({"type": "prompt", "text": "go"})
    start = c.wait("turn_start")
    c.wait("turn_end")
    rows = room.db().execute(
        "SELECT turn, idx, tool, snapshot FROM turn_undo").fetchall()
    assert rows == [(start["turn"], 1, "write", None)]


def test_ask_approve_and_timeout(room, model):
    room.start("--model-url", model.url, "--approval", "ask", *fast())
    c = room.connect()
    bob = room.connect("bob")
    c.send({"type": "prompt", "text": "run: touch yes.txt"})
    req = bob.wait("approval_request")
    assert req["tool"] == "bash" and req["input"]["command"] == "touch yes.txt"
    assert req["seconds"] == 2
    bob.send({"type": "approve", "id": req["id"], "approve": True})
    res = c.wait("tool_result")
    assert res["status"] == "ok"
    assert os.path.exists(os.path.join(room.workspace, "yes.txt"))
    c.wait("turn_end")
    # No answer within --approval-timeout is a denial.
    c.send({"type": "prompt", "text": "run: touch late.txt"})
    first = c.wait("approval_request")
    # Someone who joins while it waits is asked too.
    carol = room.connect("carol")
    again = carol.wait("approval_request")
    assert again["id"] == first["id"] and again["seconds"] <= 2
    res = c.wait("tool_result", timeout=10)
    assert res["status"] == "denied"
    assert not os.path.exists(os.path.join(room.workspace, "late.txt"))


def test_allow_list_config_event(room, model):
    room.start("--model-url", model.url, *fast())
    c = room.connect()
    c.send({"type": "config", "approval": "allow_list",
            "allow_list": ["echo"]})
    cfg = c.wait("config")
    assert cfg["approval"] == "allow_list" and cfg["user"] == "alice"
    c.send({"type": "prompt", "text": "run: echo ok; touch x"})
    assert c.wait("tool_result")["status"] == "denied"
    c.send({"type": "prompt", "text": "run: echo fine"})
    assert c.wait("tool_result")["status"] == "ok"
    c.send({"type": "config", "approval": "sometimes"})
    assert "unknown approval policy" in c.wait("error")["message"]
    # The room's setting outlives the process.
    room.proc.terminate()
    room.proc.wait(10)
    room.start()
    assert room.connect("bob").welcome["approval"] == "allow_list"


def test_queued_prompt_gets_notice(room, model):
    model.script(Reply("slow", delay=0.3), Reply("second"))
    room.start("--model-url", model.url, *fast())
    c = room.connect()
    c.send({"type": "prompt", "text": "one"})
    c.send({"type": "prompt", "text": "two"})
    assert "queued" in c.wait("notice")["text"]
    c.wait("turn_end")
    assert c.wait("turn_end")["stop_reason"] == "end_turn"
    assert len(model.requests) == 2


def test_stop_during_command_kills_it(room, model):
    room.start("--model-url", model.url, "--approval", "allow_all",
               *fast())
    c = room.connect()
    c.send({"type": "prompt",
            "text": "run: echo started; sleep 30; echo done > after.txt"})
    c.wait("tool_output")
    c.send({"type": "stop"})
    res = c.wait("tool_result")
    assert res["status"] == "stopped"
    end = c.wait("turn_end")
    assert end["stop_reason"] == "stopped"
    # Killed, not waited for: once it is gone, it has not written
    # after.txt, as it would have had it run to its end.
    wait_until(lambda: not pgrep("sleep 30; echo done"),
               "the stopped command to be gone")
    assert not os.path.exists(os.path.join(room.workspace, "after.txt"))
    # The transcript stayed valid: the next turn works.
    c.send({"type": "prompt", "text": "again"})
    assert c.wait("turn_end")["stop_reason"] == "end_turn"
    last = model.requests[-1]["body"]["messages"]
    assert any("stopped" in r for r in tool_results_in({"messages": last}))


# --- crash and resume ------------------------------------------------------------

def test_history_and_transcript_survive_kill9(room, model):
    room.start("--model-url", model.url, *fast())
    c = room.connect()
    c.send({"type": "chat", "text": "remember this"})
    c.send({"type": "prompt", "text": "first question"})
    c.wait("turn_end")
    room.kill9()
    room.start()
    d = room.connect("bob", history=100)
    replay = d.collect("turn_end")
    texts = [e.get("text") for e in replay if e["type"] == "message"]
    assert "remember this" in texts
    assert "echo: alice:\nfirst question" in texts
    assert all(e.get("replay") for e in replay)
    seqs = [e["seq"] for e in replay]
    assert seqs == sorted(seqs)
    assert d.welcome["seq"] >= seqs[-1]
    d.send({"type": "prompt", "text": "second"})
    d.wait("turn_end")
    msgs = model.requests[-1]["body"]["messages"]
    assert "first question" in json.dumps(msgs[0])
    assert len(msgs) == 3


def test_kill9_during_tool_resumes_as_interrupted(room, model):
    room.start("--model-url", model.url, "--approval", "allow_all",
               *fast())
    c = room.connect()
    c.send({"type": "prompt", "text": "run: echo x >> log; sleep 30"})
    call = c.wait("tool_call")
    log = os.path.join(room.workspace, "log")
    end = time.monotonic() + 10
    while not os.path.exists(log) and time.monotonic() < end:
        time.sleep(0.05)
    room.kill9()
    room.start()
    d = room.connect("alice", since=call["seq"])
    res = d.wait("tool_result", timeout=20)
    assert res["status"] == "interrupted" and res["id"] == call["id"]
    end_ev = d.wait("turn_end", timeout=20)
    assert end_ev["stop_reason"] == "end_turn"
    with open(log) as f:
        assert f.read() == "x\n"          # ran exactly once
    sent = tool_results_in(model.requests[-1]["body"])
    assert "interrupted" in sent[-1]


def test_sigterm_and_idle_exit(room, model):
    room.start("--model-url", model.url, "--idle-timeout", "1")
    assert room.proc.wait(10) == 0
    assert not os.path.exists(room.sock)


# --- people's commands -------------------------------------------------------------

def test_exec_captured(room, model):
    room.start("--model-url", model.url)
    c = room.connect("carol", kind="exec")
    c.send({"type": "exec", "id": "e1",
            "command": "echo out; cat; echo err >&2; exit 3",
            "stdin": "from stdin\n"})
    r = c.wait("exec_result", id="e1")
    assert r["exitCode"] == 3
    assert r["stdout"] == "out\nfrom stdin\n" and r["stderr"] == "err\n"
    c.send({"type": "exec", "id": "e2", "command": "no-such-command-x"})
    r = c.wait("exec_result", id="e2")
    assert r["exitCode"] == 127 and "not found" in r["stderr"]
    c.send({"type": "exec", "id": "e3", "argv": ["pwd"], "cwd": "sub"})
    os.mkdir(os.path.join(room.workspace, "sub"))
    r = c.wait("exec_result", id="e3")
    assert r["stdout"] == "/workspace/sub\n"
    audit = room.db().execute("SELECT user, command, exit_code FROM audit "
                              "ORDER BY id").fetchall()
    assert audit[0] == ("carol", "echo out; cat; echo err >&2; exit 3", 3)
    assert audit[1][2] == 127


def test_exec_with_fds_and_signal(room, model):
    room.start("--model-url", model.url)
    c = room.connect("carol", kind="exec")
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    c.send({"type": "exec", "id": "f1", "command": "tr a-z A-Z; echo e >&2",
            "fds": 3}, fds=[in_r, out_w, err_w])
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    os.write(in_w, b"hello\n")
    os.close(in_w)
    r = c.wait("exec_result", id="f1")
    assert r["exitCode"] == 0 and "stdout" not in r
    assert os.read(out_r, 100) == b"HELLO\n"
    assert os.read(err_r, 100) == b"e\n"
    for fd in (out_r, err_r):
        os.close(fd)
    # A signal goes to a command that runs: the test sends it once the
    # command said so on its stdout.
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    c.send({"type": "exec", "id": "s1", "fds": 3,
            "command": "echo running; exec sleep 30"},
           fds=[in_r, out_w, out_w])
    for fd in (in_r, out_w):
        os.close(fd)
    ready, _, _ = select.select([out_r], [], [], 30)
    assert ready and os.read(out_r, 100) == b"running\n"
    c.send({"type": "signal", "id": "s1", "signal": "INT"})
    r = c.wait("exec_result", id="s1", timeout=10)
    assert r["signal"] == "INT" and r["exitCode"] == 130
    for fd in (in_w, out_r):
        os.close(fd)


def test_shared_exec_broadcasts(room, model):
    room.start("--model-url", model.url)
    a = room.connect("alice")
    b = room.connect("bob")
    a.send({"type": "exec", "id": "x1", "command": "echo shared", "share": True})
    start = b.wait("exec_start")
    assert start["user"] == "alice" and start["command"] == "echo shared"
    assert b.wait("exec_output")["text"] == "shared\n"
    r = b.wait("exec_result", id="x1")
    assert r["exitCode"] == 0 and r["stdout"] == "shared\n"


def test_exec_killed_when_its_connection_closes(room, model):
    room.start("--model-url", model.url)
    c = room.connect("carol", kind="exec")
    c.send({"type": "exec", "id": "k1", "command": "sleep 31"})
    wait_until(lambda: pgrep("sleep 31"), "the command to run")
    c.close()
    room.clients.remove(c)
    wait_until(lambda: not pgrep("sleep 31"),
               "the command to end with its connection")


# --- the protocol -------------------------------------------------------------------

def test_bad_lines_and_limits(room, model):
    room.start("--model-url", model.url)
    c = room.connect()
    other = room.connect("bob")
    c.sock.sendall(b"not json\n")
    assert "JSON" in c.wait("error")["message"]
    c.send({"type": "chat", "text": "x" * (64 * 1024 + 1)})
    assert "65536" in c.wait("error")["message"]
    c.send({"type": "frobnicate"})
    assert "unknown" in c.wait("error")["message"]
    c.send({"type": "chat", "text": "still here"})
    assert other.wait("message")["text"] == "still here"
    assert not [e for e in other.events if e["type"] == "error"]
    c.send({"type": "who"})
    assert sorted(c.wait("presence")["users"]) == ["alice", "bob"]
    other.close()
    room.clients.remove(other)
    assert c.wait("presence", left="bob")["users"] == ["alice"]


def test_chat_text_is_stored_clean(room, model):
    """Controls and invalid UTF-8 in a chat line never reach the members or
    the history: the agent cleans whatever a connection sends."""
    room.start("--model-url", model.url)
    c = room.connect()
    other = room.connect("bob")
    c.sock.sendall(b'{"type":"chat","text":"a\\u001b[2J\xc2\x9b\\u0085'
                   b'\\u0007b\xff\x9bc\\r\\nd\\te \xc3\xa9"}\n')
    want = "a[2Jb\ufffd\ufffdc\nd\te \u00e9"
    assert other.wait("message")["text"] == want
    c.send({"type": "chat", "text": "\u001b\u009b\u0000"})
    assert "non-empty" in c.wait("error")["message"]
    c.send({"type": "history", "since": 0})
    msgs = [e for e in c.collect("message", text=want) if e["type"] == "message"]
    assert [m["text"] for m in msgs] == [want]


# --- on the real workspace filesystem ---------------------------------------------

@pytest.mark.skipif(not os.path.exists(FS) or not os.path.exists("/dev/fuse"),
                    reason="needs atrium-fs and /dev/fuse")
def test_tool_runs_on_atrium_fs_mount(room, model):
    with room.on_atrium_fs():
        room.start("--model-url", model.url, "--approval", "allow_all",
               *fast())
        c = room.connect()
        c.send({"type": "prompt", "text": "run: echo hi > f.txt && cat f.txt"})
        res = c.wait("tool_result", timeout=20)
        assert res["status"] == "ok" and res["output"] == "hi\n"
        c.wait("turn_end")
        with open(os.path.join(room.workspace, "f.txt")) as f:
            assert f.read() == "hi\n"
