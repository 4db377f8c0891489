"""Text people can read in the terminal chat, through the real OpenSSH
client in tmux at 80x24 and 120x35: long lines wrap at words with later
rows under the text (not at column 0), blank lines between paragraphs
stay, the agent's light Markdown is drawn (bold, italics, code, a fenced
block indented and dim under its language, lists, headings) without its
markers, the agent's name has a colour of its own, and escape sequences or
control bytes in a model's text never reach a terminal.

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_chat_text.py
"""
import os
import re
import shutil

import pytest

from model_server import Reply
from test_chat import settled, tmux, untimed  # noqa: F401 (fixtures)
from test_chat_ui import srv  # noqa: F401 (fixture)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="atriumd mounts FUSE: run as root"),
    pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux"),
]

SIZES = [(80, 24), (120, 35)]

PARAGRAPH_1 = (
    "Undo takes back the last change the agent made to the workspace, "
    "and a preview lists every file it touches before anything moves; "
    "nothing is lost, because redo brings the change back again whenever "
    "you ask for it, for as long as the room keeps its checkpoints.")
PARAGRAPH_2 = (
    "Checkpoints are taken before each of the agent's turns, so the "
    "history reads like a list of what was asked and what was done.")

MARKDOWN = "\n".join([
    "# Getting started",
    "",
    "This is **really important** and *quite subtle*, see `make check`.",
    "",
    "- first item",
    "- second item",
    "1. numbered one",
    "",
    "```sh",
    "echo fenced-code",
    "```",
    "After the block.",
])

# ESC [ 2 J (erase the screen), BEL, a C1 CSI (U+009B) and a title-setting
# OSC, in Markdown's places too (bold, code, a fence's language and
# code): none of it may reach a terminal.
HOSTILE = ("**safe-start** \x1b[2J\x07 middle `\u009b31m` \x1b]0;pwned\x07"
           "safe-end\n```sh\x1b[31m\necho \x1b[5ncode\x07-row\n```")

TIME = r"\d\d:\d\d "


def answer_rows(tmux, name, first, last):
    """The visible rows from the one holding first to the one holding
    last."""
    rows = tmux.rows(name)
    start = next(i for i, r in enumerate(rows) if first in r)
    end = next(i for i in range(start, len(rows)) if last in rows[i])
    return rows[start:end + 1]


def escaped_row(tmux, name, text):
    """The visible row holding text, with tmux's attribute escapes."""
    return next(r for r in tmux.screen(name, escapes=True).split("\n")
                if text in re.sub(r"\x1b\[[0-9;]*m", "", r))


def attrs_before(row, text):
    """The SGR parameters in effect where text starts in an escaped row
    (tmux writes each change as its own sequence, 0 resets)."""
    on = set()
    plain = ""
    for part in re.split(r"(\x1b\[[0-9;]*m)", row):
        if part.startswith("\x1b["):
            for p in part[2:-1].split(";"):
                if p in ("", "0"):
                    on.clear()
                else:
                    on.add(p)
            continue
        if text in plain + part:
            return on
        plain += part
    raise AssertionError("%r not in %r" % (text, row))


def check_hanging(rows, head, text):
    """rows show text after head, wrapped at words, every later row
    starting under the text."""
    assert re.match(TIME + re.escape(head), rows[0]), rows
    indent = len(re.match(TIME + re.escape(head), rows[0]).group(0))
    for r in rows[1:]:
        assert r[:indent].strip() == "" and r[indent] != " ", (indent, rows)
    words = " ".join([rows[0][indent:]] + [r[indent:] for r in rows[1:]])
    assert words.split() == text.split(), rows
    assert len(rows) > 1, rows


