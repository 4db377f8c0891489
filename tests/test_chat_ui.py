"""The full-screen chat as people use it every day, through the real OpenSSH
client in tmux (send-keys, capture-pane): the status line, times and date
lines, command blocks, approvals that say what will run, the line editor's
keys, input history kept by the room across sessions, Tab completion,
bracketed paste, scrolling back through the room's stored history, /help,
/history, /me and /cost.

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_chat_ui.py
"""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import ssh_command
from model_server import Reply, ToolCall
from test_chat import settled, tmux, untimed  # noqa: F401 (fixtures)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="atriumd mounts FUSE: run as root"),
    pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux"),
]


def status_row(tmux, name):
    """The status line: the row above the input line."""
    return tmux.rows(name)[-2]


def input_row(tmux, name):
    return tmux.rows(name)[-1]


def wait_input(tmux, name, text):
    """Until the input line reads exactly text."""
    tmux.wait(name, lambda s: s.rstrip("\n").split("\n")[-1].rstrip() ==
              text)


def wait_cursor(tmux, name, x):
    """Until the cursor is in column x (moving it redraws no text)."""
    end = time.time() + 20
    while tmux.cursor(name)[0] != x:
        assert time.time() < end, "the cursor of %s stayed in column %d, " \
            "not %d" % (name, tmux.cursor(name)[0], x)
        time.sleep(0.05)


def now_hhmm():
    """The minutes a line stamped now may show (the server's zone is
    this process's: the tests start atriumd with its environment)."""
    t = time.time()
    return {time.strftime("%H:%M", time.localtime(t + d))
            for d in (-60, 0, 60)}


@pytest.fixture
def srv(atriumd, data_dir, model_server):
    """test_chat's server, without the per-person rate (--input-rate 0):
    seed() stores a room's history faster than anyone types."""
    env = dict(os.environ, ANTHROPIC_API_KEY="test-key")
    return atriumd(data_dir, "--provider", "anthropic", "--model-url",
                   model_server.url, "--model", "test-model",
                   "--approval", "allow_all", "--input-rate", "0", env=env)


def seed(srv, room, lines, user="alice"):
    """Store chat lines in the room through the protocol."""
    from test_ssh import json_lines
    j = json_lines(srv, room, user)
    try:
        j.expect(lambda l: json.loads(l)["type"] == "welcome")
        for text in lines:
            j.send(json.dumps({"type": "chat", "text": text}) + "\n")
        j.send('{"type":"sync","id":"seeded"}\n')
        j.expect(lambda l: json.loads(l).get("id") == "seeded", timeout=60)
    finally:
        j.close()


# --- the status line, times, blocks, approvals -------------------------------

