"""A room's chat members share one connection to the room's agent in
atriumd's network process (sshd/chat/chat_feed.h): the agent writes each
room event once, and it is read there once, whatever the number of
members, while every member
still sees the room as before: a member whose terminal stopped reading
holds nobody up and catches up when it goes on, `/who` lists the people
here, and a newcomer's history and the lines after it come once each.

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_chat_feed.py
"""
import os
import re
import signal
import subprocess
import time

import pytest

from test_chat import Tmux, srv  # noqa: F401 (srv is a fixture)
from test_chat_slow import open_stoppable, said, stopped
from test_ssh import chat_plain, room_pids

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="atriumd mounts FUSE: run as root"),
]

READERS = ("bob", "alice", "bob", "alice", "bob", "alice")
LONG = "long-" + "x" * 8000   # one chat line, about 8 KB on every link


@pytest.fixture
def tmux():
    t = Tmux()
    yield t
    t.kill()


def agent_pid(srv, room):
    for pid in room_pids(srv, room):
        with open("/proc/%d/comm" % pid) as f:
            if f.read().strip() == "atrium-agent":
                return pid
    raise AssertionError("no atrium-agent for " + room)


class SentBytes:
    """Bytes a process sends on its sockets while this is open (strace
    counts its sendmsg calls: where the room's events leave the agent)."""

    def __init__(self, pid, path):
        self.path, self.pid = path, pid
        self.proc = subprocess.Popen(
            ["strace", "-f", "-qq", "-p", str(pid), "-e", "trace=sendmsg",
             "-e", "signal=none", "-s", "0", "-o", path],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 10
        while self._tracer() == 0:
            assert time.monotonic() < end, "strace did not attach"
            time.sleep(0.02)

    def _tracer(self):
        with open("/proc/%d/status" % self.pid) as f:
            return int(re.search(r"TracerPid:\s+(\d+)", f.read()).group(1))

    def total(self):
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(10)
        with open(self.path) as f:
            return sum(int(n) for n in re.findall(r"\) = (\d+)$", f.read(),
                                                  re.M))


def test_members_share_the_room_feed(srv, tmux, tmp_path):
    """bob's ssh is stopped while alice floods the room and talks to six
    other sessions of theirs: each line reaches them within 2 s, and the
    agent writes a long line once (on the room's feed), not once per
    member; /who lists the
    two people; once bob goes on his screen has the last line; a
    newcomer sees the room's last line once in its history and the next
    line once."""
    pid = open_stoppable(tmux, "b", srv, "feed", "bob")
    a = chat_plain(srv, "feed", "alice")
    readers = []
    newcomer = None
    try:
        a.expect(lambda l: b"you are alice" in l)
        for u in READERS:   # one at a time: under the per-source limits
            readers.append(chat_plain(srv, "feed", u))
            readers[-1].expect(lambda l: b"you are " in l)
        os.kill(pid, signal.SIGSTOP)
        try:
            a.send("!seq 1 50000 | sed 's/^/row /'\n")
            for r in readers:
                r.expect(lambda l: l.startswith(b"* exit 0"), timeout=60)
            assert said(a, readers[0], "after the flood") < 2.0
            sent = SentBytes(agent_pid(srv, "feed"), str(tmp_path / "st"))
            a.send(LONG + "\n")
            for r in readers:
                r.expect(lambda l: l == ("alice: %s\n" % LONG).encode())
            sent = sent.total()
            # Once on the room's feed, not once per member's link (7 or
            # 8 of them: bob's stopped one may take it too).
            assert len(LONG) < sent < 3 * len(LONG), (sent, len(LONG))
            assert said(a, readers[-1], "while bob is stopped") < 2.0
            assert stopped(pid)
        finally:
            os.kill(pid, signal.SIGCONT)
        tmux.wait("b", "alice: while bob is stopped", timeout=60)

        a.send("/who\n")
        a.expect(lambda l: l.startswith(b"* here (2):"))
        who = [a.expect(lambda l: True) for _ in range(2)]
        assert sorted(w.split()[0] for w in who) == [b"alice", b"bob"], who

        newcomer = chat_plain(srv, "feed", "bob")
        newcomer.expect(lambda l: b"you are bob" in l)
        a.send("after the join\n")
        newcomer.expect(lambda l: l == b"alice: after the join\n")
        a.send("the last line\n")
        newcomer.expect(lambda l: l == b"alice: the last line\n")
        seen = newcomer.seen
        for text in ("while bob is stopped", "after the join",
                     "the last line"):
            line = ("alice: %s\n" % text).encode()
            assert seen.count(line) == 1, (text, seen[-20:])
        assert seen.index(b"alice: while bob is stopped\n") < \
            seen.index(b"alice: after the join\n")
    finally:
        for m in [a] + readers + ([newcomer] if newcomer else []):
            m.close()