@pytest.mark.parametrize("cols,lines", SIZES)
def test_paragraphs_wrap_at_words_under_the_text(srv, model_server, tmux,
                                                 cols, lines):
    model_server.script(Reply(PARAGRAPH_1 + "\n\n" + PARAGRAPH_2))
    tmux.open("a", srv, "wrap", "alice", cols=cols, rows=lines)
    tmux.keys("a", "@agent explain undo", "Enter")
    settled(tmux, "a", "agent done")
    rows = answer_rows(tmux, "a", "agent: Undo", "what was done")
    blank = rows.index("")
    # The paragraphs keep the blank line between them; each wraps at
    # words, its later rows under its text.
    check_hanging(rows[:blank], "agent: ", PARAGRAPH_1)
    second = rows[blank + 1:]
    indent = len(re.match(TIME + "agent: ", rows[0]).group(0))
    assert second[0].startswith(" " * indent + "Checkpoints"), rows
    assert " ".join(r.strip() for r in second).split() == \
        PARAGRAPH_2.split(), rows
    # A person's long line wraps the same way under the person's text.
    line = "people " + " ".join(PARAGRAPH_2.split()[:30])
    tmux.keys("a", "-l", line)
    tmux.keys("a", "Enter")
    settled(tmux, "a", "alice: people")
    check_hanging(answer_rows(tmux, "a", "alice: people", "what was done"),
                  "alice: ", line)


@pytest.mark.parametrize("cols,lines", SIZES)
def test_markdown_is_drawn_without_its_markers(srv, model_server, tmux,
                                               cols, lines):
    model_server.script(Reply(MARKDOWN))
    tmux.open("a", srv, "md", "alice", cols=cols, rows=lines)
    tmux.keys("a", "@agent show markdown", "Enter")
    settled(tmux, "a", "agent done")
    rows = [untimed(r) for r in answer_rows(tmux, "a", "Getting started",
                                            "After the block")]
    text = "\n".join(rows)
    for marker in ("**", "`", "# ", "- first", "*quite"):
        assert marker not in text, rows
    # Later lines start under the text: past "HH:MM agent: ".
    indent = len("00:00 agent: ")
    assert rows[0] == "agent: Getting started", rows
    assert rows[1] == "", rows
    assert rows[2] == " " * indent + ("This is really important and quite "
                                      "subtle, see make check."), rows
    assert rows[4] == " " * indent + "• first item", rows
    assert rows[5] == " " * indent + "• second item", rows
    assert rows[6] == " " * indent + "1. numbered one", rows
    # The fence: the language, then the code, both four columns further
    # in; no row for the closing fence.
    assert rows[8] == " " * (indent + 4) + "── sh", rows
    assert rows[9] == " " * (indent + 4) + "echo fenced-code", rows
    assert rows[10] == " " * indent + "After the block.", rows
    # Attributes: the heading bold, bold and italics, code in a colour,
    # the fence dim, the agent's name magenta (not red).
    assert "1" in attrs_before(escaped_row(tmux, "a", "Getting started"),
                               "Getting")
    row = escaped_row(tmux, "a", "really important")
    assert "1" in attrs_before(row, "really important"), repr(row)
    assert "1" not in attrs_before(row, "This is"), repr(row)
    assert "3" in attrs_before(row, "quite subtle"), repr(row)
    assert "36" in attrs_before(row, "make check"), repr(row)
    assert "2" in attrs_before(escaped_row(tmux, "a", "── sh"), "── sh")
    assert "2" in attrs_before(escaped_row(tmux, "a", "echo fenced-code"),
                               "echo fenced-code")
    name = attrs_before(escaped_row(tmux, "a", "Getting started"), "agent:")
    assert "35" in name and "31" not in name, name
    # Someone joining later sees the stored answer drawn the same way.
    tmux.open("b", srv, "md", "bob", cols=cols, rows=lines)
    tmux.wait("b", "After the block.")
    assert [untimed(r) for r in answer_rows(
        tmux, "b", "Getting started", "After the block")] == rows


