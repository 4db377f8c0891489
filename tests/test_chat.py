"""The terminal chat as people see it, and the room protocol as scripts use
it: the real OpenSSH client in tmux (send-keys, capture-pane) against
atriumd with the real agent and a scripted model (tests/model_server.py).

What a screen must show is compared with what tmux captured: no line of a
command's output or of the agent's answer lost or left behind, wide
characters in place, the input line whole after a resize and after Ctrl-L,
no colour with NO_COLOR, and a slow client that catches up with a screen
drawn again.  The protocol: piped requests sent before EOF are all answered.

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_chat.py
"""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import ssh_command
from model_server import Reply, StreamError, ToolCall

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="atriumd mounts FUSE: run as root"),
    pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux"),
]

# An answer long enough to wrap over several rows at every width used.
LONG_ANSWER = ("All one hundred numbers were printed, one per line, from the "
               "first to the last; nothing was skipped, and the command ended "
               "with status zero. END-OF-ANSWER")
CJK_ANSWER = "漢字の行" * 24 + "😀🎉 完了"


@pytest.fixture
def srv(atriumd, data_dir, model_server):
    env = dict(os.environ, ANTHROPIC_API_KEY="test-key")
    return atriumd(data_dir, "--provider", "anthropic", "--model-url",
                   model_server.url, "--model", "test-model",
                   "--approval", "allow_all", env=env)


class Tmux:
    """A tmux server of this test's own (other tests may run beside it)."""

    def __init__(self):
        self.sock = "atrium-chat-%d" % os.getpid()

    def __call__(self, *args):
        return subprocess.run(["tmux", "-L", self.sock] + list(args),
                              capture_output=True, text=True)

    def open(self, name, srv, room, user="alice", cols=80, rows=24,
             opts=(), env="", under_shell=False):
        """A pane running ssh into room; under_shell keeps a shell as the
        pane's process with ssh its child (tmux continues a pane's own
        process when it is stopped, not its children)."""
        cmd = " ".join(ssh_command(srv, room, user=user,
                                   opts=["-t"] + list(opts)))
        self("new-session", "-d", "-s", name, "-x", str(cols), "-y",
             str(rows), env + cmd + "; exit $?" if under_shell else
             "exec " + env + cmd)
        self("set-option", "-t", name, "remain-on-exit", "on")
        self.wait(name, room + ">")

    def screen(self, name, history=False, escapes=False):
        args = ["capture-pane", "-p", "-t", name]
        if history:
            args += ["-J", "-S", "-"]
        if escapes:
            args += ["-e"]
        return self(*args).stdout

    def rows(self, name):
        """The visible rows, trailing blanks trimmed, empty rows at the
        end dropped."""
        rows = [r.rstrip() for r in self.screen(name).split("\n")]
        while rows and not rows[-1]:
            rows.pop()
        return rows

    def wait(self, name, text, timeout=20, history=False):
        end = time.time() + timeout
        screen = ""
        while time.time() < end:
            screen = self.screen(name, history)
            if (text(screen) if callable(text) else text in screen):
                return screen
            time.sleep(0.1)
        pytest.fail("%r not on the screen of %s:\n%s" % (text, name, screen))

    def cursor(self, name):
        out = self("display-message", "-p", "-t", name,
                   "#{cursor_x} #{cursor_y}").stdout.split()
        return int(out[0]), int(out[1])

    def keys(self, name, *keys):
        self("send-keys", "-t", name, *keys)

    def kill(self):
        self("kill-server")


@pytest.fixture
def tmux():
    t = Tmux()
    yield t
    t.kill()


def settled(tmux, name, done_text, timeout=30):
    """The screen once done_text is on it and it stopped changing."""
    tmux.wait(name, done_text, timeout, history=True)
    last, same = None, 0
    while same < 3:
        time.sleep(0.2)
        now = tmux.screen(name, history=True)
        same = same + 1 if now == last else 0
        last = now
    return last


def untimed(row):
    """A row without the time the chat shows before each line ("HH:MM ")."""
    return re.sub(r"^\d\d:\d\d ", "", row)


def hanging(lines, head, sep=" "):
    """The line starting with head (its time taken off) and the rows
    wrapped under its text (past "HH:MM " and the name), joined back into
    one line with sep between rows."""
    indent = " " * (len("00:00 ") + len(head.split(" ")[0]) + 1)
    i = next(n for n, l in enumerate(lines) if l.startswith(head))
    rows = [lines[i]]
    for l in lines[i + 1:]:
        if not l.startswith(indent) or not l.strip():
            break
        rows.append(l.strip())
    return sep.join(rows)