def test_status_line_times_blocks_and_approval(srv, model_server, tmux):
    model_server.script(
        Reply("Asking first.", tool_calls=[ToolCall("bash", {
            "command": "echo approved-run && sleep 1"})]),
        Reply("It ran."))
    tmux.open("a", srv, "status", "alice", cols=100, rows=30)
    # alice made the room, so she owns it (and may set /policy below):
    # her welcome comes before bob connects, or his hello could reach
    # the starting room first.
    tmux.wait("a", "you are alice")
    tmux.open("b", srv, "status", "bob", cols=100, rows=30)
    # Who is here, the agent idle, the tokens of today.
    tmux.wait("a", "here: ")
    tmux.wait("a", lambda s: "bob" in s.split("\n")[-3] or
              "bob" in status_row(tmux, "a"))
    st = status_row(tmux, "a")
    assert st.startswith("status | here: ") and "alice" in st, st
    assert "agent: idle" in st and "0 tokens today" in st, st
    # Who is typing: bob's unsent line shows on alice's status line.
    tmux.keys("b", "-l", "half a thought")
    tmux.wait("a", lambda s: "bob is typing" in status_row(tmux, "a"))
    tmux.keys("b", "C-u")
    # Times: each line starts with HH:MM, a date line above the first.
    tmux.keys("a", "good morning", "Enter")
    screen = tmux.wait("a", "alice: good morning")
    rows = tmux.rows("a")
    line = next(r for r in rows if r.endswith("alice: good morning"))
    assert line[:5] in now_hhmm() and line[5] == " ", rows
    assert re.fullmatch(r"-- \w+day \d+ \w+ \d{4} --", rows[0]), rows
    assert time.strftime("%Y") in rows[0], rows
    # A command block: its command line, its output under it, how it
    # ended and how long it took.
    tmux.keys("a", "!echo block-out; sleep 0.3; exit 3", "Enter")
    tmux.wait("b", "* exit 3 after ")
    rows = [untimed(r) for r in tmux.rows("b")]
    start = rows.index("> alice $ echo block-out; sleep 0.3; exit 3")
    assert rows[start + 1] == "      block-out", rows
    took = re.fullmatch(r"\* exit 3 after (\d+\.\d+) s", rows[start + 2])
    assert took and float(took.group(1)) >= 0.3, rows
    # An approval says exactly what will run; the status line says the
    # agent waits for it, then runs it.
    tmux.keys("a", "/policy ask", "Enter")
    tmux.wait("a", "set the approval policy to ask")
    tmux.keys("a", "@agent run it", "Enter")
    tmux.wait("b", "approval needed: bash echo approved-run && sleep 1")
    tmux.wait("b", lambda s: "agent: waiting for approval of `echo "
              "approved-run && sleep 1`" in status_row(tmux, "b"))
    tmux.keys("b", "y", "Enter")
    tmux.wait("a", lambda s: "agent: running `echo approved-run && sleep 1`"
              in status_row(tmux, "a"), timeout=10)
    settled(tmux, "a", "agent done")
    st = status_row(tmux, "a")
    assert "agent: idle" in st, st
    tokens = int(re.search(r"(\d+) tokens today", st).group(1))
    assert tokens > 0, st
    rows = [untimed(r) for r in tmux.rows("a")]
    took = [re.fullmatch(r"\* tool ok after (\d+\.\d+) s", r) for r in rows]
    assert any(t and float(t.group(1)) >= 1.0 for t in took), rows
    # /cost asks the room for the same count, in plain integers: today,
    # this month, by model and by person, and the caps.
    tmux.keys("a", "/cost", "Enter")
    screen = tmux.wait("a", "caps: 50 steps per turn")
    # The lines after the first are indented under it.
    rows = [untimed(r).strip() for r in tmux.rows("a")]
    today = next(r for r in rows if r.startswith("today ("))
    got = re.fullmatch(r"today \(\d{4}-\d\d-\d\d, UTC\): (\d+) tokens in, "
                       r"(\d+) out, 2 requests", today)
    assert got and int(got.group(1)) + int(got.group(2)) == tokens, rows
    assert any(re.fullmatch(r"by alice: \d+ in, \d+ out", r)
               for r in rows), rows
    assert "this month (" in screen


# --- the line editor -----------------------------------------------------------

def test_editor_keys(srv, tmux):
    tmux.open("a", srv, "keys", "alice", cols=80, rows=12)
    tmux.keys("a", "-l", "make test now please")
    wait_input(tmux, "a", "keys> make test now please")
    tmux.keys("a", "C-w")
    wait_input(tmux, "a", "keys> make test now")
    tmux.keys("a", "M-b", "M-b")
    wait_cursor(tmux, "a", len("keys> make "))
    tmux.keys("a", "C-k", "BSpace")    # Ctrl-W left "make test now "
    wait_input(tmux, "a", "keys> make")
    tmux.keys("a", "C-a")
    tmux.keys("a", "-l", "sudo ")
    wait_input(tmux, "a", "keys> sudo make")
    tmux.keys("a", "C-a", "M-f")
    wait_cursor(tmux, "a", len("keys> sudo"))
    tmux.keys("a", "C-u", "C-d")
    wait_input(tmux, "a", "keys> make")
    tmux.keys("a", "C-e")
    tmux.keys("a", "-l", " ")
    tmux.keys("a", "C-y")
    wait_input(tmux, "a", "keys> make sudo")
    tmux.keys("a", "Home")
    tmux.keys("a", "-l", "X")
    tmux.keys("a", "End")
    tmux.keys("a", "-l", "Y")
    wait_input(tmux, "a", "keys> Xmake sudoY")
    tmux.keys("a", "Enter")
    tmux.wait("a", "alice: Xmake sudoY")


