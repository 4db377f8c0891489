"""What gets a member's attention in the chat, and stopping a command, as
people meet them through the real OpenSSH client in tmux at 80x24 and
120x35: the bell (tmux's bell flag of the member's window, with
monitor-bell on and bell-action any) when someone else names you, when
the agent asks for approval, when its turn ends while you are in /term;
not for your own lines, and not once you said /set bell off (kept by the
room across sessions); your name highlighted in the line; /term's status
row with the room's news; Ctrl-C on an empty line and /kill stopping a
running !command with SIGINT, then SIGTERM, and everyone seeing how it
ended.

Run as root after `make all`:
/usr/bin/python3 -m pytest -q tests/test_chat_attention.py
"""
import os
import re
import shutil
import time

import pytest

from model_server import Reply, ToolCall
from test_chat import untimed
from test_chat import Tmux as ChatTmux

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="atriumd mounts FUSE: run as root"),
    pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux"),
]

SIZES = [(80, 24), (120, 35)]
REVERSE = "\x1b[7m"


@pytest.fixture
def srv(atriumd, data_dir, model_server):
    env = dict(os.environ, ANTHROPIC_API_KEY="test-key")
    return atriumd(data_dir, "--provider", "anthropic", "--model-url",
                   model_server.url, "--model", "test-model",
                   "--approval", "allow_all", env=env)


class Tmux(ChatTmux):
    """test_chat's driver on a socket of its own; each window rings its
    bell flag on any bell, as a terminal user's tmux would show it."""

    def __init__(self):
        super().__init__()
        self.sock = "atrium-attn-%d" % os.getpid()

    def open(self, name, srv, room, user="alice", cols=80, rows=24, **kw):
        super().open(name, srv, room, user, cols, rows, **kw)
        self("set-option", "-t", name, "bell-action", "any")
        self("set-window-option", "-t", name, "monitor-bell", "on")

    def type(self, name, text):
        self("send-keys", "-t", name, "-l", text)
        self("send-keys", "-t", name, "Enter")

    def bell(self, name):
        """The window's bell flag: set by a bell, never cleared here (a
        new session starts without it)."""
        return self("display-message", "-p", "-t", name,
                    "#{window_bell_flag}").stdout.strip() == "1"

    def wait_bell(self, name, timeout=20):
        end = time.time() + timeout
        while not self.bell(name):
            assert time.time() < end, "no bell on %s's terminal:\n%s" % (
                name, self.screen(name))
            time.sleep(0.05)


@pytest.fixture
def tmux():
    t = Tmux()
    yield t
    t.kill()


def said(tmux, who, to, text):
    """who says text; once to shows it, everything before it was drawn."""
    tmux.type(who, text)
    tmux.wait(to, "%s: %s" % (who_name(who), text))


def who_name(pane):
    return {"a": "alice", "b": "bob"}[pane]


def two(tmux, srv, room, size):
    cols, rows = size
    tmux.open("a", srv, room, "alice", cols=cols, rows=rows)
    tmux.wait("a", "you are alice")      # alice owns the room
    tmux.open("b", srv, room, "bob", cols=cols, rows=rows)
    tmux.wait("a", "bob joined")


# --- the bell and the highlight -------------------------------------------

