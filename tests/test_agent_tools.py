"""atrium-agent's file tools (read, write, edit, ls, grep) driven through a
scripted model server: each test scripts the model's tool calls and checks
what the model was told and what the workspace holds afterwards.

Run as root: /usr/bin/python3 -m pytest -q tests/test_agent_tools.py
The binaries are $ATRIUM_BUILD/atrium-agent and atrium-sandbox-init
(ATRIUM_BUILD defaults to build).
"""
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_server import Reply, ToolCall  # noqa: E402
from test_agent import (FS, fast, fs_pid,  # noqa: E402,F401
                        pytestmark, room, stop_process, stopped,
                        tool_results_in)

SANDBOX_UID = 64222


def run_calls(room, model, calls, *args, prompt="go"):
    """Start the agent (once), have the model make calls in one answer,
    and return (tool_result events, texts the model got back)."""
    model.script(Reply("Working.", tool_calls=calls), Reply("Done."))
    if not getattr(room, "proc", None) or room.proc.poll() is not None:
        room.start("--model-url", model.url, *fast(*args))
    c = room.connect()
    before = len(model.requests)
    c.send({"type": "prompt", "text": prompt})
    evs = c.collect("turn_end", timeout=20)
    results = [e for e in evs if e["type"] == "tool_result"]
    assert len(results) == len(calls), evs
    assert evs[-1]["stop_reason"] == "end_turn", evs[-1]
    # The transcript carries earlier turns too: this answer's come last.
    sent = tool_results_in(model.requests[before + 1]["body"])[-len(calls):]
    assert len(sent) == len(calls)
    c.close()
    room.clients.remove(c)
    return results, sent


def ws(room, *parts):
    return os.path.join(room.workspace, *parts)


def test_write_then_read_back(room, model):
    res, sent = run_calls(room, model, [
        ToolCall("write", {"path": "src/deep/a.txt",
                           "content": "one\ntwo\nthree\n"}),
        ToolCall("read", {"path": "/workspace/src/deep/a.txt"}),
        ToolCall("read", {"path": "src/deep/a.txt", "offset": 2,
                          "limit": 1}),
    ], "--approval", "allow_all")
    assert [r["status"] for r in res] == ["ok", "ok", "ok"]
    assert sent[0] == "wrote 14 bytes to src/deep/a.txt (new file)"
    assert sent[1] == "     1\tone\n     2\ttwo\n     3\tthree\n"
    assert sent[2].startswith("     2\ttwo\n")
    assert "read on with offset=3" in sent[2]
    with open(ws(room, "src", "deep", "a.txt")) as f:
        assert f.read() == "one\ntwo\nthree\n"
    # Owned by the sandbox uid, parents included, as if a command made them.
    for p in (ws(room, "src"), ws(room, "src", "deep"),
              ws(room, "src", "deep", "a.txt")):
        st = os.stat(p)
        assert (st.st_uid, st.st_gid) == (SANDBOX_UID, SANDBOX_UID), p
    # No temporary file is left beside it.
    assert os.listdir(ws(room, "src", "deep")) == ["a.txt"]
    # Replacing keeps it whole and says so.
    res, sent = run_calls(room, model, [
        ToolCall("write", {"path": "src/deep/a.txt", "content": "new"})])
    assert sent[0] == "wrote 3 bytes to src/deep/a.txt (replaced the old " \
        "content)"
    with open(ws(room, "src", "deep", "a.txt")) as f:
        assert f.read() == "new"


def test_journal_and_audit_rows(room, model):
    run_calls(room, model, [
        ToolCall("write", {"path": "j.txt", "content": "x"}),
        ToolCall("read", {"path": "j.txt"})], "--approval", "allow_all")
    db = room.db()
    rows = db.execute("SELECT name, state, status FROM tool_journal "
                      "ORDER BY id").fetchall()
    assert rows == [("write", "ended", "ok"), ("read", "ended", "ok")]
    audit = db.execute("SELECT user, kind, command, exit_code FROM audit "
                       "ORDER BY id").fetchall()
    assert audit == [("agent", "tool", "write j.txt", 0),
                     ("agent", "tool", "read j.txt", 0)]