def test_input_history_survives_a_reconnect(srv, tmux):
    tmux.open("a", srv, "recall", "alice", cols=80, rows=12)
    tmux.keys("a", "the first thing I said", "Enter")
    tmux.wait("a", "alice: the first thing I said")
    tmux.keys("a", "!echo second", "Enter")
    tmux.wait("a", "exit 0")
    tmux.keys("a", "/quit", "Enter")
    tmux.wait("a", "bye")
    tmux("kill-session", "-t", "a")
    # Another user's lines are not in alice's history.
    seed(srv, "recall", ["bob said this"], user="bob")
    tmux.open("a", srv, "recall", "alice", cols=80, rows=12)
    wait_input(tmux, "a", "recall>")
    tmux.keys("a", "Up")
    wait_input(tmux, "a", "recall> !echo second")
    tmux.keys("a", "Up")
    wait_input(tmux, "a", "recall> the first thing I said")
    tmux.keys("a", "Down")
    wait_input(tmux, "a", "recall> !echo second")
    tmux.keys("a", "Down")
    wait_input(tmux, "a", "recall>")


def test_tab_completion(srv, tmux):
    tmux.open("b", srv, "tabs", "bob", cols=80, rows=12)
    tmux.open("a", srv, "tabs", "alice", cols=80, rows=12)
    tmux.wait("a", lambda s: "bob" in status_row(tmux, "a"))
    tmux.keys("a", "-l", "/hi")
    tmux.keys("a", "Tab")
    wait_input(tmux, "a", "tabs> /history")
    tmux.keys("a", "C-u")
    tmux.keys("a", "-l", "/kic")     # "/ki" is /kick or /kill
    tmux.keys("a", "Tab")
    tmux.keys("a", "-l", "b")
    tmux.keys("a", "Tab")
    wait_input(tmux, "a", "tabs> /kick bob")
    # Two fit: the common part, and both listed.
    tmux.keys("a", "C-u")
    tmux.keys("a", "-l", "hey @a")
    tmux.keys("a", "Tab")
    tmux.wait("a", lambda s: re.search(r"\* @agent  @alice", s))
    wait_input(tmux, "a", "tabs> hey @a")
    tmux.keys("a", "-l", "g")
    tmux.keys("a", "Tab")
    wait_input(tmux, "a", "tabs> hey @agent")


def test_tab_completes_every_command_and_its_words(srv, tmux):
    """Completion comes from the table /help is printed from: /caps and
    /mouse complete, and so do the words a command takes."""
    tmux.open("a", srv, "tabwords", "alice", cols=80, rows=24)
    tmux.wait("a", "/help lists the commands")
    for typed, more, want in (("/ca", "s", "/caps steps"),
                              ("/mou", "of", "/mouse off"),
                              ("/pol", "allow_l", "/policy allow_list")):
        tmux.keys("a", "C-u")
        tmux.keys("a", "-l", typed)
        tmux.keys("a", "Tab")
        wait_input(tmux, "a", "tabwords> " + want.split()[0])
        tmux.keys("a", "-l", more)
        tmux.keys("a", "Tab")
        wait_input(tmux, "a", "tabwords> " + want)
    # A command's free argument (a model's name) offers nobody's name.
    tmux.keys("a", "C-u")
    tmux.keys("a", "-l", "/model al")
    tmux.keys("a", "Tab")
    tmux.keys("a", "-l", "x")
    wait_input(tmux, "a", "tabwords> /model alx")


def test_tab_completes_workspace_paths(srv, tmux, ssh_run):
    """Paths after ! are listed by the room through its confined view of
    the workspace: a symlink out of it lists nothing."""
    rc, out, err = ssh_run(srv, "paths", "mkdir -p src && touch src/main.c "
                           "src/util.c README.md && ln -s /etc out")
    assert rc == 0, err
    tmux.open("a", srv, "paths", "alice", cols=80, rows=12)
    tmux.keys("a", "-l", "!cat sr")
    tmux.keys("a", "Tab")
    wait_input(tmux, "a", "paths> !cat src/")
    tmux.keys("a", "-l", "m")
    tmux.keys("a", "Tab")
    wait_input(tmux, "a", "paths> !cat src/main.c")
    tmux.keys("a", "C-u")
    tmux.keys("a", "-l", "!RE")
    tmux.keys("a", "Tab")
    wait_input(tmux, "a", "paths> !README.md")
    # Out of the workspace the room lists nothing.  The chat drops an
    # answer to a line that changed, and shows none that lists nothing:
    # the room's answers are read here, as the chat gets them.
    from test_ssh import json_lines
    j = json_lines(srv, "paths", "alice")
    try:
        j.expect(lambda l: json.loads(l)["type"] == "welcome")
        for n, (path, kind) in enumerate((("out/pass", "completions"),
                                          ("out/", "completions"),
                                          ("../", "error"))):
            j.send(json.dumps({"type": "complete", "id": "n%d" % n,
                               "path": path}) + "\n")
            ans = json.loads(j.expect(
                lambda l: json.loads(l).get("id") == "n%d" % n))
            assert ans["type"] == kind and not ans.get("names"), (path, ans)
    finally:
        j.close()


