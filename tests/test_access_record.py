"""atriumd's own record of each room's access list,
DATA/rooms/ROOM/access.json: the room's agent reports its list and the
monitor writes it; decisions and listings read the record, never room.db;
a room made before the record is read from its (root's) room.db once; a
room without a record whose room.db is not root's fails closed.

Run as root after `make all`:
    /usr/bin/python3 -m pytest -q tests/test_access_record.py
"""
import json
import os
import sqlite3
import time

import pytest

from conftest import make_room
from test_access import add_key, events, invite, make_private, access_change

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")


def record_path(data_dir, room):
    return os.path.join(str(data_dir), "rooms", room, "access.json")


def read_record(data_dir, room):
    try:
        with open(record_path(data_dir, room)) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def wait_record(data_dir, room, pred, timeout=20):
    """The record once pred(record) holds: the agent's report reaches the
    monitor on a connection of its own, a moment after the room's event."""
    end = time.time() + timeout
    while True:
        rec = read_record(data_dir, room)
        if rec is not None and pred(rec):
            return rec
        assert time.time() < end, rec
        time.sleep(0.05)


def listing(ssh_run, srv, user):
    rc, out, err = ssh_run(srv, "x", "-s", "rooms", user=user)
    assert rc == 0, err
    return {r["room"]: r for r in json.loads(out)["rooms"]}


def test_the_agent_reports_and_the_monitor_records(atriumd, data_dir,
                                                   ssh_run):
    srv = atriumd(data_dir)
    make_room(srv, "rec")
    wait_record(data_dir, "rec", lambda r: r["owner"] == "alice")
    make_private(srv, "rec")
    invite(srv, "rec", "bob")
    rec = wait_record(data_dir, "rec", lambda r: r["members"] == ["bob"])
    assert rec == {"version": 1, "owner": "alice", "visibility": "private",
                   "members": ["bob"]}
    st = os.stat(record_path(data_dir, "rec"))
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o600)
    events(srv, "rec", {"type": "remove", "user": "bob"},
           until=access_change("remove", user="bob"))
    wait_record(data_dir, "rec", lambda r: r["members"] == [])


def set_room_db_visibility(data_dir, room, visibility):
    db = sqlite3.connect(os.path.join(str(data_dir), "rooms", room,
                                      "room.db"))
    with db:
        db.execute("UPDATE config SET value = ? WHERE key = 'visibility'",
                   (visibility,))
    db.close()


def test_decisions_read_the_record_not_room_db(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir)
    make_room(srv, "rec")
    make_private(srv, "rec")
    wait_record(data_dir, "rec", lambda r: r["visibility"] == "private")
    srv.stop()
    # room.db now says open; the room is cold, and its record says private.
    set_room_db_visibility(data_dir, "rec", "open")
    srv = atriumd(data_dir)
    rc, out, err = ssh_run(srv, "rec", "echo in", user="bob")
    assert rc != 0 and "may not enter it" in err, (rc, out, err)
    assert "rec" not in listing(ssh_run, srv, "bob")


def test_a_room_made_before_the_record_is_read_once(atriumd, data_dir,
                                                    ssh_run):
    srv = atriumd(data_dir)
    make_room(srv, "old")
    make_private(srv, "old")
    wait_record(data_dir, "old", lambda r: r["visibility"] == "private")
    srv.stop()
    os.unlink(record_path(data_dir, "old"))
    # As a room made before the record was left it: room.db root's (the
    # agent ran as root then).
    room = os.path.join(str(data_dir), "rooms", "old")
    for name in os.listdir(room):
        if name.startswith("room.db"):
            os.chown(os.path.join(room, name), 0, 0)
    srv = atriumd(data_dir)
    mine = listing(ssh_run, srv, "alice")
    assert (mine["old"]["owner"], mine["old"]["visibility"]) == \
        ("alice", "private")
    assert read_record(data_dir, "old") == {
        "version": 1, "owner": "alice", "visibility": "private",
        "members": []}
    rc, out, err = ssh_run(srv, "old", "echo in", user="bob")
    assert rc != 0 and "may not enter it" in err


def test_a_room_without_a_record_fails_closed(atriumd, data_dir, ssh_run):
    add_key(data_dir, "root2", "atrium-admin")
    srv = atriumd(data_dir)
    make_room(srv, "lost")
    wait_record(data_dir, "lost", lambda r: r["owner"] == "alice")
    srv.stop()
    os.unlink(record_path(data_dir, "lost"))
    # A room.db that is not root's (as the agent's own will be) is never
    # read by atriumd.
    room = os.path.join(str(data_dir), "rooms", "lost")
    for name in os.listdir(room):
        if name.startswith("room.db"):
            os.chown(os.path.join(room, name), 65534, 65534)
    srv = atriumd(data_dir)
    rc, out, err = ssh_run(srv, "lost", "echo in")
    assert rc != 0 and "may not enter it" in err, (rc, out, err)
    assert "lost" not in listing(ssh_run, srv, "alice")
    assert read_record(data_dir, "lost") is None
    # An admin may enter; the agent starts and reports its list.
    rc, out, err = ssh_run(srv, "lost", "echo admin-in", user="root2")
    assert (rc, out) == (0, "admin-in\n"), err
    wait_record(data_dir, "lost", lambda r: r["owner"] == "alice")
    rc, out, err = ssh_run(srv, "lost", "echo in")
    assert (rc, out) == (0, "in\n"), err
