"""`/term`, the room's shared terminal, as people see it: the real OpenSSH
client in tmux (send-keys, capture-pane) against atriumd with the real
agent, its pty and libvterm screen, and bash in the room's sandbox.

Two members with different window sizes see and type into one shell; a
member who comes late sees the screen as it is (drawn, not replayed);
Ctrl-] goes back to the chat; `exit` sends everyone back with a notice;
the shell is the room's sandbox (its uid, /workspace, no network); escape
sequences the shell prints never reach a member's terminal.

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_term.py
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import make_room
from test_chat import Tmux as ChatTmux

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="atriumd mounts FUSE: run as root"),
    pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux"),
]

STATUS = "Ctrl-] back to the chat"


@pytest.fixture
def srv(atriumd, data_dir, model_server):
    env = dict(os.environ, ANTHROPIC_API_KEY="test-key")
    return atriumd(data_dir, "--provider", "anthropic", "--model-url",
                   model_server.url, "--model", "test-model", env=env)


class Tmux(ChatTmux):
    """test_chat's tmux driver on a socket of its own, and typing a whole
    line at once (the shell echoes it back as one)."""

    def __init__(self):
        super().__init__()
        self.sock = "atrium-term-%d" % os.getpid()

    def type(self, name, text):
        """Type text literally, then Enter."""
        self("send-keys", "-t", name, "-l", text)
        self("send-keys", "-t", name, "Enter")


@pytest.fixture
def tmux():
    t = Tmux()
    yield t
    t.kill()


def enter_term(tmux, name):
    tmux.type(name, "/term")
    tmux.wait(name, lambda s: STATUS in s and any(
        r.rstrip().endswith("$") for r in s.split("\n")))


def line_alone(text):
    """A predicate: some row of the screen is exactly text."""
    return lambda s: any(r.rstrip() == text for r in s.split("\n"))


def room_uid(srv, room):
    with open(os.path.join(srv.data, "rooms", room, "uid")) as f:
        return f.read().split(":")[0]


def test_two_members_of_different_sizes_share_one_shell(srv, tmux):
    """Both see what either types and what the shell prints; the pty is
    as large as the smaller window (less its status line), and the larger
    window shows nothing beyond it but its own status line."""
    tmux.open("a", srv, "shared", "alice", cols=80, rows=24)
    tmux.open("b", srv, "shared", "bob", cols=110, rows=32)
    enter_term(tmux, "a")
    enter_term(tmux, "b")
    tmux.type("a", "echo hello-$((6*7))")
    for name in ("a", "b"):
        tmux.wait(name, line_alone("hello-42"))
        tmux.wait(name, "echo hello-$((6*7))")
    tmux.type("b", "echo from-bob-$((2+3)); stty size")
    for name in ("a", "b"):
        tmux.wait(name, line_alone("from-bob-5"))
        tmux.wait(name, line_alone("23 80"))
    rows = tmux.rows("b")
    assert all(len(r) <= 80 for r in rows[:23]), rows
    assert all(not r for r in rows[23:31]), rows
    assert STATUS in rows[31] and "alice" in rows[31] and "bob" in rows[31]
    # Both screens hold the same terminal rows.
    assert tmux.rows("a")[:23] == rows[:23]


def test_a_late_member_sees_the_screen_not_a_replay(srv, tmux):
    """What came before and scrolled away is not sent again: a member who
    attaches late gets the screen as it is, drawn in place, so nothing of
    the earlier output lands in its terminal's scrollback."""
    tmux.open("a", srv, "late", "alice", cols=80, rows=20)
    enter_term(tmux, "a")
    tmux.type("a", "seq 1000 1300; echo seq-$((1+1))-done")
    tmux.wait("a", line_alone("seq-2-done"))
    tmux.open("c", srv, "late", "alice", cols=90, rows=26)
    enter_term(tmux, "c")
    screen = tmux.wait("c", line_alone("seq-2-done"))
    assert "1300" in screen, screen
    # Only the visible screen was drawn: the early lines never came.
    history = tmux.screen("c", history=True)
    assert "1001" not in history, history
    # Typing after joining goes to the same shell.
    tmux.type("c", "echo late-$((3*3))")
    tmux.wait("a", line_alone("late-9"))
    tmux.wait("c", line_alone("late-9"))