def test_bracketed_paste_is_one_message(srv, tmux):
    from test_ssh import json_lines
    tmux.open("a", srv, "paste", "alice", cols=80, rows=12)
    j = json_lines(srv, "paste", "bob")
    try:
        j.expect(lambda l: json.loads(l)["type"] == "welcome")
        tmux("set-buffer", "-b", "p", "first pasted\nsecond pasted\nthird")
        tmux("paste-buffer", "-p", "-b", "p", "-t", "a")
        # The pasted lines wait in the input line, breaks shown as arrows.
        wait_input(tmux, "a", "paste> first pasted\u21b5second pasted"
                   "\u21b5third")
        tmux.keys("a", "Enter")
        msg = json.loads(j.expect(lambda l: json.loads(l)["type"] ==
                                  "message"))
        assert msg["text"] == "first pasted\nsecond pasted\nthird", msg
        tmux.wait("a", "alice: first pasted")
        rows = [untimed(r) for r in tmux.rows("a")]
        i = rows.index("alice: first pasted")
        # Its later lines start under its text ("HH:MM alice: ").
        under = " " * len("00:00 alice: ")
        assert rows[i + 1:i + 3] == [under + "second pasted",
                                     under + "third"], rows
    finally:
        j.close()


# --- scrolling back, /help, /history, /me --------------------------------------

def page_key(tmux, name, key):
    """Press key and wait until the screen shows its page: the next key
    then moves from that page, and no page goes unseen."""
    before = tmux.rows(name)
    tmux.keys(name, key)
    tmux.wait(name, lambda s: tmux.rows(name) != before)


def test_pgup_loads_older_stored_lines(srv, tmux):
    seed(srv, "scroll", ["stored line %03d" % i for i in range(1, 161)])
    tmux.open("a", srv, "scroll", "alice", cols=80, rows=20)
    tmux.wait("a", "stored line 160")
    screen = tmux.screen("a", history=True)
    # Joining replays the recent lines only.
    assert "stored line 010" not in screen
    for _ in range(40):
        if "stored line 010" in tmux.screen("a"):
            break
        page_key(tmux, "a", "PPage")
    rows = tmux.rows("a")
    assert any(untimed(r) == "alice: stored line 010" for r in rows), rows
    assert "End returns" in rows[-2], rows
    # In order, none missing, none twice, on the way back down.
    seen = []
    for _ in range(60):
        for r in tmux.rows("a")[:-2]:
            m = re.fullmatch(r"alice: stored line (\d+)", untimed(r))
            if m and int(m.group(1)) not in seen:
                seen.append(int(m.group(1)))
        if "End returns" not in tmux.rows("a")[-2]:
            break
        page_key(tmux, "a", "NPage")
    assert seen == sorted(seen) and seen[-1] == 160, seen
    assert seen == list(range(seen[0], 161)), seen
    rows = tmux.rows("a")
    assert rows[-1] == "scroll>" and "PgDn" not in rows[-2], rows
    # Back at the bottom, live lines show as usual.
    tmux.keys("a", "back at the end", "Enter")
    tmux.wait("a", "alice: back at the end")