@pytest.mark.parametrize("cols,lines", SIZES)
def test_model_text_sends_no_escape_to_the_terminal(srv, model_server, tmux,
                                                    cols, lines):
    model_server.script(Reply(HOSTILE))
    tmux.open("a", srv, "hostile", "alice", cols=cols, rows=lines)
    tmux.keys("a", "before the answer", "Enter")
    tmux.wait("a", "alice: before the answer")
    tmux.keys("a", "@agent say something odd", "Enter")
    settled(tmux, "a", "agent done")
    screen = tmux.screen("a")
    # The screen was not erased, the bell did not ring, the title is
    # unchanged; the text around the bytes is there, without them.
    assert "alice: before the answer" in screen, screen
    rows = [untimed(r) for r in answer_rows(tmux, "a", "safe-start",
                                            "-row")]
    indent = " " * len("00:00 agent:     ")
    assert rows == ["agent: safe-start [2J middle 31m ]0;pwnedsafe-end",
                    indent + "── sh[31m",
                    indent + "echo [5ncode-row"], rows
    screen = tmux.screen("a", escapes=True)
    assert not re.search(r"[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f]",
                         screen), repr(screen)
    flags = tmux("display-message", "-p", "-t", "a",
                 "#{window_bell_flag} #{pane_title}").stdout.split()
    assert flags[0] == "0" and "pwned" not in " ".join(flags), flags


def test_resize_wraps_again_and_people_write_markdown(srv, model_server,
                                                      tmux):
    """The lines are kept whole: a narrower window wraps them again under
    their text.  A person's message is Markdown too, drawn so in the
    other member's window."""
    model_server.script(Reply(PARAGRAPH_1))
    tmux.open("a", srv, "resize", "alice", cols=120, rows=35)
    tmux.open("b", srv, "resize", "bob", cols=80, rows=24)
    tmux.keys("a", "@agent explain undo", "Enter")
    settled(tmux, "a", "agent done")
    tmux.keys("a", "-l", "a **bold** claim, `make check` and _why_")
    tmux.keys("a", "Enter")
    tmux.wait("b", "alice: a bold claim, make check and why")
    row = escaped_row(tmux, "b", "alice: a bold claim")
    assert "1" in attrs_before(row, "bold"), repr(row)
    assert "1" not in attrs_before(row, "claim,"), repr(row)
    assert "36" in attrs_before(row, "make check"), repr(row)
    assert "3" in attrs_before(row, "why"), repr(row)
    tmux("resize-window", "-t", "a", "-x", "60", "-y", "35")

    def rewrapped(screen):
        """The answer drawn again for 60 columns (tmux's own reflow of
        the old rows, before the chat's redraw, is not)."""
        try:
            rows = answer_rows(tmux, "a", "agent: Undo", "checkpoints.")
        except StopIteration:       # cleared, not yet drawn again
            return False
        return len(rows) > 1 and all(
            r.startswith(" " * 13) and r[13] != " " for r in rows[1:])
    tmux.wait("a", rewrapped)
    check_hanging(answer_rows(tmux, "a", "agent: Undo", "checkpoints."),
                  "agent: ", PARAGRAPH_1)
    assert all(len(r) <= 60 for r in tmux.rows("a")), tmux.rows("a")


@pytest.mark.parametrize("cols,lines", SIZES)
def test_answer_taller_than_the_screen(srv, model_server, tmux, cols,
                                       lines):
    """One paragraph of several screens: its first rows scroll up as it
    streams, every word is there once, in order, every row but the first
    under the text."""
    words = ["w%03d" % i for i in range(900)]
    model_server.script(Reply(" ".join(words)))
    tmux.open("a", srv, "tall", "alice", cols=cols, rows=lines)
    tmux.keys("a", "@agent talk at length", "Enter")
    screen = settled(tmux, "a", "agent done")
    rows = screen.split("\n")
    start = next(i for i, r in enumerate(rows) if "agent: w000" in r)
    end = next(i for i in range(start, len(rows)) if "w899" in rows[i])
    rows = rows[start:end + 1]
    assert re.match(TIME + "agent: w000", rows[0]), rows
    assert all(r.startswith(" " * 13 + "w") for r in rows[1:]), rows
    assert " ".join(r[13:] for r in rows).split() == words, rows
    assert all(len(r) <= cols for r in rows), rows