def test_ctrl_bracket_returns_to_the_chat(srv, tmux):
    """Ctrl-] leaves the terminal for the chat, drawn again with what was
    said meanwhile; the shell runs on, and /term shows it again."""
    tmux.open("a", srv, "back", "alice", cols=80, rows=24)
    tmux.open("b", srv, "back", "bob", cols=80, rows=24)
    enter_term(tmux, "a")
    tmux.type("a", "echo kept-$((40+2))")
    tmux.wait("a", line_alone("kept-42"))
    tmux.type("b", "said while alice was away")
    tmux.wait("b", "bob: said while alice was away")
    # In the terminal it shows on the status row alone, as news.
    screen = tmux.wait("a", lambda s: "| bob: said while alice was away |"
                       in s.rstrip("\n").split("\n")[-1])
    rows = screen.rstrip("\n").split("\n")[:-1]
    assert not any("said while alice was away" in r for r in rows), screen
    tmux.keys("a", "C-]")
    screen = tmux.wait("a", "bob: said while alice was away")
    assert STATUS not in screen and "kept-42" not in screen, screen
    assert tmux.rows("a")[-1].startswith("back>") or \
        "back>" in screen, screen
    tmux.type("a", "back in the chat")
    tmux.wait("b", "alice: back in the chat")
    enter_term(tmux, "a")
    tmux.wait("a", line_alone("kept-42"))


def test_exit_in_the_shell_returns_everyone_to_the_chat(srv, tmux):
    tmux.open("a", srv, "bye", "alice", cols=80, rows=24)
    tmux.open("b", srv, "bye", "bob", cols=70, rows=20)
    enter_term(tmux, "a")
    enter_term(tmux, "b")
    tmux.type("b", "exit")
    for name in ("a", "b"):
        screen = tmux.wait(name, "the room's terminal ended")
        assert "the shell exited (status 0)" in screen, screen
        tmux.wait(name, lambda s: STATUS not in s)
    tmux.type("a", "still chatting")
    tmux.wait("b", "alice: still chatting")
    # A new /term starts a new shell.
    enter_term(tmux, "b")


def test_shell_is_the_rooms_sandbox(srv, tmux, ssh_run):
    """The room's uid, /workspace (the same files as every other way in),
    and no network but loopback."""
    tmux.open("a", srv, "box", "alice", cols=100, rows=24)
    enter_term(tmux, "a")
    tmux.type("a", "echo U=$(id -u) D=$(pwd) N=$(tail -n +3 /proc/net/dev "
              "| cut -d: -f1 | xargs) > made-in-term.txt; cat made-in-term.txt")
    uid = room_uid(srv, "box")
    want = "U=%s D=/workspace N=lo" % uid
    tmux.wait("a", line_alone(want))
    rc, out, err = ssh_run(srv, "box", "cat made-in-term.txt")
    assert (rc, out) == (0, want + "\n"), err


def test_escape_sequences_stay_in_the_emulator(srv, tmux):
    """A title set by the shell is not another member's window title, and
    colours arrive as the emulator's cells, not as the shell's bytes."""
    tmux.open("a", srv, "esc", "alice", cols=80, rows=24)
    tmux.open("b", srv, "esc", "bob", cols=80, rows=24)
    enter_term(tmux, "a")
    enter_term(tmux, "b")
    before = tmux("display-message", "-p", "-t", "b", "#{pane_title}").stdout
    tmux.type("a", "printf '\\033]2;EVIL-TITLE\\007\\033[31mred-%s\\033[0m\\n' "
              "$((1+1))")
    tmux.wait("b", line_alone("red-2"))
    title = tmux("display-message", "-p", "-t", "b", "#{pane_title}").stdout
    assert "EVIL" not in title and title == before, title
    coloured = tmux("capture-pane", "-p", "-e", "-t", "b").stdout
    assert re.search(r"\x1b\[(0;)?31mred-2", coloured), coloured