@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x35"])
def test_mention_rings_only_the_named_and_is_highlighted(srv, tmux, size):
    two(tmux, srv, "bells", size)
    # Lines that name nobody ring nobody: a name inside a longer word is
    # not a mention.
    said(tmux, "a", "b", "good morning all")
    said(tmux, "b", "a", "malice aforethought and alice_2")
    # A line that names bob rings bob's terminal, not its writer's.
    said(tmux, "a", "b", "@bob look at the build")
    tmux.wait_bell("b")
    said(tmux, "b", "a", "a marker")
    assert not tmux.bell("a"), "a line rang alice's terminal:\n" + \
        tmux.screen("a")
    # bob sees his name in reverse video in alice's line.
    row = next(r for r in tmux.screen("b", escapes=True).split("\n")
               if "look at the build" in r)
    assert REVERSE + "bob" in row, repr(row)
    # A name as a word of its own, in any case, rings too.
    said(tmux, "b", "a", "ALICE, see above")
    tmux.wait_bell("a")


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x35"])
def test_bell_off_is_kept_across_sessions(srv, tmux, size):
    two(tmux, srv, "quiet", size)
    tmux.type("b", "/set bell off")
    tmux.wait("b", "bell off: ")
    said(tmux, "a", "b", "@bob are you there")
    said(tmux, "b", "a", "marker one")
    said(tmux, "a", "b", "marker two")
    assert not tmux.bell("b"), "bob said /set bell off, and it rang"
    # The room keeps it: a new session of bob's is as quiet.
    tmux("kill-session", "-t", "b")
    tmux.wait("a", "bob left")
    tmux.open("b", srv, "quiet", "bob", cols=size[0], rows=size[1])
    tmux.type("b", "/set")
    tmux.wait("b", "bell off (/set bell on")
    said(tmux, "a", "b", "@bob still there?")
    said(tmux, "b", "a", "marker three")
    said(tmux, "a", "b", "marker four")
    assert not tmux.bell("b")
    tmux.type("b", "/set bell on")
    tmux.wait("b", "bell on: ")
    said(tmux, "a", "b", "@bob welcome back")
    tmux.wait_bell("b")


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x35"])
def test_turn_end_rings_in_term_or_scrolled_back_and_term_has_the_news(
        srv, model_server, tmux, size):
    model_server.script(Reply("Nothing more to do."), Reply("Once more."))
    two(tmux, srv, "news", size)
    # bob goes into /term: alice's line shows on its status row.
    tmux.type("b", "/term")
    tmux.wait("b", "Ctrl-] back to the chat")
    tmux.type("a", "hello in there")
    tmux.wait("b", lambda s: "| alice: hello in there |" in last_row(s))
    # The agent's turn ends: bob, in /term, is rung and told; alice, who
    # watched it end, is not rung.
    tmux.type("a", "@agent anything else?")
    tmux.wait("a", "Nothing more to do.")
    tmux.wait_bell("b")
    tmux.wait("b", lambda s: "| the agent is done |" in last_row(s))
    tmux.keys("b", "C-]")
    tmux.wait("b", "news>")
    said(tmux, "b", "a", "back")
    assert not tmux.bell("a")
    # alice scrolls back (PgUp) past a command's output: a turn that ends
    # now rings her.
    tmux.type("a", "!seq 101 160")
    tmux.wait("a", "exit 0")
    tmux.keys("a", "PPage")
    tmux.wait("a", lambda s: "exit 0" not in s)
    tmux.type("b", "@agent once more")
    tmux.wait("b", "Once more.")
    tmux.wait_bell("a")


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x35"])
def test_approval_rings_everyone_and_term_says_how_to_answer(
        srv, model_server, tmux, size):
    model_server.script(
        Reply("Checking.", tool_calls=[ToolCall("bash", {
            "command": "echo approved-run"})]),
        Reply("It ran."))
    two(tmux, srv, "asks", size)
    tmux.type("a", "/policy ask")
    tmux.wait("b", "set the approval policy to ask")
    tmux.type("b", "/term")
    tmux.wait("b", "Ctrl-] back to the chat")
    # An approval request rings everyone who may answer it, in /term
    # too, where the status row says it waits and which key answers.
    tmux.type("a", "@agent run it")
    tmux.wait("a", "approval needed: bash echo approved-run")
    tmux.wait_bell("a")
    tmux.wait_bell("b")
    # (At 80 columns the command is cut at the edge.)
    tmux.wait("b", lambda s: "| approval waiting, Ctrl-] to answer: `echo "
              "approved-" in last_row(s))
    tmux.keys("b", "C-]")
    tmux.wait("b", "approval needed: bash echo approved-run")
    tmux.type("b", "y")
    tmux.wait("b", "agent done")


def last_row(screen):
    return screen.rstrip("\n").split("\n")[-1]


# --- stopping a command ---------------------------------------------------

def ended(tmux, name, text):
    """The row that says how a command ended (without its time)."""
    tmux.wait(name, text)
    return next(untimed(r) for r in tmux.rows(name) if text in r)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x35"])
def test_ctrl_c_and_kill_stop_a_command(srv, tmux, size):
    two(tmux, srv, "stops", size)
    tmux.type("a", "!sleep 300")
    tmux.wait("b", "alice $ sleep 300")
    # Ctrl-C on a line with text clears the line only.
    tmux.keys("a", "-l", "half typed")
    tmux.wait("a", "stops> half typed")
    tmux.keys("a", "C-c")
    tmux.wait("a", lambda s: tmux.rows("a")[-1].rstrip() == "stops>")
    # On the empty line it sends SIGINT; both see how the command ended.
    tmux.keys("a", "C-c")
    for name in ("a", "b"):
        row = ended(tmux, name, "alice's command ended by SIGINT")
        assert re.fullmatch(r"\* alice's command ended by SIGINT after "
                            r"\d+\.\d+ s", row), row
    # The room stored it: bob, back in a new session, sees how it ended.
    tmux("kill-session", "-t", "b")
    tmux.wait("a", "bob left")
    tmux.open("b", srv, "stops", "bob", cols=size[0], rows=size[1])
    tmux.wait("b", "alice's command ended by SIGINT")
    # A command that ignores SIGINT: /kill again sends SIGTERM.
    # It says when its trap is set: a SIGINT before that would end it.
    tmux.type("a", "!trap '' INT; echo trap set; sleep 300")
    tmux.wait("b", "alice $ trap '' INT; echo trap set; sleep 300")
    tmux.wait("a", lambda s: "\ntrap set" in s or "  trap set" in s)
    tmux.type("a", "/kill")
    tmux.wait("a", "sent SIGINT to your command `trap '' INT; echo trap set; "
              "sleep 300`")
    tmux.type("a", "/kill")
    for name in ("a", "b"):
        row = ended(tmux, name, "alice's command ended by SIGTERM")
        assert re.fullmatch(r"\* alice's command ended by SIGTERM after "
                            r"\d+\.\d+ s", row), row
    tmux.type("a", "/kill")
    tmux.wait("a", "no command of yours is running")
    # Nobody but its person and the room's owner may stop a command.
    tmux.type("a", "!sleep 301")
    tmux.wait("b", "alice $ sleep 301")
    tmux.type("b", "/kill alice")
    tmux.wait("b", "only the room's owner (alice) or an admin may stop "
              "alice's command")
    tmux.keys("a", "C-c")
    ended(tmux, "b", "alice's command ended by SIGINT")
    tmux.type("b", "!sleep 302")
    tmux.wait("a", "bob $ sleep 302")
    tmux.type("a", "/kill bob")
    for name in ("a", "b"):
        row = ended(tmux, name, "bob's command ended by SIGINT from alice")
        assert re.fullmatch(r"\* bob's command ended by SIGINT from alice "
                            r"after \d+\.\d+ s", row), row