def test_read_caps_binary_and_errors(room, model):
    with open(ws(room, "big.txt"), "w") as f:
        f.write("".join("line %d\n" % i for i in range(1, 3001)))
    with open(ws(room, "bin.dat"), "wb") as f:
        f.write(b"\x7fELF\x00\x01\x02")
    open(ws(room, "empty"), "w").close()
    os.mkdir(ws(room, "dir"))
    res, sent = run_calls(room, model, [
        ToolCall("read", {"path": "big.txt"}),
        ToolCall("read", {"path": "bin.dat"}),
        ToolCall("read", {"path": "empty"}),
        ToolCall("read", {"path": "dir"}),
        ToolCall("read", {"path": "nothere.txt"}),
        ToolCall("read", {"path": "big.txt", "offset": 5000}),
    ], "--approval", "allow_all")
    lines = sent[0].split("\n")
    assert lines[0] == "     1\tline 1" and lines[1999] == "  2000\tline 2000"
    assert "read on with offset=2001" in sent[0] and "line 2001" not in sent[0]
    assert res[1]["status"] == "ok" and "binary" in sent[1]
    assert sent[2] == "(empty is empty)"
    assert res[3]["status"] == "error" and "is a directory" in sent[3]
    assert res[4]["status"] == "error" and "does not exist" in sent[4]
    assert res[5]["status"] == "error" and "past the end" in sent[5]


def test_read_of_several_chunks_ends_with_the_last_line(room, model):
    """A file of three 64 KiB reads' worth, its last line without a newline:
    every line comes back once, the last one whole, with no note that more
    follow (the read ends where the file does, without a read past it);
    grep, which ends its reads the same way, finds that last line and the
    one before it once each."""
    text = "".join("%05d %s\n" % (i, "x" * 63) for i in range(1, 1900))
    text += "01900 the end"
    with open(ws(room, "long.txt"), "w") as f:
        f.write(text)
    res, sent = run_calls(room, model, [
        ToolCall("read", {"path": "long.txt"}),
        ToolCall("grep", {"pattern": "^0189[0-9]|the end$",
                          "path": "long.txt"})], "--approval", "allow_all")
    assert [r["status"] for r in res] == ["ok", "ok"], sent
    assert sent[1].splitlines() == [
        "long.txt:%d: %05d %s" % (i, i, "x" * 63) for i in range(1890, 1900)
    ] + ["long.txt:1900: 01900 the end"], sent[1]
    lines = sent[0].splitlines()
    assert len(lines) == 1900, lines[-3:]
    assert lines[0] == "     1\t00001 " + "x" * 63
    assert lines[1898] == "  1899\t01899 " + "x" * 63
    assert lines[1899] == "  1900\t01900 the end"
    assert "more follow" not in sent[0]


def test_edit_unique_missing_ambiguous(room, model):
    with open(ws(room, "e.py"), "w") as f:
        f.write("a = 1\nb = 2\nb = 2\n")
    os.chmod(ws(room, "e.py"), 0o755)
    os.chown(ws(room, "e.py"), SANDBOX_UID, SANDBOX_UID)
    res, sent = run_calls(room, model, [
        ToolCall("edit", {"path": "e.py", "old_string": "a = 1",
                          "new_string": "a = 10"}),
        ToolCall("edit", {"path": "e.py", "old_string": "zzz",
                          "new_string": "y"}),
        ToolCall("edit", {"path": "e.py", "old_string": "b = 2",
                          "new_string": "b = 3"}),
        ToolCall("edit", {"path": "e.py", "old_string": "b = 2",
                          "new_string": "b = 3", "replace_all": True}),
    ], "--approval", "allow_all")
    assert [r["status"] for r in res] == ["ok", "error", "error", "ok"]
    assert "replaced 1 occurrence" in sent[0]
    assert "not found" in sent[1]
    assert "occurs 2 times" in sent[2] and "replace_all" in sent[2]
    assert "replaced 2 occurrences" in sent[3]
    with open(ws(room, "e.py")) as f:
        assert f.read() == "a = 10\nb = 3\nb = 3\n"
    assert os.stat(ws(room, "e.py")).st_mode & 0o777 == 0o755


