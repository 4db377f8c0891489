"""A chat member whose client stops reading (its ssh stopped with SIGSTOP)
never holds the room up: the others' lines still reach them promptly, and
when the stopped client goes on it gets a whole, correct screen.

How long a line takes is not a speed test here (make bench measures that):
the bound is a generous 2 s, far above the few milliseconds it takes, and
far below what a member waiting on a stopped client would see (forever).

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_chat_slow.py
"""
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import ssh_command
from test_chat import Tmux, settled, srv, untimed  # noqa: F401 (srv is a fixture)
from test_ssh import chat_plain

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="atriumd mounts FUSE: run as root"),
]

# More than a stopped client's window (2 MiB with OpenSSH) and atriumd's
# queue for it: each command's output is about 740 KB on bob's screen.
FLOODS = 8
PROMPT_BOUND = 2.0   # seconds: generous; a stuck room would never deliver


@pytest.fixture
def tmux():
    t = Tmux()
    yield t
    t.kill()


def open_stoppable(tmux, name, srv, room, user):
    """A member in tmux whose ssh is not the pane's own process, and its
    pid.  tmux sends SIGCONT to a pane process that stops (unless by
    SIGTTIN or SIGTTOU), so a stopped pane would not stay stopped: here
    a shell waits for ssh, which tmux does not watch."""
    cmd = " ".join(ssh_command(srv, room, user=user, opts=["-t"]))
    tmux("new-session", "-d", "-s", name, "-x", "80", "-y", "20",
         cmd + "; sleep 1")
    tmux.wait(name, room + ">")
    shell = tmux("display-message", "-p", "-t", name, "#{pane_pid}").stdout
    pids = subprocess.run(["pgrep", "-P", shell.strip(), "-x", "ssh"],
                          capture_output=True, text=True).stdout.split()
    assert len(pids) == 1, pids
    return int(pids[0])


def stopped(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


def said(sender, receiver, text):
    """Seconds from sender's line until receiver shows it."""
    t0 = time.monotonic()
    sender.send(text + "\n")
    receiver.expect(lambda l: l == ("alice: %s\n" % text).encode(),
                    timeout=30)
    return time.monotonic() - t0


def test_stopped_client_does_not_delay_others(srv, tmux):
    """bob's ssh is stopped while alice floods the room with command
    output and talks: another session (alice's second terminal) gets
    each of her lines within 2 s all along; once bob goes on, his screen
    is drawn again whole: the prompt at the bottom, alice's last line
    above it, the note that output was dropped, no broken escape
    sequence, no output line cut in two."""
    pid = open_stoppable(tmux, "b", srv, "stall", "bob")
    a = chat_plain(srv, "stall", "alice")
    c = chat_plain(srv, "stall", "alice")
    try:
        a.expect(lambda l: b"you are alice" in l)
        c.expect(lambda l: b"you are alice" in l)
        os.kill(pid, signal.SIGSTOP)
        delays = []
        try:
            delays.append(said(a, c, "before the flood"))
            for i in range(FLOODS):
                a.send("!seq 1 50000 | sed 's/^/row /'\n")
                c.expect(lambda l: l.startswith(b"* exit 0"), timeout=60)
                delays.append(said(a, c, "line %d" % i))
            # Longer stopped than atriumd waits for a member (1 s) before
            # it drops what that member's client did not take.
            time.sleep(2)
            delays.append(said(a, c, "line %d" % FLOODS))
            assert stopped(pid)    # all along
        finally:
            os.kill(pid, signal.SIGCONT)
        assert max(delays) < PROMPT_BOUND, delays
        tmux.wait("b", "alice: line %d" % FLOODS, timeout=120)
        screen = settled(tmux, "b", "alice: line %d" % FLOODS)
        visible = [untimed(r) for r in tmux.rows("b")]
        assert visible[-1] == "stall>", visible
        assert "alice: line %d" % FLOODS in visible, visible
        # bob really fell behind: what he could not take was dropped, in
        # whole frames, and his screen was drawn again, with a note.
        assert "(output dropped: your connection is slower" in screen, screen
        assert not re.search(r"\[[0-9;]*m|\x1b", screen), screen
        rows = [r for r in visible if r.startswith("row ")]
        assert all(re.fullmatch(r"row \d+", r) for r in rows), visible
    finally:
        a.close()
        c.close()