def prompt_row(tmux, name, room):
    rows = tmux.rows(name)
    assert rows and rows[-1].startswith(room + ">"), rows
    return rows[-1]


# --- lines are never lost --------------------------------------------------

@pytest.mark.parametrize("cols", [41, 80])
def test_answer_after_long_output_loses_no_line(srv, model_server, tmux,
                                                cols):
    """A 100-line command output, then an answer that wraps over several
    rows: every member sees every output line, the tool result and the
    whole answer (the redraw used to move up one row too many)."""
    model_server.script(
        Reply("Running it.", tool_calls=[ToolCall("bash", {
            "command": "seq 1 100"})]),
        Reply(LONG_ANSWER))
    tmux.open("a", srv, "seqroom", "alice", cols=cols, rows=20)
    tmux.open("b", srv, "seqroom", "bob", cols=cols + 17, rows=15)
    tmux.keys("a", "@agent count to a hundred", "Enter")
    for name in ("a", "b"):
        screen = settled(tmux, name, "agent done")
        lines = [untimed(l) for l in screen.split("\n")]
        numbers = [l.strip() for l in lines if re.fullmatch(r"\d+", l.strip())]
        assert numbers == [str(i) for i in range(1, 101)], screen
        assert any(l.startswith("* tool ok") for l in lines), screen
        # Wrapped at words, later rows under the text.
        assert hanging(lines, "agent: All one") == "agent: " + LONG_ANSWER, \
            screen
        # Nothing after the answer but the turn's end, the status line
        # and the prompt.
        visible = [untimed(r) for r in tmux.rows(name)]
        assert visible[-1].startswith("seqroom>")
        assert any(r.startswith("* agent done") for r in visible[-4:]), visible


# --- wide characters ---------------------------------------------------------

@pytest.mark.parametrize("cols", [37, 52, 80])
def test_streamed_cjk_answer_leaves_no_stale_row(srv, model_server, tmux,
                                                 cols):
    model_server.script(Reply(CJK_ANSWER))
    tmux.open("a", srv, "wide", "alice", cols=cols, rows=40)
    tmux.keys("a", "@agent say it in kanji", "Enter")
    screen = settled(tmux, "a", "agent done")
    lines = [untimed(l) for l in screen.split("\n")]
    # Its rows (broken between wide characters, later ones under the
    # text) give the answer back whole, once.
    assert sum(1 for l in lines if l.startswith("agent: ")) == 1, screen
    assert hanging(lines, "agent: ", "").replace(" ", "") == \
        ("agent: " + CJK_ANSWER).replace(" ", ""), screen
    visible = [untimed(r) for r in tmux.rows("a")]
    assert visible[-1] == "wide>"
    assert sum(1 for r in visible if r.startswith("agent: ")) == 1, visible
    # Every row of the answer is full but for a wide character that did
    # not fit at the edge (the last two aside: the answer's end, and the
    # row broken at its one space): nothing stale between them.
    start = next(i for i, r in enumerate(visible) if r.startswith("agent: "))
    end = next(i for i, r in enumerate(visible) if r.startswith("* agent done"))
    assert all(width(r) >= cols - 1 for r in tmux.rows("a")[start:end - 2]), \
        visible
    body = "".join(r.strip() for r in visible[start:end])
    assert body.replace(" ", "") == ("agent: " + CJK_ANSWER).replace(" ", ""), \
        visible


def test_retried_answer_replaces_the_cut_one(srv, model_server, tmux):
    """An answer that fails mid-stream and is retried: its partial text
    goes, one dim line says so, and the retry's answer is shown once."""
    model_server.script(
        StreamError(Reply("PARTIAL-ANSWER-THAT-FAILS"), after_events=5),
        Reply("The whole answer."))
    tmux.open("a", srv, "retry", "alice", cols=80, rows=24)
    tmux.keys("a", "@agent answer me", "Enter")
    screen = settled(tmux, "a", "agent done")
    lines = [untimed(l) for l in screen.split("\n")]
    assert "PARTIAL" not in screen, screen
    assert "* the agent's answer was cut short; it is being retried" in \
        lines, screen
    assert [l for l in lines if l.startswith("agent: ")] == [
        "agent: The whole answer."], screen
    assert any("overloaded_error" in l and "retrying" in l
               for l in lines), screen
    row = [r for r in tmux.screen("a", escapes=True).split("\n")
           if "cut short" in r][0]
    assert "\x1b[2m" in row        # dim