def test_ls_and_glob(room, model):
    for p in ("src/main.c", "src/util/x.c", "src/util/x.h", "README",
              ".git/objects/y.c"):
        os.makedirs(os.path.dirname(ws(room, p)) or room.workspace,
                    exist_ok=True)
        open(ws(room, p), "w").close()
    res, sent = run_calls(room, model, [
        ToolCall("ls", {}),
        ToolCall("ls", {"path": "src", "pattern": "**/*.c"}),
        ToolCall("ls", {"pattern": "*.h"}),
        ToolCall("ls", {"path": "src", "pattern": "util/*"}),
        ToolCall("ls", {"pattern": "*.rs"}),
    ], "--approval", "allow_all")
    assert sent[0].split("\n") == [".git/", "README", "src/"]
    assert sent[1].split("\n") == ["src/main.c", "src/util/x.c"]
    assert sent[2] == "src/util/x.h"
    assert sent[3].split("\n") == ["src/util/x.c", "src/util/x.h"]
    assert "no entries" in sent[4]


def test_ls_visit_limit_note(room, model):
    os.mkdir(ws(room, "many"))
    for i in range(10050):
        open(ws(room, "many", "f%05d" % i), "w").close()
    res, sent = run_calls(room, model, [
        ToolCall("ls", {"pattern": "**/f0000*"})], "--approval", "allow_all")
    assert "stopped after visiting 10000 entries" in sent[0]


def test_grep(room, model):
    os.makedirs(ws(room, "src"))
    with open(ws(room, "src", "a.c"), "w") as f:
        f.write("int main(void)\n{\n\treturn 42;\n}\n")
    with open(ws(room, "src", "b.h"), "w") as f:
        f.write("#define RETURN 1\n")
    with open(ws(room, "blob"), "wb") as f:
        f.write(b"return\x00\x00")
    res, sent = run_calls(room, model, [
        ToolCall("grep", {"pattern": "return [0-9]+"}),
        ToolCall("grep", {"pattern": "return", "ignore_case": True,
                          "glob": "*.h"}),
        ToolCall("grep", {"pattern": "^int", "path": "src/a.c"}),
        ToolCall("grep", {"pattern": "nomatch"}),
        ToolCall("grep", {"pattern": "(unclosed"}),
    ], "--approval", "allow_all")
    assert sent[0].startswith("src/a.c:3: \treturn 42;")
    assert "binary file" in sent[0]
    assert sent[1] == "src/b.h:1: #define RETURN 1"
    assert sent[2] == "src/a.c:1: int main(void)"
    assert sent[3].startswith("no matches")
    assert res[4]["status"] == "error" and "bad pattern" in sent[4]


