"""Snapshots within the workspace quota, as a hostile member would try to
escape it: named snapshots of data then deleted, and the agent's undo
points over several turns.  A real atrium-fs mount with a quota, the real
sandbox; only the model is scripted."""
import os
import re
import subprocess
import time

import pytest

from test_agent import FS, Reply, ToolCall, fast, room  # noqa: F401

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="FUSE mounts need root"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse"),
]

MiB = 1 << 20
QUOTA = 64 * MiB


def exec_cmd(room, command, id):
    """command run in the workspace as a member's exec; its result."""
    x = room.connect(kind="exec")
    x.send({"type": "exec", "id": id, "command": command})
    r = x.wait("exec_result", id=id, timeout=60)
    x.close()
    return r


def first_of(c, types, timeout=30):
    """The first event of one of types not yet taken."""
    end = time.monotonic() + timeout
    while True:
        for i, ev in enumerate(c.events):
            if ev.get("type") in types:
                del c.events[:i + 1]
                return ev
        assert time.monotonic() < end, c.events[-20:]
        c._read(0.2)


def db_size(room):
    return os.path.getsize(os.path.join(room.room_dir, "workspace.db"))


def du(room):
    out = subprocess.run([FS, "du", os.path.join(room.room_dir,
                                                 "workspace.db")],
                         capture_output=True, text=True, check=True).stdout
    return dict(line.split(":", 1) for line in out.splitlines())


def test_named_snapshots_cannot_carry_data_past_the_quota(room, model):
    with room.on_atrium_fs("quota=64M"):
        room.start("--model-url", model.url, *fast())
        c = room.connect()
        refused = None
        for i in range(4):
            exec_cmd(room, "head -c 20M /dev/zero | tr '\\0' x > f%d" % i,
                     "w%d" % i)
            c.send({"type": "snapshot", "name": "s%d" % i})
            ev = first_of(c, ("snapshot", "error"))
            if ev["type"] == "error":
                refused = ev["message"]
                break
            assert exec_cmd(room, "rm f%d" % i, "r%d" % i)["exitCode"] == 0
        # 20 MiB a round: the third snapshot would keep 60 MiB + 20 MiB
        assert refused is not None and i == 2, refused
        assert "would not fit" in refused and "64.0 MiB" in refused
        assert "would keep 20.0 MiB" in refused
        # writes past the quota fail though snapshots hold most of it
        r = exec_cmd(room, "head -c 30M /dev/zero | tr '\\0' x > big", "big")
        assert r["exitCode"] != 0
        assert "quota" in r["stderr"] or "space" in r["stderr"], r
        # a full room still deletes, and the disk holds about the quota
        assert exec_cmd(room, "rm -f big f2", "rm")["exitCode"] == 0
        d = du(room)
        assert int(d["snapshots only"].split()[0]) >= 40 * MiB
        assert "quota" in d and str(QUOTA) in d["quota"]
        assert db_size(room) < QUOTA + 24 * MiB
        # /limits says what the room stores against its quotas
        c.send({"type": "limits"})
        text = first_of(c, ("limits",))["text"]
        assert "storage: workspace " in text and "of 64.0 MiB" in text, text
        snap_only = int(d["snapshots only"].split()[0]) / MiB
        assert "kept only by snapshots %.1f" % snap_only in text, text
        assert re.search(r"room\.db [0-9.]+ MiB \(WAL [0-9.]+\) of "
                         r"[0-9.]+ MiB;", text), text
        assert re.search(r"its WAL [0-9.]+ besides", text), text


def test_undo_points_are_dropped_oldest_first_to_make_room(room, model):
    with room.on_atrium_fs("quota=64M"):
        os.chmod(room.workspace, 0o777)
        room.start("--model-url", model.url, "--approval", "allow_all",
                   *fast())
        c = room.connect()
        dropped = []
        for i in range(4):
            model.script(Reply("Working.", tool_calls=[ToolCall("bash", {
                "command": "rm -f f*; head -c 40M /dev/zero | tr '\\0' x "
                           "> f%d; true" % i})]), Reply("Done."))
            c.send({"type": "prompt", "text": "fill %d" % i})
            evs = c.collect("turn_end", timeout=90)
            dropped += [e["text"] for e in evs if e["type"] == "notice"]
        told = [t for t in dropped if "dropped the undo point of turn" in t]
        assert told and "to make room" in told[0], dropped
        assert db_size(room) < QUOTA + 24 * MiB
        # the room is full, yet the last turn can be undone
        c.send({"type": "undo", "confirm": True})
        c.wait("undo_done", timeout=60)


def test_an_offline_snapshot_is_held_to_the_quota(tmp_path):
    """`atrium-fs snapshot DB NAME` on an unmounted workspace admits the
    snapshot as its daemon would, under the quota it was last mounted
    with: refused with the figures when what it would keep does not
    fit."""
    from test_fs import Mount, run
    m = Mount(tmp_path, opts="quota=8M").mount()
    try:
        with open(m.p("a"), "wb") as f:
            f.write(b"a" * (3 * MiB))
    finally:
        m.unmount()
    r = run("snapshot", m.db, "fits")       # 3 MiB used, keeps 3 more
    assert r.returncode == 0, r.stderr
    m.mount()
    try:
        os.unlink(m.p("a"))                 # 3 MiB kept by "fits" alone
        with open(m.p("b"), "wb") as f:
            f.write(b"b" * (3 * MiB))
    finally:
        m.unmount()
    r = run("snapshot", m.db, "over")       # 6 MiB used, would keep 3 more
    assert r.returncode != 0
    assert re.search(r"would keep 31\d{5} bytes more", r.stderr), r.stderr
    assert "of the quota's 8388608 bytes are used" in r.stderr, r.stderr
    r = run("snapshots", m.db)
    assert "fits" in r.stdout and "over" not in r.stdout, r.stdout