def width(s):
    """Columns of s on a terminal (CJK and these emoji are 2)."""
    return sum(2 if ord(c) >= 0x1100 else 1 for c in s)


@pytest.mark.parametrize("cols", [30, 80])
def test_wide_input_line(srv, tmux, cols):
    """CJK and emoji typed in: the cursor where the text ends, editing by
    character, and a line longer than the row scrolled sideways on one
    row (never spilling onto a second one)."""
    tmux.open("a", srv, "typing", "alice", cols=cols, rows=12)
    typed = "你好😀ab"
    tmux.keys("a", "-l", typed)
    tmux.wait("a", "typing> " + typed)
    x, _ = tmux.cursor("a")
    assert x == len("typing> ") + width(typed)
    tmux.keys("a", "Left", "Left", "Left")
    tmux.keys("a", "-l", "X")
    tmux.wait("a", "typing> 你好X😀ab")
    x, _ = tmux.cursor("a")
    assert x == len("typing> ") + width("你好X")
    tmux.keys("a", "BSpace", "BSpace")
    tmux.wait("a", "typing> 你😀ab")
    tmux.keys("a", "End", "C-u")
    # A long line: one row, cursor on it, the end in view.
    long = "長い入力の行です" * 8 + "END"
    tmux.keys("a", "-l", long)
    tmux.wait("a", "END")
    rows = tmux.rows("a")
    assert rows[-1].startswith("typing> ") and rows[-1].endswith("END")
    assert width(rows[-1]) <= cols
    assert not any("長い" in r for r in rows[:-1]), rows
    x, y = tmux.cursor("a")
    assert y == len(rows) - 1 and x == width(rows[-1])
    tmux.keys("a", "Enter")
    screen = tmux.wait("a", "alice: ", history=True)
    # Wrapped between the wide characters, under the text.
    tmux.wait("a", lambda s: ("alice:" + long) in re.sub(r"\s", "", s),
              history=True)
    assert tmux.rows("a")[-1] == "typing>", screen


# --- resize and Ctrl-L -------------------------------------------------------

def test_resize_while_typing_and_ctrl_l(srv, tmux):
    tmux.open("a", srv, "resize", "alice", cols=90, rows=16)
    tmux.keys("a", "first line for the history", "Enter")
    tmux.wait("a", "alice: first line for the history")
    typed = "a long line being typed " + "x" * 40 + " TAIL"
    tmux.keys("a", "-l", typed)
    tmux.wait("a", "TAIL")
    for cols in (40, 70, 33):
        tmux("resize-window", "-t", "a", "-x", str(cols), "-y", "16")
        # Drawn again for the new width: the line, longer than any of
        # them, fills the row but for the cursor's column (what tmux
        # kept of the screen drawn for the old width does not).
        tmux.wait("a", lambda s: width(tmux.rows("a")[-1]) == cols - 1)
        rows = tmux.rows("a")
        # The input line is on one row, with its end; no part of it
        # stays on another row.
        assert rows[-1].startswith("resize> ") and rows[-1].endswith("TAIL")
        assert width(rows[-1]) <= cols
        assert not any("xxxx" in r or "TAIL" in r for r in rows[:-1]), rows
        assert any("alice: first line" in r for r in rows), rows
    # Ctrl-L: the screen drawn again, the same lines, the line kept.
    tmux("resize-window", "-t", "a", "-x", "90", "-y", "16")
    tmux.wait("a", "resize> " + typed)
    # Scribble on the screen behind the chat's back (as a message from
    # another program would); Ctrl-L puts the screen right.
    tty = tmux("display-message", "-p", "-t", "a", "#{pane_tty}").stdout
    with open(tty.strip(), "w") as f:
        f.write("\r\nSCRIBBLED-ON-THE-SCREEN\r\n")
    tmux.wait("a", "SCRIBBLED")
    tmux.keys("a", "C-l")
    tmux.wait("a", lambda s: "SCRIBBLED" not in s and
              s.rstrip().split("\n")[-1] == "resize> " + typed)
    rows = [untimed(r) for r in tmux.rows("a")]
    assert rows[-1] == "resize> " + typed
    assert rows[0].startswith("-- "), rows      # the date line
    assert rows[1].startswith("* you are alice"), rows
    assert any(r == "alice: first line for the history" for r in rows), rows
    tmux.keys("a", "Enter")
    tmux.wait("a", "alice: " + typed)