def test_who_lists_who_is_in_the_terminal(srv, tmux):
    from test_ssh import json_lines
    tmux.open("a", srv, "whoterm", "alice", cols=80, rows=24)
    enter_term(tmux, "a")
    j = json_lines(srv, "whoterm", "bob")
    try:
        j.send(json.dumps({"type": "who"}) + "\n")
        line = j.expect(lambda l: b'"presence"' in l and b'"users"' in l)
        ev = json.loads(line)
        assert ev["term"] == ["alice"], ev
    finally:
        j.close()


def status_of(pid):
    with open("/proc/%d/status" % pid) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f
                    if ":\t" in line)


def test_a_stopped_member_holds_nobody_up(srv, tmux):
    """A member whose client stops reading (SIGSTOP) does not slow the
    shell or the others; once it reads again it sees the screen as it
    is, the same as everyone else's."""
    tmux.open("a", srv, "slow", "alice", cols=80, rows=24)
    tmux.open("b", srv, "slow", "bob", cols=80, rows=24, under_shell=True)
    enter_term(tmux, "a")
    enter_term(tmux, "b")
    shell = int(tmux("display-message", "-p", "-t", "b",
                     "#{pane_pid}").stdout)
    # bob's ssh, the shell's child: tmux would continue its pane's own
    # process at once.
    pid = int(subprocess.run(["pgrep", "-P", str(shell), "-x", "ssh"],
                             capture_output=True, text=True).stdout)
    os.kill(pid, signal.SIGSTOP)
    deadline = time.time() + 10
    while not status_of(pid)["State"].startswith("T"):
        assert time.time() < deadline, "bob's ssh did not stop"
        time.sleep(0.02)
    try:
        tmux.type("a", "end=$((SECONDS+4)); while [ $SECONDS -lt $end ]; "
                  "do seq 1 5000; done; echo all-$((1+2))-done")
        tmux.wait("a", line_alone("all-3-done"), timeout=30)
        tmux.type("a", "echo after-$((2*3))")
        tmux.wait("a", line_alone("after-6"))
        # bob's client stayed stopped all along.
        assert status_of(pid)["State"].startswith("T")
    finally:
        os.kill(pid, signal.SIGCONT)
    tmux.wait("b", line_alone("after-6"), timeout=30)
    # The rest of b's screen may be a redraw behind: wait for it, then
    # for both to be the same (a's is still, its shell idle).
    tmux.wait("b", lambda s: tmux.rows("b")[:23] == tmux.rows("a")[:23])


def test_the_pty_follows_the_window(srv, tmux):
    """A member's new window size reaches the shell (SIGWINCH, stty), and
    the screen is drawn again for it."""
    tmux.open("a", srv, "resize", "alice", cols=80, rows=24)
    enter_term(tmux, "a")
    tmux("resize-window", "-t", "a", "-x", "60", "-y", "20")
    tmux.wait("a", "terminal 60x19")
    tmux.type("a", "stty size")
    tmux.wait("a", line_alone("19 60"))
    rows = tmux.rows("a")
    assert STATUS in rows[19], rows