RICH = "\n".join([
    "Read [the guide](https://example.org/guide) or https://example.org/faq,",
    "see ![the logo](logo.png) and ~~the old way~~ the new one.",
    "",
    "3. third step",
    "4. fourth step",
    "   - a detail",
    "     1. deeper still",
    "5. fifth step",
    "",
    "| Command | What it does | Who may run it |",
    "|:--|:--|--:|",
    "| /undo | takes back the agent's last change to the files | anyone |",
    "| /restore NAME | puts the workspace back to a named snapshot | the owner |",
    "",
    "Done.",
])


@pytest.mark.parametrize("cols,lines", SIZES)
def test_links_lists_tables_and_strikethrough(srv, model_server, tmux, cols,
                                              lines):
    """Links show their url dim after the text; a list keeps its own
    numbers and a nested list indents under its item; a table is aligned
    when it fits the window (120 columns), else each row reads as
    "header: value" lines (80); struck text has the strike attribute."""
    model_server.script(Reply(RICH))
    tmux.open("a", srv, "rich", "alice", cols=cols, rows=lines)
    tmux.keys("a", "@agent show it all", "Enter")
    settled(tmux, "a", "agent done")
    rows = [untimed(r).rstrip() for r in answer_rows(tmux, "a", "Read",
                                                       "Done.")]
    text = "\n".join(rows)
    for raw in ("](", "![", "~~", "|:--", "| /undo"):
        assert raw not in text, rows
    words = " ".join(text.split())
    assert ("Read the guide (https://example.org/guide) or "
            "https://example.org/faq, see [image: the logo] (logo.png) and "
            "the old way the new one.") in words, rows
    pad = " " * len("00:00 agent: ")
    start = next(i for i, r in enumerate(rows) if "third step" in r)
    assert rows[start:start + 5] == [
        pad + "3. third step",
        pad + "4. fourth step",
        pad + "   • a detail",
        pad + "     1. deeper still",
        pad + "5. fifth step"], rows
    if cols >= 120:
        head = next(r for r in rows if "Command" in r)
        undo = next(r for r in rows if "/undo" in r)
        restore = next(r for r in rows if "/restore" in r)
        # Columns line up; the last is aligned right.
        bars = [i for i, c in enumerate(head) if c == "│"]
        assert len(bars) == 2, rows
        assert [i for i, c in enumerate(undo) if c == "│"] == bars, rows
        assert [i for i, c in enumerate(restore) if c == "│"] == bars, rows
        assert head.index("What it does") == undo.index("takes back") == \
            restore.index("puts the"), rows
        assert len(undo) == len(restore) == len(head), rows
        assert undo.endswith("anyone") and restore.endswith("the owner")
        row = escaped_row(tmux, "a", "Who may run it")
        assert "1" in attrs_before(row, "Command"), repr(row)
    else:
        assert pad + "Command: /undo" in rows, rows
        assert pad + "Who may run it: the owner" in rows, rows
        assert any(r.startswith(pad + "What it does: takes back")
                   for r in rows), rows
    # The url is dim, the struck words struck, the link text plain.
    row = escaped_row(tmux, "a", "the guide")
    assert "2" in attrs_before(row, "(https://example.org/guide)"), repr(row)
    assert "2" not in attrs_before(row, "the guide"), repr(row)
    row = escaped_row(tmux, "a", "the old way")
    assert "9" in attrs_before(row, "the old way"), repr(row)
    assert "9" not in attrs_before(row, "the new one"), repr(row)