# --- colour and plain terminals ---------------------------------------------

def test_no_color_and_dumb_terminal(srv, tmux):
    tmux.open("c", srv, "colours", "alice", cols=80, rows=10)
    tmux.open("n", srv, "colours", "bob", cols=80, rows=10,
              opts=["-o", "SetEnv=NO_COLOR=1"])
    tmux.keys("c", "hello in colour", "Enter")
    tmux.wait("n", "alice: hello in colour")
    coloured = tmux.screen("c", escapes=True)
    plain = tmux.screen("n", escapes=True)
    assert re.search(r"\x1b\[[0-9;]*[39][1-6]", coloured), coloured
    assert not re.search(r"\x1b\[[0-9;]*[39][0-7]m", plain), plain
    assert "\x1b[1m" in plain      # bold stays
    # TERM=dumb on a pty: plain lines, no escape sequence at all.
    from test_ssh import Lines
    env = dict(os.environ, TERM="dumb")
    d = Lines(ssh_command(srv, "colours", user="alice", opts=["-tt"]),
              env=env)
    try:
        d.send("from a dumb terminal\r/who\r")
        tmux.wait("n", "alice: from a dumb terminal")
        # The line comes with the room's events, /who's answer to alice
        # alone: either may come first.
        want = (b"alice: from a dumb terminal", b"here (")
        d.expect(lambda l: all(any(w in s for s in d.seen) for w in want))
        d.send("/quit\r")
    finally:
        d.close()
    assert b"\x1b" not in b"".join(d.seen), d.seen


# --- the small things --------------------------------------------------------

def test_who_help_policy_and_prompt_text(srv, model_server, tmux):
    from test_ssh import chat_plain, json_lines
    a = chat_plain(srv, "small", "alice")
    try:
        a.expect(lambda l: b"you are alice" in l)
        tmux.open("b", srv, "small", "bob", cols=80, rows=30)
        a.expect(lambda l: b"bob joined" in l)
        a.send("/who\n")
        a.expect(lambda l: l.startswith(b"* here (2):"))
        who = [a.expect(lambda l: True), a.expect(lambda l: True)]
        assert sorted(w.split()[0] for w in who) == [b"alice", b"bob"], who
        assert all(w.startswith(b"  ") and b"active" in w for w in who), who
        a.send("/help\n")
        a.expect(lambda l: l == b"* commands:\n")
        # The table's length is the table's: read up to its last line.
        table = [a.expect(lambda l: True)]
        while b"Ctrl-L" not in table[-1] and len(table) < 80:
            table.append(a.expect(lambda l: True))
        assert b"Ctrl-L" in table[-1], table
        assert any(l.startswith(b"  /quit ") for l in table), table
        assert all(len(l) <= 80 for l in table), table
        a.send("/policy ask\n")
        line = a.expect(lambda l: b"set the approval policy" in l)
        assert line == b"* alice set the approval policy to ask\n", line
        tmux.wait("b", "alice set the approval policy to ask")
        # A script's session posts no joined/left; its prompt's question
        # is shown as its asker's message.
        j = json_lines(srv, "small", "bob")
        j.expect(lambda l: json.loads(l)["type"] == "welcome")
        j.send('{"type":"prompt","text":"what is the time?"}\n')
        a.expect(lambda l: l == b"bob: what is the time?\n")
        tmux.wait("b", "bob: what is the time?")
        a.expect(lambda l: b"agent done" in l)
        j.close()
        p = subprocess.run(ssh_command(srv, "small", "true", user="bob"),
                           timeout=30)
        assert p.returncode == 0
        a.send("/who\n")
        a.expect(lambda l: l.startswith(b"* here (2):"))
        seen = b"".join(a.seen)
        assert seen.count(b"bob joined") == 1, seen
        assert b"bob left" not in seen, seen
    finally:
        a.close()


# --- the protocol: piped requests are all answered --------------------------

KINDS = 1000


def piped_requests(run):
    lines = []
    for i in range(KINDS):
        lines.append({"type": "chat", "text": "piped %d-%d" % (run, i)})
        lines.append({"type": "who"})
        lines.append({"type": "history", "since": 0, "limit": 1})
        lines.append({"type": "config",
                      "approval": "ask" if i % 2 else "allow_all"})
        lines.append({"type": "sync", "id": "mine-%d" % i})
        lines.append({"type": "stop"})
    return "".join(json.dumps(o) + "\n" for o in lines)