def test_help_table_history_search_and_me(srv, tmux):
    seed(srv, "search", ["alpha one", "beta two", "the Alpha three"])
    tmux.open("a", srv, "search", "alice", cols=80, rows=50)
    tmux.keys("a", "/help", "Enter")
    tmux.wait("a", "Ctrl-L draws")
    rows = tmux.rows("a")
    start = next(i for i, r in enumerate(rows) if r.endswith("* commands:"))
    end = next(i for i, r in enumerate(rows) if r.strip() == "keys:")
    table = rows[start + 1:end]
    # One command a line, each within the width, every command there.
    assert all(len(r) <= 80 and r.startswith("      ") for r in table), \
        [r for r in table if len(r) > 80 or not r.startswith("      ")]
    for cmd in ("/me", "/who", "/history", "/cost", "/term", "/quit",
                "/approve", "/deny", "/policy", "/model", "/invite",
                "/kick", "/private", "/stop", "/caps", "!CMD", "@agent",
                "/mouse"):
        words = [[w.rstrip(",") for w in r.split()[:2]] for r in table]
        assert sum(1 for w in words if cmd in w) == 1, (cmd, table)
    tmux.keys("a", "C-l")
    tmux.keys("a", "/history alpha", "Enter")
    tmux.wait("a", 'events of the room\'s history hold "alpha"')
    coloured = tmux.screen("a", escapes=True)
    # The match in reverse video, and only the match.
    assert re.search(r"\x1b\[7malpha(\x1b\[[0-9;]*m)+ one", coloured), coloured
    assert re.search(r"the \x1b\[7mAlpha(\x1b\[[0-9;]*m)+ three", coloured), \
        coloured
    rows = [untimed(r) for r in tmux.rows("a")]
    assert any(r.startswith('* 2 events of the room\'s history hold "alpha"')
               for r in rows), rows
    assert "alice: beta two" not in rows[rows.index("* 2 events of the "
                                                    "room's history hold "
                                                    "\"alpha\" (the latest "
                                                    "30 at most)") - 2:], rows
    tmux.keys("a", "/history nowhere-to-be-found", "Enter")
    tmux.wait("a", 'no event of the room\'s history holds '
              '"nowhere-to-be-found"')
    tmux.keys("a", "/me waves", "Enter")
    tmux.wait("a", "* alice waves")


def mouse_modes(tmux, name):
    """What the pane's terminal was asked for: (button reports, SGR)."""
    out = tmux("display-message", "-p", "-t", name,
               "#{mouse_standard_flag} #{mouse_sgr_flag}").stdout.split()
    return tuple(int(x) for x in out)


def sgr_mouse(tmux, name, report):
    """The bytes a terminal sends for a mouse event: ESC [ < report."""
    data = ("\x1b[<" + report).encode()
    tmux("send-keys", "-t", name, "-H", *("%02x" % b for b in data))


def stored_rows(tmux, name):
    """The numbers of the stored lines on the screen, top to bottom."""
    return [int(m.group(1)) for m in
            (re.fullmatch(r"alice: stored line (\d+)", untimed(r))
             for r in tmux.rows(name)) if m]


def test_mouse_wheel_scrolls_back(srv, tmux):
    """The chat asks for SGR mouse reports: wheel up shows older lines 3 at
    a time, wheel down comes back, a click types nothing; /mouse off hands
    the mouse back to the terminal, and /quit leaves it as it was."""
    seed(srv, "wheel", ["stored line %03d" % i for i in range(1, 41)])
    tmux.open("a", srv, "wheel", "alice", cols=80, rows=20)
    tmux.wait("a", "stored line 040")
    assert mouse_modes(tmux, "a") == (1, 1)
    assert stored_rows(tmux, "a")[-1] == 40
    sgr_mouse(tmux, "a", "0;5;5M")      # a click and its release
    sgr_mouse(tmux, "a", "0;5;5m")
    sgr_mouse(tmux, "a", "64;5;5M")     # wheel up
    tmux.wait("a", lambda s: "End returns" in s and
              stored_rows(tmux, "a")[-1] < 40)
    first = stored_rows(tmux, "a")
    sgr_mouse(tmux, "a", "64;5;5M")     # 3 lines further back
    tmux.wait("a", lambda s: stored_rows(tmux, "a")[-1] == first[-1] - 3)
    assert stored_rows(tmux, "a")[0] == first[0] - 3
    assert input_row(tmux, "a") == "wheel>", tmux.rows("a")
    sgr_mouse(tmux, "a", "65;5;5M")     # wheel down
    sgr_mouse(tmux, "a", "65;5;5M")
    tmux.wait("a", lambda s: "End returns" not in s and
              stored_rows(tmux, "a")[-1] == 40)
    tmux.keys("a", "/mouse off", "Enter")
    tmux.wait("a", "mouse off: the terminal keeps the mouse")
    assert mouse_modes(tmux, "a") == (0, 0)
    tmux.keys("a", "/mouse on", "Enter")
    tmux.wait("a", "mouse on: the wheel scrolls the chat")
    assert mouse_modes(tmux, "a") == (1, 1)
    tmux.keys("a", "/quit", "Enter")
    tmux.wait("a", "bye")
    assert mouse_modes(tmux, "a") == (0, 0)


