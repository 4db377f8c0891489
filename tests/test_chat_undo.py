"""/undo, /redo and the snapshot commands in the full-screen chat, through
the real OpenSSH client in tmux, on the room's real atrium-fs workspace
with the real sandbox (only the model is scripted).

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_chat_undo.py
"""
import os
import shutil

import pytest

from conftest import ssh_run  # noqa: F401 (fixture)
from model_server import Reply, ToolCall
from test_chat import settled, srv, tmux  # noqa: F401 (fixtures)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="atriumd mounts FUSE: run as root"),
    pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux"),
]


def ls(ssh_run, srv):
    rc, out, err = ssh_run(srv, "undo", "ls; cat edit")
    assert rc == 0, err
    return out


def test_undo_previews_confirms_and_redo_brings_back(srv, model_server,
                                                     tmux, ssh_run):
    tmux.open("a", srv, "undo", "alice", cols=120, rows=40)
    tmux.wait("a", "you are alice")
    tmux.keys("a", "!echo keep > keep; echo edit > edit; echo gone > gone",
              "Enter")
    # Its line shows as it starts; what it made, once it has exited.
    tmux.wait("a", lambda s: s.count("* exit 0 after") == 1)
    before = ls(ssh_run, srv)
    model_server.script(
        Reply("Changing.", tool_calls=[ToolCall("bash", {
            "command": "echo new > made && echo more >> edit && rm gone"})]),
        Reply("Changed."))
    tmux.keys("a", "@agent change the files", "Enter")
    settled(tmux, "a", "agent done")
    after = ls(ssh_run, srv)
    assert "made" in after and "gone" not in after
    # a person's own !cmd after the turn is named before anyone confirms
    tmux.keys("a", "!echo b > bobs", "Enter")
    tmux.wait("a", lambda s: s.count("* exit 0 after") == 2)

    tmux.keys("a", "/undo", "Enter")
    screen = tmux.wait("a", "y to undo")
    assert "/undo would undo the agent's turn" in screen
    assert "removes: bobs, made" in screen
    assert "brings back: gone" in screen
    assert "changes back: edit" in screen
    assert "also takes back the changes of: alice" in screen
    assert ls(ssh_run, srv) != before
    tmux.keys("a", "y", "Enter")
    tmux.wait("a", "alice undid the agent's turn")
    assert ls(ssh_run, srv) == before

    tmux.keys("a", "/redo", "Enter")
    screen = tmux.wait("a", "y to redo")
    assert "brings back: bobs, made" in screen
    tmux.keys("a", "n", "Enter")
    tmux.wait("a", "nothing was changed")
    assert ls(ssh_run, srv) == before
    tmux.keys("a", "/redo", "Enter")
    tmux.wait("a", lambda s: s.count("y to redo") == 2)
    tmux.keys("a", "y", "Enter")
    tmux.wait("a", "alice redid the agent's turn")
    assert ls(ssh_run, srv) == "bobs\n" + after


def test_named_snapshots_restore_and_list(srv, model_server, tmux, ssh_run):
    tmux.open("a", srv, "undo", "alice", cols=120, rows=40)
    tmux.wait("a", "you are alice")
    tmux.keys("a", "!echo one > f", "Enter")
    tmux.wait("a", "* exit 0 after")
    tmux.keys("a", "/snapshot first", "Enter")
    tmux.wait("a", "alice took snapshot first of the workspace")
    tmux.keys("a", "!echo two > f", "Enter")
    tmux.wait("a", lambda s: s.count("* exit 0 after") == 2)
    tmux.keys("a", "/snapshot turn-9", "Enter")
    tmux.wait("a", "not starting with turn- or redo-")
    tmux.keys("a", "/snapshots", "Enter")
    screen = tmux.wait("a", "snapshots of the workspace:")
    assert "  first " in screen and "turn-9" not in screen.split(
        "snapshots of the workspace:")[1]
    tmux.keys("a", "/restore first", "Enter")
    tmux.wait("a", "alice restored the workspace to snapshot first")
    assert ssh_run(srv, "undo", "cat f")[1] == "one\n"
