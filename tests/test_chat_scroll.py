"""Scrolling back through a room's history in the full-screen chat, as
people do it with the keyboard, through the real OpenSSH client in tmux at
80x24 and 120x35: PgUp from a new session reaches the room's very first
line, and only that view says so; every view is full, also where a line
wraps over the view's edge; PgDn walks back down with no line skipped;
End and a sent line return to the live view; lines that arrive meanwhile
are counted as "N new lines below"; /help longer than the screen shows its
first line and pages with PgDn.

Run as root after `make all`: /usr/bin/python3 -m pytest -q
tests/test_chat_scroll.py
"""
import os
import re
import shutil

import pytest

from test_chat import tmux, untimed  # noqa: F401 (fixtures)
from test_chat_ui import seed, srv, status_row  # noqa: F401

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="atriumd mounts FUSE: run as root"),
    pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux"),
]

SIZES = [(80, 24), (120, 35)]
STORED = re.compile(r"alice: stored line (\d+)")


def stored_text(i):
    """Every seventh line wraps over two or three rows at both widths."""
    text = "stored line %03d" % i
    return text + " and more" * 20 if i % 7 == 0 else text


def view(tmux, name):
    """The rows above the status line, all of them (blank ones too)."""
    rows = [r.rstrip() for r in tmux.screen(name).split("\n")]
    return rows[:tmux_height(tmux, name) - 2]


def tmux_height(tmux, name):
    return int(tmux("display-message", "-p", "-t", name,
                    "#{pane_height}").stdout)


def page_key(tmux, name, key):
    """Press key and wait for the page it shows, drawn whole (its input
    line, the last thing drawn, in the screen's last row)."""
    before = tmux.screen(name)
    tmux.keys(name, key)
    tmux.wait(name, lambda s: s != before and
              re.match(r"[a-z]+>", s.rstrip("\n").split("\n")[-1]) and
              len(s.rstrip("\n").split("\n")) == tmux_height(tmux, name))


def numbers(rows):
    """The stored lines whose first row is among rows, top to bottom."""
    return [int(m.group(1)) for m in
            (STORED.match(untimed(r)) for r in rows) if m]


def at_first_line(rows):
    """The view starts where the room does: its date line, then the
    room's first event."""
    return rows[0].startswith("-- ") and \
        untimed(rows[1]).startswith("* alice owns the room")


def assert_full(rows):
    assert all(r.strip() for r in rows), "a blank row in the view:\n" + \
        "\n".join(rows)


@pytest.mark.parametrize("cols,height", SIZES)
def test_pgup_reaches_the_first_line_and_pgdn_comes_back(srv, tmux, cols,
                                                         height):
    seed(srv, "scroll", [stored_text(i) for i in range(1, 161)])
    tmux.open("a", srv, "scroll", "alice", cols=cols, rows=height)
    tmux.wait("a", "stored line 160")
    assert "stored line 010" not in tmux.screen("a", history=True)
    # Up by keys alone, until the room's first line is at the top.
    for _ in range(60):
        rows = view(tmux, "a")
        if at_first_line(rows):
            break
        assert_full(rows)
        assert "first line" not in status_row(tmux, "a"), rows
        page_key(tmux, "a", "PPage")
    else:
        pytest.fail("PgUp did not reach the room's first line")
    tmux.wait("a", lambda s: "the room's first line, End returns" in
              status_row(tmux, "a"))
    assert_full(view(tmux, "a"))
    assert numbers(view(tmux, "a"))[0] == 1
    # Further PgUp changes nothing.
    before = tmux.screen("a")
    tmux.keys("a", "PPage")
    tmux.keys("a", "C-l")       # a frame that would show any change
    tmux.wait("a", lambda s: "first line" in status_row(tmux, "a"))
    assert tmux.screen("a") == before
    # Down again: every line once, in order, none skipped, views full.
    seen = numbers(view(tmux, "a"))
    while "End returns" in status_row(tmux, "a"):
        page_key(tmux, "a", "NPage")
        rows = view(tmux, "a")
        got = numbers(rows)
        assert "first line" not in status_row(tmux, "a")
        if "End returns" in status_row(tmux, "a"):
            assert_full(rows)
        # One date: its line is the room's first, not repeated where
        # one load of older lines meets the next.
        assert not any(r.startswith("-- ") for r in rows), rows
        new = [n for n in got if n > seen[-1]]
        assert not new or new[0] == seen[-1] + 1, (seen[-1], rows)
        seen += new
    assert seen == list(range(1, 161)), seen
    assert tmux.rows("a")[-1] == "scroll>"


