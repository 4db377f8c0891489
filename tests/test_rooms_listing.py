"""The rooms listing never stops the network process: with 500 rooms, a
session asking for `rooms` (the monitor reads a record per room) does not
hold up another session's streaming command.

The monitor's work is made to last as long as the test wants, whatever
the machine's speed: one room's access record is a FIFO, so the monitor's
open of it waits until the test opens the other end.  While it waits the
other session's command must run to its end; only then is the FIFO opened
and the listing answered.  Nothing is timed: the test waits for events
(the monitor blocked in that open, the command's last line and exit) and
checks their order.

Run as root after `make all`:
    /usr/bin/python3 -m pytest -q tests/test_rooms_listing.py
"""
import json
import os
import threading
import time

import pytest

from conftest import make_room, ssh_command
from test_ssh import Lines

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")

ROOMS = 500
LINES = 2000


def make_rooms(data_dir, n):
    """n rooms with their access records, as the monitor writes them."""
    rooms = os.path.join(str(data_dir), "rooms")
    os.makedirs(rooms, mode=0o700, exist_ok=True)
    for i in range(n):
        d = os.path.join(rooms, "r%03d" % i)
        os.mkdir(d, 0o700)
        path = os.path.join(d, "access.json")
        with open(path, "w") as f:
            json.dump({"version": 1, "owner": "bob", "visibility": "open",
                       "members": ["carol"]}, f)
        os.chmod(path, 0o600)


def slow_room(data_dir):
    """A room whose record is a FIFO: reading it waits for the test."""
    d = os.path.join(str(data_dir), "rooms", "slow")
    os.mkdir(d, 0o700)
    path = os.path.join(d, "access.json")
    os.mkfifo(path, 0o600)
    return path


def wchan(pid):
    with open("/proc/%d/wchan" % pid) as f:
        return f.read().strip()


def wait_until(pred, what, timeout=30):
    end = time.time() + timeout
    while not pred():
        assert time.time() < end, what
        time.sleep(0.02)


def release(fifo):
    """Let the monitor's open of fifo go on (it then refuses the room)."""
    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    os.close(fd)


def listing(lines):
    ev = json.loads(lines.expect(lambda l: json.loads(l)["type"] == "rooms",
                                 60))
    return {r["room"] for r in ev["rooms"]}


@pytest.fixture
def crowded(atriumd, data_dir, ssh_run):
    make_rooms(data_dir, ROOMS)
    # No watchdog: the monitor is held still on purpose here.
    srv = atriumd(data_dir, "--agent-timeout", "0")
    make_room(srv, "lab")
    return srv


def test_a_listing_does_not_hold_up_a_stream(crowded, data_dir):
    srv = crowded
    fifo = slow_room(data_dir)
    ask = Lines(ssh_command(srv, "lab", "-s", "atrium"))
    stream = Lines(ssh_command(
        srv, "lab", "echo start; read go; for i in $(seq 1 %d); do echo $i;"
        " done" % LINES))
    released = False
    try:
        ask.expect(lambda l: json.loads(l)["type"] == "welcome")
        stream.expect(lambda l: l == b"start\n")
        ask.send('{"type":"rooms"}\n')
        wait_until(lambda: wchan(srv.proc.pid) == "wait_for_partner",
                   "the monitor never reached the slow room's record")
        # The monitor is inside the listing, and stays there: the
        # command takes its input and streams every line to its end.
        stream.send("go\n")
        for i in range(1, LINES + 1):
            stream.expect(lambda l, i=i: l == b"%d\n" % i, 60)
        assert stream.close() == 0
        assert wchan(srv.proc.pid) == "wait_for_partner"
        assert not any(json.loads(l)["type"] == "rooms" for l in ask.seen)
        release(fifo)
        released = True
        rooms = listing(ask)
        assert len(rooms) == ROOMS + 1 and "slow" not in rooms
    finally:
        if not released:
            try:
                release(fifo)
            except OSError:
                pass    # the monitor never opened it
        stream.close()
        ask.close()


def test_listings_in_a_loop_beside_a_stream(crowded):
    srv = crowded
    ask = Lines(ssh_command(srv, "lab", "-s", "atrium"))
    stream = Lines(ssh_command(
        srv, "lab", "for i in $(seq 1 %d); do echo $i; done" % LINES))
    done = threading.Event()
    counts = []

    def ask_loop():
        while not done.is_set():
            ask.send('{"type":"rooms"}\n')
            counts.append(len(listing(ask)))

    try:
        ask.expect(lambda l: json.loads(l)["type"] == "welcome")
        t = threading.Thread(target=ask_loop, daemon=True)
        t.start()
        for i in range(1, LINES + 1):
            stream.expect(lambda l, i=i: l == b"%d\n" % i, 60)
        assert stream.close() == 0
        done.set()
        t.join(60)
        assert counts and all(n == ROOMS + 1 for n in counts), counts
    finally:
        done.set()
        stream.close()
        ask.close()