def test_typing_clears_while_the_room_is_quiet(srv, tmux):
    """"bob is typing" goes from alice's status line once bob stopped,
    though nothing else happens in the room to redraw it."""
    tmux.open("a", srv, "quiet", "alice", cols=80, rows=12)
    tmux.open("b", srv, "quiet", "bob", cols=80, rows=12)
    tmux.wait("a", lambda s: "bob" in status_row(tmux, "a"))
    tmux.keys("b", "-l", "half a thought")
    tmux.wait("a", lambda s: "bob is typing" in status_row(tmux, "a"))
    tmux.wait("a", lambda s: "typing" not in status_row(tmux, "a"),
              timeout=30)
    assert input_row(tmux, "b") == "quiet> half a thought"


# --- kick and remove -----------------------------------------------------------

def pane_dead(tmux, name, timeout=20):
    """Wait until the pane's ssh has ended."""
    end = time.time() + timeout
    while tmux("display-message", "-p", "-t", name,
               "#{pane_dead}").stdout.strip() != "1":
        assert time.time() < end, tmux.screen(name)
        time.sleep(0.05)


@pytest.mark.parametrize("cols,rows", [(80, 24), (120, 35)])
def test_kick_sends_out_with_a_goodbye_below_the_chat(srv, tmux, cols, rows):
    """/kick ends bob's chat for a while; his last screen ends with the
    goodbye on a line of its own, not after his half-typed input line;
    /remove is the membership's end, a command of its own."""
    tmux.open("a", srv, "kicks", "alice", cols=cols, rows=rows)
    tmux.wait("a", "alice owns the room")
    tmux.open("b", srv, "kicks", "bob", cols=cols, rows=rows,
              under_shell=True)
    tmux.wait("a", lambda s: "bob" in status_row(tmux, "a"))
    tmux.keys("b", "-l", "half typed")
    wait_input(tmux, "b", "kicks> half typed")
    tmux.keys("a", "/kick bob cool off", "Enter")
    tmux.wait("a", "* alice kicked bob (out for 5 minutes: cool off)")
    tmux.wait("a", "* bob left")
    pane_dead(tmux, "b")
    screen = tmux.screen("b")
    rows_b = [r for r in screen.split("\n") if r.strip()]
    bye = [i for i, r in enumerate(rows_b) if "kicked you" in r]
    assert bye and rows_b[bye[0]].startswith(
        "atrium: alice kicked you from room 'kicks' (cool off); you may "
        "come back in 5 minutes"[:cols]), rows_b
    # Nothing of the chat's bottom under or before it.
    assert not any("half typed" in r for r in rows_b), rows_b
    assert not any(r.startswith("kicks |") for r in rows_b), rows_b
    # The membership is /remove's, and Tab knows the command.
    tmux.keys("a", "/invite carol", "Enter")
    tmux.wait("a", "* alice invited carol")
    tmux.keys("a", "-l", "/rem")
    tmux.keys("a", "Tab")
    tmux.keys("a", "-l", "carol")
    wait_input(tmux, "a", "kicks> /remove carol")
    tmux.keys("a", "Enter")
    tmux.wait("a", "* alice removed carol; room: open, owner alice, "
              "members none")


# --- the server stopping -------------------------------------------------------

@pytest.mark.parametrize("cols,rows", [(80, 24), (120, 35)])
def test_a_server_restart_says_so(srv, tmux, cols, rows):
    """SIGTERM to atriumd: the chat says the server is restarting or
    shutting down, on a line of its own below the chat, and a running
    `ssh ROOM@host CMD` gets the same line on stderr, not only the
    client's "Connection to ... closed by remote host"."""
    tmux.open("a", srv, "going", "alice", cols=cols, rows=rows,
              under_shell=True)
    tmux.wait("a", "alice owns the room")
    tmux.keys("a", "-l", "half typed")
    wait_input(tmux, "a", "going> half typed")
    p = subprocess.Popen(ssh_command(srv, "going", "echo started; sleep 60"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout.readline() == "started\n"
        srv.stop()
        p.wait(15)
        err = p.stderr.read()
        assert p.returncode != 0
        assert "atrium: the server is restarting or shutting down; connect " \
            "again in a moment" in err, err
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    pane_dead(tmux, "a")
    screen = tmux.screen("a")
    rows_a = [r for r in screen.split("\n") if r.strip()]
    bye = [i for i, r in enumerate(rows_a) if "the server is restarting" in r]
    assert bye and rows_a[bye[0]].startswith("atrium: the server is "
                                             "restarting"), rows_a
    assert not any("half typed" in r for r in rows_a), rows_a
    assert not any("reconnecting" in r for r in rows_a), rows_a