def test_a_line_sent_while_scrolled_back_shows_live(srv, tmux):
    seed(srv, "sent", [stored_text(i) for i in range(1, 81)])
    tmux.open("a", srv, "sent", "alice", cols=80, rows=24)
    tmux.wait("a", "stored line 080")
    page_key(tmux, "a", "PPage")
    page_key(tmux, "a", "PPage")
    assert "stored line 080" not in tmux.screen("a")
    tmux.keys("a", "back to the present", "Enter")
    tmux.wait("a", lambda s: any(untimed(r) == "alice: back to the present"
                                 for r in tmux.rows("a")))
    assert "End returns" not in status_row(tmux, "a")
    tmux.keys("a", "/who", "Enter")
    tmux.wait("a", lambda s: [untimed(r).split()[:2] for r in
                              tmux.rows("a")[-4:-2]] ==
              [["*", "here"], ["alice", "active"]])


@pytest.mark.parametrize("cols,height", SIZES)
def test_end_returns_to_the_live_view(srv, tmux, cols, height):
    seed(srv, "end", [stored_text(i) for i in range(1, 81)])
    tmux.open("a", srv, "end", "alice", cols=cols, rows=height)
    tmux.wait("a", "stored line 080")
    live = tmux.screen("a")
    page_key(tmux, "a", "PPage")
    page_key(tmux, "a", "PPage")
    assert "scrolled back, End returns" in status_row(tmux, "a")
    tmux.keys("a", "End")
    tmux.wait("a", lambda s: s == live)


@pytest.mark.parametrize("cols,height", SIZES)
def test_new_lines_below_are_counted(srv, tmux, cols, height):
    seed(srv, "news", ["stored line %03d" % i for i in range(1, 81)])
    tmux.open("b", srv, "news", "bob", cols=120, rows=35)
    tmux.open("a", srv, "news", "alice", cols=cols, rows=height)
    tmux.wait("a", "stored line 080")
    tmux.wait("b", "alice joined")
    page_key(tmux, "a", "PPage")
    top = view(tmux, "a")
    page = height - 4          # rows one PgUp or PgDn moves
    for i in range(1, 4):
        tmux.keys("=b:", "news %02d" % i, "Enter")
    tmux.wait("a", lambda s: "3 new lines below, End returns" in
              status_row(tmux, "a"))
    assert view(tmux, "a") == top, "the view moved"
    for i in range(4, page + 6):
        tmux.keys("=b:", "news %02d" % i, "Enter")
    sent = page + 5
    tmux.wait("a", lambda s: "%d new lines below" % sent in
              status_row(tmux, "a"))
    assert view(tmux, "a") == top, "the view moved"
    # Down: the count is of the new lines still below the view.
    while "End returns" in status_row(tmux, "a"):
        page_key(tmux, "a", "NPage")
        shown = [int(m.group(1)) for m in
                 (re.match(r"bob: news (\d+)", untimed(r))
                  for r in view(tmux, "a")) if m]
        below = sent - (shown[-1] if shown else 0)
        status = status_row(tmux, "a")
        if below:
            assert "%d new line%s below" % (below, "" if below == 1 else
                                            "s") in status, (shown, status)
        else:
            assert "new line" not in status, (shown, status)
    assert any(untimed(r) == "bob: news %02d" % sent
               for r in tmux.rows("a")), tmux.rows("a")
    # Seen lines are no longer new: the next count starts again.
    page_key(tmux, "a", "PPage")
    tmux.keys("=b:", "one more", "Enter")
    tmux.wait("a", lambda s: "1 new line below, End returns" in
              status_row(tmux, "a"))