def test_protocol_clients_attach_with_term_open(srv):
    """Through the atrium subsystem: term_open, term_input, then the
    screen as cells in term_screen lines that carry no seq."""
    from test_ssh import json_lines
    make_room(srv, "proto")
    j = json_lines(srv, "proto", "alice")
    try:
        j.send(json.dumps({"type": "term_open", "cols": 40, "rows": 10})
               + "\n")
        first = json.loads(j.expect(lambda l: b'"term_screen"' in l))
        assert first["full"] and (first["cols"], first["rows"]) == (40, 10)
        assert "seq" not in first and first["members"] == ["alice"]
        j.send(json.dumps({"type": "term_input",
                           "data": "echo proto-$((5*5))\r"}) + "\n")

        def has_answer(line):
            if b'"term_screen"' not in line:
                return False
            ev = json.loads(line)
            return any(run[5] == "proto-25" for _, runs in ev["lines"]
                       for run in runs)
        j.expect(has_answer)
        j.send(json.dumps({"type": "term_input", "data": "x" * 5000})
               + "\n")
        err = json.loads(j.expect(lambda l: b'"error"' in l))
        assert "at most 4096 bytes" in err["message"], err
    finally:
        j.close()


def test_cursor_keys_follow_the_programs_mode(srv, tmux):
    """A program that asks for application cursor keys (vim, less) gets
    ESC O A for Up, whatever mode the member's own terminal is in; one
    that did not ask gets ESC [ A."""
    tmux.open("a", srv, "keys", "alice", cols=80, rows=24)
    enter_term(tmux, "a")
    # Up only once read(1) waits: earlier, bash's line editor could take it.
    tmux.type("a", "echo one-$((1+1)); read -r x; echo \"normal:${x:1}\"")
    tmux.wait("a", line_alone("one-2"))
    tmux.keys("a", "Up", "Enter")
    tmux.wait("a", line_alone("normal:[A"))
    tmux.type("a", "printf '\\033[?1h'; echo two-$((1+2)); read -r x; "
              "echo \"app:${x:1}\"")
    tmux.wait("a", line_alone("two-3"))
    tmux.keys("a", "Up", "Enter")
    tmux.wait("a", line_alone("app:OA"))


def test_pastes_are_bracketed_only_for_programs_that_ask(srv, tmux):
    """The chat asks the member's terminal for bracketed pastes; in the
    shared terminal a program that asked for them (?2004h) gets the paste
    between ESC [ 200 ~ and ESC [ 201 ~, one that did not gets the text
    alone (no stray escape sequences in cat's input)."""
    tmux.open("a", srv, "paste", "alice", cols=80, rows=24)
    enter_term(tmux, "a")
    tmux("set-buffer", "-b", "p", "pasted-text")
    # read(1) in a shell that turned bracketed paste off first: plain text.
    tmux.type("a", "printf '\\033[?2004l'; echo one-$((1+1)); read -r x; "
              "printf 'plain:%s\\n' \"$x\" | cat -v")
    tmux.wait("a", line_alone("one-2"))
    tmux("paste-buffer", "-p", "-b", "p", "-t", "a")
    tmux.keys("a", "Enter")
    tmux.wait("a", line_alone("plain:pasted-text"))
    tmux.type("a", "printf '\\033[?2004h'; echo two-$((1+2)); read -r x; "
              "printf 'bracketed:%s\\n' \"$x\" | cat -v")
    tmux.wait("a", line_alone("two-3"))
    tmux("paste-buffer", "-p", "-b", "p", "-t", "a")
    tmux.keys("a", "Enter")
    tmux.wait("a", line_alone("bracketed:^[[200~pasted-text^[[201~"))


def test_the_chats_mouse_reports_are_off_in_the_terminal(srv, tmux):
    """The chat asks for mouse reports (the wheel scrolls it); in the
    shared terminal they are off, so the mouse selects text as in any
    shell, and back in the chat they are on again."""
    def modes():
        return tmux("display-message", "-p", "-t", "a",
                    "#{mouse_standard_flag}#{mouse_sgr_flag}").stdout.strip()

    tmux.open("a", srv, "mouse", "alice", cols=80, rows=24)
    assert modes() == "11"
    enter_term(tmux, "a")
    assert modes() == "00"
    tmux.keys("a", "C-]")
    tmux.wait("a", lambda s: STATUS not in s)
    tmux.wait("a", lambda s: modes() == "11")