def test_piped_requests_are_all_answered(srv, ssh_run):
    """1,000 requests of each kind in one write, then EOF: every one is
    answered before the session ends, 50 runs in a row, in cold and warm
    rooms (input that came before the room's agent was reached, and
    answers still on their way at EOF, used to be lost)."""
    ours = {}                            # chat lines the room took, by run
    for run in range(50):
        room = "piped-%d" % (run % 4)    # new rooms, then running ones
        rc, out, err = ssh_run(srv, room, "-s", "atrium",
                               input=piped_requests(run), timeout=300)
        assert rc == 0, err
        evs = [json.loads(l) for l in out.splitlines()]
        kinds = {}
        for e in evs:
            kinds[e["type"]] = kinds.get(e["type"], 0) + 1
        mine = [e for e in evs if e["type"] == "message" and
                not e.get("replay") and
                e["text"].startswith("piped %d-" % run)]
        # Past the per-user rate (agent/input_limits.c) a chat line is
        # refused with when to retry: answered, never dropped.
        slow = [e for e in evs if e["type"] == "error" and
                "try again in" in e["message"]]
        texts = [e["text"] for e in mine]
        ours[run] = len(texts)
        # A new room's agent starts with a full allowance of 30.
        assert len(texts) + len(slow) == KINDS, kinds
        assert len(texts) >= 30 or run >= 4, kinds
        assert texts == sorted(texts, key=lambda t: int(t.split("-")[-1]))
        who = [e for e in evs if e["type"] == "presence" and "users" in e
               and not ("joined" in e or "left" in e)]
        assert len(who) == KINDS, kinds
        replays = [e for e in evs if e.get("replay")]
        assert len(replays) == KINDS, kinds
        configs = [e for e in evs if e["type"] == "config" and
                   not e.get("replay")]
        assert len(configs) == KINDS, kinds
        assert configs[-1]["approval"] == "ask"
        synced = [e["id"] for e in evs if e["type"] == "synced"]
        assert synced == ["mine-%d" % i for i in range(KINDS)], kinds
        stops = [e for e in evs if e["type"] == "error" and
                 "not running a turn" in e["message"]]
        assert len(stops) == KINDS, kinds
    # All it took are in room.db.
    import sqlite3
    for r in range(4):
        db = sqlite3.connect(os.path.join(srv.data, "rooms", "piped-%d" % r,
                                          "room.db"))
        n = db.execute("SELECT count(*) FROM events WHERE type = 'message' "
                       "AND json LIKE '%piped %'").fetchone()[0]
        assert n == sum(ours[run] for run in range(r, 50, 4)) and n >= 30


def test_piped_prompts_and_execs_are_all_answered(srv, ssh_run):
    """The requests whose answers come later (a turn's end, an exec's
    result): 1,000 of each, piped in one write, all answered before the
    session ends."""
    lines = []
    for i in range(KINDS):
        lines.append({"type": "prompt", "text": "question %d" % i})
        lines.append({"type": "exec", "id": "x%d" % i,
                      "command": "echo out-%d" % i})
    rc, out, err = ssh_run(srv, "slowpipe", "-s", "atrium",
                           input="".join(json.dumps(o) + "\n"
                                         for o in lines), timeout=600)
    assert rc == 0, err
    evs = [json.loads(l) for l in out.splitlines()]
    # Each exec ran, or was refused by name (a person runs 16 at once:
    # --max-commands-per-user counts the subsystem's execs too; and sends
    # 30 requests at once, agent/input_limits.c: 15 prompts, 15 execs).
    results = {e["id"]: e for e in evs if e["type"] == "exec_result"}
    refused = {e["id"] for e in evs if e["type"] == "error" and "id" in e}
    assert set(results) | refused == {"x%d" % i for i in range(KINDS)}
    assert not set(results) & refused
    assert len(results) >= 15
    assert all(r["stdout"] == "out-%s\n" % i[1:] for i, r in results.items())
    asked = [e["text"] for e in evs if e["type"] == "prompt"]
    slow = [e for e in evs if e["type"] == "error" and "id" not in e and
            "try again in" in e["message"]]
    assert len(asked) + len(slow) == KINDS and asked
    assert asked == sorted(asked, key=lambda t: int(t.split()[-1]))
    ends = [e for e in evs if e["type"] == "turn_end"]
    assert len(ends) == len(asked)