def test_a_resize_keeps_the_view_scrolled_back_and_full(srv, tmux):
    seed(srv, "sized", [stored_text(i) for i in range(1, 81)])
    tmux.open("a", srv, "sized", "alice", cols=120, rows=35)
    tmux.wait("a", "stored line 080")
    page_key(tmux, "a", "PPage")
    for cols, height in ((80, 24), (50, 20), (120, 35)):
        tmux("resize-window", "-t", "a", "-x", str(cols), "-y", str(height))
        tmux.wait("a", lambda s: len(s.rstrip("\n").split("\n")) ==
                  height and "End returns" in status_row(tmux, "a") and
                  all(len(r) <= cols for r in s.split("\n")))
        tmux.keys("a", "C-l")
        tmux.wait("a", lambda s: s.rstrip("\n").split("\n")[-1] ==
                  "sized>")
        assert_full(view(tmux, "a"))
    tmux.keys("a", "End")
    tmux.wait("a", lambda s: "End returns" not in status_row(tmux, "a")
              and "stored line 080" in s)


def test_loaded_history_stays_while_the_room_talks(srv, tmux):
    """More output than the screen's recent lines hold (32 KiB) arrives
    while alice reads the room's first lines: her view stays there, and
    nothing between the loaded lines and the new ones is lost."""
    seed(srv, "busy", [stored_text(i) for i in range(1, 161)])
    tmux.open("b", srv, "busy", "bob", cols=120, rows=35)
    tmux.open("a", srv, "busy", "alice", cols=80, rows=24)
    tmux.wait("a", "stored line 160")
    for _ in range(60):
        if at_first_line(view(tmux, "a")):
            break
        page_key(tmux, "a", "PPage")
    tmux.wait("a", lambda s: "first line" in status_row(tmux, "a"))
    top = view(tmux, "a")
    tmux.keys("=b:", "!seq -f 'busy output %05g' 1 1500", "Enter")
    tmux.wait("b", lambda s: "exit 0" in s or "* ok" in s or
              "busy output 01500" in s, timeout=60)
    tmux.keys("a", "C-l")
    tmux.wait("a", lambda s: "first line" in status_row(tmux, "a"))
    assert view(tmux, "a") == top
    # Down from the top: the stored lines, then the output, none lost.
    seen, outs = numbers(view(tmux, "a")), []
    while "End returns" in status_row(tmux, "a") and \
            "busy output 00100" not in tmux.screen("a"):
        page_key(tmux, "a", "NPage")
        seen += [n for n in numbers(view(tmux, "a")) if n > seen[-1]]
    assert seen == list(range(1, 161)), seen
    outs = [int(m.group(1)) for m in (re.search(r"busy output (\d+)", r)
                                      for r in view(tmux, "a")) if m]
    assert outs == list(range(outs[0], outs[-1] + 1)) and outs[0] < 100, \
        view(tmux, "a")


@pytest.mark.parametrize("cols,height", SIZES)
def test_help_shows_its_first_line_and_pages(srv, tmux, cols, height):
    tmux.open("a", srv, "helpful", "alice", cols=cols, rows=height)
    tmux.wait("a", "alice joined")
    tmux.keys("a", "/help", "Enter")
    tmux.wait("a", lambda s: "new lines below" in status_row(tmux, "a"))
    rows = view(tmux, "a")
    assert untimed(rows[0]) == "* commands:", rows
    assert_full(rows)
    assert "Ctrl-L draws" not in tmux.screen("a")
    seen = [untimed(r) for r in rows]
    while "End returns" in status_row(tmux, "a"):
        page_key(tmux, "a", "NPage")
        rows = [untimed(r) for r in view(tmux, "a")]
        # Two rows of the last page stay in sight.
        assert rows[:2] == seen[-2:] or "End returns" not in \
            status_row(tmux, "a"), (seen[-2:], rows)
        seen += rows[rows.index(seen[-1]) + 1:]
    assert seen[-1].endswith("Ctrl-L draws the screen again"), seen
    assert "/quit" in "\n".join(seen)
