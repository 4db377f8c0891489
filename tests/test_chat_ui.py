"""The full-screen chat as people use it every day, through the real OpenSSH
client in tmux (send-keys, capture-pane): the status line, times and date
lines, command blocks, the line editor's keys, input history kept by the
room across sessions, Tab completion, bracketed paste, scrolling back
through the room's stored history, /help, /history, /me and /cost.

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_chat_ui.py
"""
import json
import os
import re
import shutil
import time

import pytest

from conftest import ssh_command
from model_server import Reply, ToolCall
from test_chat import Tmux, settled, srv, tmux  # noqa: F401 (fixtures)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="atriumd mounts FUSE: run as root"),
    pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux"),
]

TIME = r"\d\d:\d\d "


def status_row(tmux, name):
    """The row above the input line."""
    return tmux.rows(name)[-2]


def test_look(srv, tmux, model_server):
    model_server.script(
        Reply("Running it.", tool_calls=[ToolCall("bash", {
            "command": "seq 1 3"})]),
        Reply("done"))
    tmux.open("a", srv, "look", "alice", cols=80, rows=20)
    tmux.open("b", srv, "look", "bob", cols=80, rows=20)
    tmux.keys("a", "hello", "Enter")
    tmux.keys("a", "!echo hi; sleep 0.3", "Enter")
    tmux.keys("a", "@agent count", "Enter")
    settled(tmux, "a", "agent done")
    tmux.keys("b", "typing here")
    time.sleep(1)
    print(tmux.screen("a"))
    print(tmux.screen("b"))
    assert 0
