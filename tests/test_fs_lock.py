"""atrium-fs's offline commands beside a daemon: every command that changes
a workspace database either goes through the mounted daemon's control
socket or is refused with a message that names the mount point and the
daemon's pid; and a refused command makes and removes nothing, the
daemon's lock file least of all.

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_fs_lock.py
"""
import contextlib
import fcntl
import io
import os
import sqlite3
import subprocess
import tarfile

import pytest

from test_fs import BIN, Mount, run

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="FUSE mounts need root"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse"),
]


def tar_bytes(members):
    """A tar of (name, bytes or None for a directory) pairs, in order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                t.addfile(info)
            else:
                info.size, info.mode = len(data), 0o644
                t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def run_in(args, data):
    """atrium-fs args with data on its standard input."""
    return subprocess.run([BIN, *args], input=data, capture_output=True,
                          timeout=60)


@contextlib.contextmanager
def lock_held(db, mnt):
    """Hold db's mount lock as a daemon starting to serve it at mnt does
    (its pid and mount point recorded); yields the lock file's inode."""
    fd = os.open(db + "-mount", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, b"%d\n%s\n" % (os.getpid(), mnt.encode()))
        yield os.fstat(fd).st_ino
    finally:
        os.close(fd)


def names_the_daemon(err, m):
    return ("mounted at %s" % m.dir in err and
            "atrium-fs pid %d" % m.pid in err)


@pytest.mark.parametrize("args,rc", [
    (["fsck", "--repair", "{db}"], 2),
    (["reown", "{db}", "64222:64222", "5:5"], 2),
    (["mkfs", "{db}"], 1),
    (["import", "{db}"], 1),
])
def test_a_command_that_would_write_beside_the_daemon_is_refused(
        tmp_path, args, rc):
    m = Mount(tmp_path).mount()
    try:
        with open(m.p("f"), "w") as f:
            f.write("kept")
        before = os.stat(m.p("f"))
        argv = [a.format(db=m.db) for a in args]
        r = run_in(argv, tar_bytes([("new", b"x")]))
        err = r.stderr.decode()
        assert r.returncode == rc, err
        assert names_the_daemon(err, m), err
        # The daemon serves on, its files as they were.
        after = os.stat(m.p("f"))
        assert (after.st_uid, after.st_ino) == (before.st_uid, before.st_ino)
        with open(m.p("f")) as f:
            assert f.read() == "kept"
        assert not os.path.exists(m.p("new"))
    finally:
        m.unmount()
    assert run("fsck", m.db).returncode == 0


@pytest.mark.parametrize("verb", ["compact", "snapshot"])
def test_a_command_the_daemon_can_do_goes_through_it(tmp_path, verb):
    m = Mount(tmp_path).mount()
    try:
        with open(m.p("f"), "w") as f:
            f.write("kept")
        r = run(verb, m.db, *(["s1"] if verb == "snapshot" else []))
        assert r.returncode == 0, r.stderr
        if verb == "snapshot":
            assert "s1" in run("snapshots", m.db).stdout
        with open(m.p("f")) as f:
            assert f.read() == "kept"
    finally:
        m.unmount()


def test_import_into_a_new_database_a_mount_holds_makes_and_removes_nothing(
        tmp_path):
    """The lock comes first: an import no longer makes the database, finds
    the lock held, and removes the database and the holder's lock file."""
    db, mnt = str(tmp_path / "new.db"), str(tmp_path / "mnt")
    with lock_held(db, mnt) as ino:
        r = run_in(["import", db], tar_bytes([("f", b"x")]))
        err = r.stderr.decode()
        assert r.returncode == 1, err
        assert "mounted at %s" % mnt in err, err
        assert "pid %d" % os.getpid() in err, err
        assert not os.path.exists(db)
        assert os.stat(db + "-mount").st_ino == ino
    # Free again, the same import makes it.
    r = run_in(["import", db], tar_bytes([("f", b"x")]))
    assert r.returncode == 0, r.stderr
    assert run("fsck", db).returncode == 0


def test_import_room_into_a_room_whose_workspace_a_mount_holds(tmp_path):
    room = tmp_path / "room"
    room.mkdir()
    db, mnt = str(room / "workspace.db"), str(tmp_path / "mnt")
    history = str(tmp_path / "history.db")
    with sqlite3.connect(history) as c:
        c.execute("CREATE TABLE t (x)")
    with open(history, "rb") as f:
        archive = tar_bytes([("atrium-room", b"atrium-room 1\n"),
                             ("room.db", f.read()),
                             ("workspace", None),
                             ("workspace/f", b"x")])
    with lock_held(db, mnt) as ino:
        r = run_in(["import-room", str(room)], archive)
        err = r.stderr.decode()
        assert r.returncode == 1, err
        assert "mounted at %s" % mnt in err, err
        assert "pid %d" % os.getpid() in err, err
        assert sorted(os.listdir(room)) == ["workspace.db-mount"]
        assert os.stat(db + "-mount").st_ino == ino
    r = run_in(["import-room", str(room)], archive)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(room)) == [
        "room.db.import", "workspace.db", "workspace.db-mount"]


def test_mkfs_of_a_database_a_mount_is_starting_on_is_refused(tmp_path):
    db, mnt = str(tmp_path / "w.db"), str(tmp_path / "mnt")
    with lock_held(db, mnt) as ino:
        r = run("mkfs", db)
        assert r.returncode == 1, r.stderr
        assert "mounted at %s" % mnt in r.stderr, r.stderr
        assert "pid %d" % os.getpid() in r.stderr, r.stderr
        assert not os.path.exists(db)
        assert os.stat(db + "-mount").st_ino == ino
    assert run("mkfs", db).returncode == 0


def test_a_command_holding_the_lock_is_told_apart_from_a_mount(tmp_path):
    """A lock held without a record (a command changing the database)
    refuses with a message that says so, not with a mount point."""
    m = Mount(tmp_path)
    fd = os.open(m.db + "-mount", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        r = run("reown", m.db, "64222:64222", "5:5")
        assert r.returncode == 2, r.stderr
        assert "another atrium-fs holds %s-mount" % m.db in r.stderr, \
            r.stderr
    finally:
        os.close(fd)
    r = run("reown", m.db, "64222:64222", "5:5")
    assert r.returncode == 0, r.stderr
