"""atrium-agent with room.db on a full disk: what the room cannot record it
does not do.  A chat line gets an error event and reaches nobody; a command
is refused before it runs; reading (history, who) keeps working; once space
returns, everything works again without a restart.

Run as root: /usr/bin/python3 -m pytest -q tests/test_room_db_full.py
"""
import errno
import os
import shutil
import subprocess
import tempfile

import pytest

from test_agent import Room, pytestmark  # noqa: F401 (same skips)


@pytest.fixture
def full_room():
    """A Room whose room directory (room.db) is on a 12 MiB tmpfs; the
    workspace stays on the ordinary disk."""
    base = tempfile.mkdtemp(prefix="atrium-full-")
    rooms = os.path.join(base, "rooms")
    os.makedirs(rooms)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m,mode=0755",
                    "tmpfs", rooms], check=True)
    r = Room(base)
    try:
        yield r
    finally:
        r.cleanup()
        subprocess.run(["umount", "-l", rooms], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def fill(path):
    """Write path until the disk is full; the bytes written."""
    n = 0
    # Unbuffered: a short write near the end must not leave bytes in a
    # buffer whose flush at close fails again with ENOSPC.
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                n += f.write(b"\0" * 65536)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
    return n


def messages(events):
    return [e.get("text") for e in events if e.get("type") == "message"]


def test_full_disk_refuses_what_it_cannot_record(full_room):
    room = full_room
    room.start()
    alice = room.connect("alice")
    bob = room.connect("bob")
    runner = room.connect("alice", kind="exec")
    alice.send({"type": "chat", "text": "before"})
    bob.wait("message", text="before")

    filler = os.path.join(room.room_dir, "filler")
    assert fill(filler) > 0

    # A chat line: an error for the sender, nothing for anyone.
    alice.send({"type": "chat", "text": "lost line"})
    err = alice.wait("error")
    assert "could not record your message" in err["message"], err
    assert "disk holding room.db is full" in err["message"], err

    # A command: refused, and it did not run.
    marker = os.path.join(room.workspace, "marker")
    runner.send({"type": "exec", "id": "x1",
                 "command": "touch /workspace/marker"})
    err = runner.wait("error", id="x1")
    assert "was not run" in err["message"], err
    assert "full" in err["message"], err
    assert not os.path.exists(marker)

    # Reading still works.
    alice.send({"type": "who"})
    assert sorted(alice.wait("presence")["users"]) == ["alice", "bob"]
    alice.send({"type": "history"})
    alice.wait("message", text="before", replay=True)

    # Space returns: chat and exec work again, without a restart.
    os.unlink(filler)
    alice.send({"type": "chat", "text": "after"})
    seen = bob.collect("message", text="after")
    assert "lost line" not in messages(seen), seen
    alice.wait("message", text="after")
    runner.send({"type": "exec", "id": "x2",
                 "command": "touch /workspace/marker"})
    r = runner.wait("exec_result", id="x2")
    assert r["exitCode"] == 0, r
    assert os.path.exists(marker)

    # The record has no trace of the lost line, and the audit holds the
    # command that ran and not the one refused.
    late = room.connect("carol", history=50)
    texts = messages(late.collect("presence"))
    assert texts == ["before", "after"], texts
    db = room.db()
    audit = db.execute("SELECT command, exit_code FROM audit").fetchall()
    assert audit == [("touch /workspace/marker", 0)], audit
    stored = [t for (t,) in db.execute(
        "SELECT json FROM events WHERE type = 'message'")]
    assert not any("lost line" in t for t in stored), stored
    assert "not recorded, not sent" in room.log_text()