def test_escapes_are_refused(room, model):
    outside = tempfile.mkdtemp(prefix="atrium-outside-")
    try:
        with open(os.path.join(outside, "secret"), "w") as f:
            f.write("top secret\n")
        os.chmod(outside, 0o777)
        os.symlink(outside, ws(room, "out"))
        os.symlink(os.path.join(outside, "secret"), ws(room, "s"))
        os.mkdir(ws(room, "sub"))
        res, sent = run_calls(room, model, [
            ToolCall("read", {"path": "../run.txt"}),
            ToolCall("read", {"path": "sub/../../x"}),
            ToolCall("read", {"path": "/etc/passwd"}),
            ToolCall("read", {"path": "out/secret"}),
            ToolCall("read", {"path": "s"}),
            ToolCall("write", {"path": "out/new.txt", "content": "x"}),
            ToolCall("write", {"path": "/tmp/new.txt", "content": "x"}),
            ToolCall("ls", {"path": "out"}),
            ToolCall("grep", {"pattern": "secret", "path": "out"}),
            ToolCall("edit", {"path": "s", "old_string": "top",
                              "new_string": "no"}),
        ], "--approval", "allow_all")
        for r, text in zip(res, sent):
            assert r["status"] == "error", (r, text)
            assert "path escapes the workspace" in text or \
                "symbolic link" in text, text
            assert "top secret" not in text
        assert sorted(os.listdir(outside)) == ["secret"]
        with open(os.path.join(outside, "secret")) as f:
            assert f.read() == "top secret\n"
        assert not os.path.exists("/tmp/new.txt")
        assert os.path.islink(ws(room, "s"))
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def test_sandbox_uid_rights(room, model):
    with open(ws(room, "root-only"), "w") as f:
        f.write("root's\n")
    os.chmod(ws(room, "root-only"), 0o600)
    with open(ws(room, "ro.txt"), "w") as f:
        f.write("keep\n")
    os.chmod(ws(room, "ro.txt"), 0o644)
    os.mkdir(ws(room, "locked"), 0o700)
    res, sent = run_calls(room, model, [
        ToolCall("read", {"path": "root-only"}),
        ToolCall("write", {"path": "ro.txt", "content": "changed"}),
        ToolCall("edit", {"path": "ro.txt", "old_string": "keep",
                          "new_string": "lost"}),
        ToolCall("write", {"path": "locked/x", "content": "x"}),
        ToolCall("grep", {"pattern": "root"}),
    ], "--approval", "allow_all")
    for r, text in zip(res[:4], sent[:4]):
        assert r["status"] == "error" and "permission denied" in text, text
    assert "root's" not in sent[4] and "could not be read" in sent[4]
    with open(ws(room, "ro.txt")) as f:
        assert f.read() == "keep\n"
    assert os.listdir(ws(room, "locked")) == []


def test_deny_all_refuses_write(room, model):
    res, sent = run_calls(room, model, [
        ToolCall("write", {"path": "no.txt", "content": "x"}),
        ToolCall("read", {"path": "no.txt"})], "--approval", "deny_all")
    assert [r["status"] for r in res] == ["denied", "denied"]
    assert "denied" in sent[0]
    assert not os.path.exists(ws(room, "no.txt"))


def test_allow_list_names_file_tools(room, model):
    with open(ws(room, "f.txt"), "w") as f:
        f.write("hello\n")
    res, sent = run_calls(room, model, [
        ToolCall("read", {"path": "f.txt"}),
        ToolCall("write", {"path": "f.txt", "content": "x"})],
        "--approval", "allow_list")
    assert [r["status"] for r in res] == ["denied", "denied"]
    c = room.connect()
    c.send({"type": "config", "allow_list": ["read", "ls", "grep"]})
    c.wait("config")
    res, sent = run_calls(room, model, [
        ToolCall("read", {"path": "f.txt"}),
        ToolCall("write", {"path": "f.txt", "content": "x"})])
    assert [r["status"] for r in res] == ["ok", "denied"]


def test_ask_shows_whether_a_call_modifies(room, model):
    model.script(Reply("", tool_calls=[ToolCall("write", {
        "path": "w.txt", "content": "hi"})]), Reply("Done."))
    room.start("--model-url", model.url, "--approval", "ask", *fast())
    c = room.connect()
    c.send({"type": "prompt", "text": "go"})
    req = c.wait("approval_request")
    assert req["tool"] == "write" and req["modifies"] is True
    c.send({"type": "approve", "id": req["id"], "approve": True})
    assert c.wait("tool_result")["status"] == "ok"
    with open(ws(room, "w.txt")) as f:
        assert f.read() == "hi"


def test_bad_input_and_unknown_tool(room, model):
    res, sent = run_calls(room, model, [
        ToolCall("write", {"path": "x"}),
        ToolCall("edit", {"path": "x", "old_string": "",
                          "new_string": "y"}),
        ToolCall("read", {"path": 7}),
        ToolCall("frobnicate", {}),
    ], "--approval", "allow_all")
    assert all(r["status"] == "error" for r in res)
    assert "content" in sent[0]
    assert "must not be empty" in sent[1]
    assert "must be a string" in sent[2] or "needs" in sent[2]
    assert "read, write, edit, ls, grep" in sent[3]


# --- patterns chosen to be slow ---------------------------------------------------

GLOB_BOMB = "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b"


class Pinger(threading.Thread):
    """Another member, asking the room something every 0.1 s (a `who`, then
    a chat line, in turn) once the last was answered; seqs holds the seq
    each chat line was stored with."""

    def __init__(self, client):
        super().__init__(daemon=True)
        self.c = client
        self.seqs = []
        self.failure = None
        self.done = threading.Event()

    def run(self):
        n = 0
        try:
            while not self.done.is_set():
                if n % 2 == 0:
                    self.c.send({"type": "who"})
                    self.c.wait("presence", timeout=10)
                else:
                    self.c.send({"type": "chat", "text": "ping %d" % n})
                    self.seqs.append(self.c.wait(
                        "message", timeout=10, text="ping %d" % n)["seq"])
                n += 1
                time.sleep(0.1)
        except Exception as e:  # reported by the test's thread
            self.failure = e


def test_slow_patterns_never_freeze_the_room(room, model):
    """A glob and regexes that backtrack exponentially, and a grep longer
    than its time budget: each call ends with the right answer or a clear
    error, and another member is answered all along: the room stores his
    lines while the longest call runs."""
    open(ws(room, "a" * 200), "w").close()
    with open(ws(room, "long.txt"), "w") as f:
        f.write("a" * 5000 + "\n")
    with open(ws(room, "slow.txt"), "w") as f:
        # About 8 ms of backtracking per line, under the per-line budget:
        # some 40 s in all, over the 2 s budget given below.
        f.write(("a" * 24 + "\n") * 5000)
    calls = [
        ToolCall("ls", {"pattern": GLOB_BOMB}),
        ToolCall("ls", {"pattern": GLOB_BOMB[:-1] + "a"}),
        ToolCall("grep", {"pattern": r"(.*)(.*)(.*)(.*)(.*)\5[xy]",
                          "path": "long.txt"}),
        ToolCall("grep", {"pattern": r"^(a|aa)+\1[xy]", "path": "slow.txt"}),
        ToolCall("grep", {"pattern": "a{24}", "glob": GLOB_BOMB}),
    ]
    model.script(Reply("Working.", tool_calls=calls), Reply("Done."))
    room.start("--model-url", model.url, *fast(
        "--approval", "allow_all", "--file-tool-timeout", "2"))
    alice = room.connect()
    bob = room.connect(user="bob")
    bob.send({"type": "who"})
    bob.wait("presence")
    bob.events.clear()
    pinger = Pinger(bob)
    pinger.start()
    try:
        alice.send({"type": "prompt", "text": "go"})
        evs = alice.collect("turn_end", timeout=60)
    finally:
        pinger.done.set()
        pinger.join(15)
    assert pinger.failure is None, pinger.failure

    res = [e for e in evs if e["type"] == "tool_result"]
    sent = tool_results_in(model.requests[1]["body"])
    assert [r["status"] for r in res] == ["ok", "ok", "error", "error", "ok"]
    # The calls run one after another: the grep of slow.txt (its whole
    # 2 s budget) ran between the end of the call before it and its own.
    # A loop frozen by it would have stored none of bob's lines there.
    during = [q for q in pinger.seqs if res[2]["seq"] < q < res[3]["seq"]]
    assert len(during) >= 2, (res[2]["seq"], res[3]["seq"], pinger.seqs)
    assert sent[0].startswith("no entries under . match ")
    assert sent[1] == "a" * 200
    assert "grep in long.txt stopped: the pattern is too costly" in sent[2]
    assert "long.txt:1" in sent[2] and "backreference" in sent[2]
    assert "grep in slow.txt stopped: it ran out of its time budget " \
        "(2 s" in sent[3] and "file-tool-timeout" in sent[3]
    assert sent[4].startswith("no matches")


# --- on the real workspace filesystem -------------------------------------------

@pytest.mark.skipif(not os.path.exists(FS) or not os.path.exists("/dev/fuse"),
                    reason="needs atrium-fs and /dev/fuse")
def test_file_tools_on_atrium_fs_mount(room, model):
    with room.on_atrium_fs():
        res, sent = run_calls(room, model, [
            ToolCall("write", {"path": "d/f.txt", "content": "alpha\nbeta\n"}),
            ToolCall("edit", {"path": "d/f.txt", "old_string": "beta",
                              "new_string": "gamma"}),
            ToolCall("read", {"path": "d/f.txt"}),
            ToolCall("grep", {"pattern": "gam"}),
            ToolCall("ls", {"pattern": "**"}),
        ], "--approval", "allow_all")
        assert [r["status"] for r in res] == ["ok"] * 5, sent
        assert sent[2] == "     1\talpha\n     2\tgamma\n"
        assert sent[3] == "d/f.txt:2: gamma"
        assert sent[4].split("\n") == ["d/", "d/f.txt"]
        st = os.stat(ws(room, "d", "f.txt"))
        assert (st.st_uid, st.st_gid) == (SANDBOX_UID, SANDBOX_UID)


@pytest.mark.skipif(not os.path.exists(FS) or not os.path.exists("/dev/fuse"),
                    reason="needs atrium-fs and /dev/fuse")
def test_stalled_listing_never_freezes_the_room(room, model):
    """ls of a directory while the workspace's filesystem does not answer
    (atrium-fs stopped): the listing waits, but another member's chat line
    is answered meanwhile (the room stores it between the call and its
    result), and the listing completes once atrium-fs answers."""
    with room.on_atrium_fs():
        os.makedirs(ws(room, "warm"))
        os.makedirs(ws(room, "cold"))
        for i in range(50):
            open(ws(room, "cold", "f%02d" % i), "w").close()
        # A first listing (of another directory: the kernel then caches
        # it) teaches the kernel that atrium-fs needs no opendir; the stat
        # caches the entry, and with no group bits on the way no ACL is
        # asked for: only the listing itself then needs the stopped
        # daemon.  Asking for approval holds the call until atrium-fs is
        # stopped.
        for d in (room.workspace, ws(room, "warm"), ws(room, "cold")):
            os.chmod(d, 0o707)
        model.script(Reply("", tool_calls=[ToolCall("ls", {"path": "warm"})]),
                     Reply("Warm."),
                     Reply("", tool_calls=[ToolCall("ls", {"path": "cold"})]),
                     Reply("Done."))
        room.start("--model-url", model.url, "--approval", "ask", *fast())
        alice = room.connect()
        bob = room.connect(user="bob")
        alice.send({"type": "prompt", "text": "list it"})
        req = alice.wait("approval_request")
        alice.send({"type": "approve", "id": req["id"], "approve": True})
        alice.wait("turn_end", timeout=15)
        os.stat(ws(room, "cold"))
        alice.send({"type": "prompt", "text": "list cold"})
        evs = alice.collect("approval_request")
        req = evs[-1]
        call = [e for e in evs if e["type"] == "tool_call"][-1]
        pid = fs_pid(room)
        stop_process(pid)
        try:
            alice.send({"type": "approve", "id": req["id"], "approve": True})
            # Shown once the listing started (in the same turn of the
            # agent's loop): it now waits on atrium-fs.
            approved = alice.wait("approval_result", status="approved",
                                  user="alice")
            bob.events.clear()
            bob.send({"type": "chat", "text": "still here?"})
            said = bob.wait("message", timeout=10, text="still here?")
            # Answered while the listing still waits: atrium-fs has not
            # answered anything since before it started.
            assert stopped(pid)
            assert not [e for e in alice.events
                        if e["type"] == "tool_result"], alice.events
        finally:
            os.kill(pid, signal.SIGCONT)
        evs = alice.collect("turn_end", timeout=30)
        res = [e for e in evs if e["type"] == "tool_result"]
        assert res and res[0]["id"] == call["id"], (call, res)
        assert approved["seq"] < said["seq"] < res[0]["seq"], \
            (approved, said, res)
        res = [e for e in evs if e["type"] == "tool_result"]
        assert [r["status"] for r in res] == ["ok"], res
        sent = tool_results_in(model.requests[-1]["body"])[-1]
        assert sent.split("\n")[:2] == ["cold/f00", "cold/f01"], sent
