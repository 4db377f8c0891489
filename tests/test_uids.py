"""Each room runs as its own sandbox uid (common/room_ids.h): two rooms
differ, a room keeps its uid across restarts, a room made before rooms had
their own uids gets one of its own, the agent's file tools and commands
create files as the room's uid, one room cannot signal another's
processes, and an exhausted range refuses new rooms with a clear reason.
"""
import os
import sqlite3
import subprocess
import time

import pytest

from conftest import make_room, ssh_command
from model_server import Reply, ToolCall

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")

BASE = 3100000          # far from every other test's uids
LEGACY = 64222          # the single uid of every room before


def uid_args(count=8):
    return ("--sandbox-uid-base", str(BASE), "--sandbox-uid-count",
            str(count))


def recorded(data, room):
    with open(os.path.join(str(data), "rooms", room, "uid")) as f:
        return f.read()


def ids_of(srv, ssh_run, room, new=False):
    """(uid, gid, user name, HOME, owner uid and gid of a new file); a new
    room is made first, in the chat."""
    if new:
        make_room(srv, room)
    rc, out, err = ssh_run(srv, room, "id -u; id -g; id -un; echo $HOME; "
                           "touch f; stat -c '%u %g' f")
    assert rc == 0, err
    return tuple(out.split("\n")[:5])


def test_rooms_get_their_own_uids_and_keep_them(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir, *uid_args())
    a = ids_of(srv, ssh_run, "alpha", new=True)
    b = ids_of(srv, ssh_run, "beta", new=True)
    assert a == (str(BASE), str(BASE), "atrium", "/workspace",
                 "%d %d" % (BASE, BASE))
    assert b == (str(BASE + 1), str(BASE + 1), "atrium", "/workspace",
                 "%d %d" % (BASE + 1, BASE + 1))
    assert recorded(data_dir, "alpha") == "%d:%d\n" % (BASE, BASE)
    # Each room's run directory lets in its own group only.
    for room, gid in (("alpha", BASE), ("beta", BASE + 1)):
        st = os.stat(os.path.join(str(data_dir), "run", room))
        assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (0, gid, 0o710)
    srv.stop()
    # After a restart, in the other order, each keeps its own.
    srv = atriumd(data_dir, *uid_args())
    assert ids_of(srv, ssh_run, "beta")[:2] == (str(BASE + 1),) * 2
    assert ids_of(srv, ssh_run, "alpha")[:2] == (str(BASE),) * 2
    # A third room takes the lowest free one.
    assert ids_of(srv, ssh_run, "gamma", new=True)[0] == str(BASE + 2)


def make_old_room(build, data_dir, name, tmp_path, record=False):
    """A room as made when all rooms shared one uid: a workspace whose
    files and a snapshot are that uid's, and no uid file (or, with record,
    one that records the shared uid, as a start since the upgrade did)."""
    fs = os.path.join(build, "atrium-fs")
    room = os.path.join(str(data_dir), "rooms", name)
    db = os.path.join(room, "workspace.db")
    mnt = tmp_path / ("mnt-" + name)
    os.makedirs(room, mode=0o700)
    mnt.mkdir()
    subprocess.run([fs, "mkfs", "--owner", "%d:%d" % (LEGACY, LEGACY), db],
                   check=True)
    subprocess.run([fs, "mount", db, str(mnt)], check=True)
    try:
        (mnt / "src").mkdir()
        (mnt / "src" / "a.c").write_text("int a;\n")
        for p in (mnt / "src", mnt / "src" / "a.c"):
            os.chown(p, LEGACY, LEGACY)
        subprocess.run([fs, "snapshot", db, "before"], check=True)
    finally:
        subprocess.run(["fusermount3", "-u", str(mnt)], check=True)
    deadline = time.time() + 10
    while os.path.exists(db + "-mount") and time.time() < deadline:
        time.sleep(0.05)
    if record:
        with open(os.path.join(room, "uid"), "w") as f:
            f.write("%d:%d\n" % (LEGACY, LEGACY))
    return db


def owners(db):
    """{(uid, gid)} of every inode, live and in snapshots."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return set(con.execute("SELECT uid, gid FROM inodes UNION "
                               "SELECT uid, gid FROM snap_inodes"))
    finally:
        con.close()


def test_rooms_from_before_get_their_own_uids(build, atriumd, data_dir,
                                             ssh_run, tmp_path):
    """Rooms made when all rooms shared one uid (with no uid file, or with
    the shared uid recorded) each get a uid of their own at their next
    start, and their files, snapshots included, go with them: one such
    room can no longer signal or trace another's commands."""
    old = make_old_room(build, data_dir, "old", tmp_path)
    older = make_old_room(build, data_dir, "older", tmp_path, record=True)
    srv = atriumd(data_dir, *uid_args())
    got = {}
    for name in ("old", "older"):
        rc, out, err = ssh_run(srv, name, "id -u; stat -c '%u %g' . src "
                               "src/a.c; cat src/a.c")
        assert rc == 0, err
        lines = out.split("\n")
        got[name] = lines[0]
        assert lines[1:4] == ["%s %s" % (lines[0], lines[0])] * 3, out
        assert lines[4] == "int a;"
        assert recorded(data_dir, name) == "%s:%s\n" % (lines[0], lines[0])
        assert not os.path.exists(os.path.join(str(data_dir), "rooms", name,
                                               "uid.reown"))
    assert sorted(got.values()) == [str(BASE), str(BASE + 1)]
    # Nothing in either workspace, snapshots included, is the shared uid's.
    assert owners(old) == {(int(got["old"]),) * 2}
    assert owners(older) == {(int(got["older"]),) * 2}
    assert "gets a sandbox uid of its own" in srv.read_log()
    # A new room takes the next free uid.
    assert ids_of(srv, ssh_run, "new", new=True)[0] == str(BASE + 2)


def test_exhausted_range_refuses_a_new_room(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir, *uid_args(count=1))
    assert ids_of(srv, ssh_run, "first", new=True)[0] == str(BASE)
    # The chat that would make it is refused.
    rc, out, err = ssh_run(srv, "second", opts=["-T"], input="")
    assert rc != 0
    assert "no sandbox uid is free for a new room" in err, err
    assert "sandbox-uid-count" in err, err
    assert not os.path.exists(os.path.join(str(data_dir), "rooms", "second"))
    # The room that has one still works.
    assert ids_of(srv, ssh_run, "first")[0] == str(BASE)


def _pid_of(uid, comm, timeout=15):
    """The host pid of a process of uid named comm."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/status" % pid) as f:
                    status = f.read()
            except OSError:
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines()
                          if ":" in line)
            if fields.get("Name", "").strip() == comm and \
                    fields.get("Uid", "").split()[0] == str(uid):
                return int(pid)
        time.sleep(0.1)
    raise AssertionError("no %s of uid %d" % (comm, uid))


def test_a_room_cannot_signal_another(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir, *uid_args())
    assert ids_of(srv, ssh_run, "alpha", new=True)[0] == str(BASE)
    make_room(srv, "beta")
    sleeper = subprocess.Popen(ssh_command(srv, "beta", "exec sleep 300"),
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        pid = _pid_of(BASE + 1, "sleep")
        # From alpha's sandbox: not in its pid namespace at all.
        rc, out, err = ssh_run(srv, "alpha", "kill -0 %d" % pid)
        assert rc != 0, (out, err)
        # Were they in one namespace, the uids still keep them apart:
        # alpha's uid may not signal it, beta's may.
        as_uid = ["setpriv", "--reuid=%d" % BASE, "--regid=%d" % BASE,
                  "--clear-groups", "/bin/sh", "-c", "kill -0 %d" % pid]
        p = subprocess.run(as_uid, capture_output=True, text=True)
        assert p.returncode != 0 and "not permitted" in p.stderr, p.stderr
        as_uid[1:3] = ["--reuid=%d" % (BASE + 1), "--regid=%d" % (BASE + 1)]
        p = subprocess.run(as_uid, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
    finally:
        sleeper.kill()
        sleeper.wait()


def test_agent_files_belong_to_the_room_uid(atriumd, data_dir, ssh_run,
                                            model_server):
    from test_e2e import Room, of_type
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-test-uids")
    srv = atriumd(data_dir, *uid_args(), "--provider", "anthropic",
                  "--model-url", model_server.url, "--model", "test-model",
                  "--approval", "allow_all", env=env)
    assert ids_of(srv, ssh_run, "alpha", new=True)[0] == str(BASE)
    make_room(srv, "beta")
    model_server.script(
        Reply("Writing.", tool_calls=[
            ToolCall("write", {"path": "by-tool.txt", "content": "t\n"}),
            ToolCall("bash", {"command": "echo c > by-bash.txt"})]),
        Reply("Done."))
    r = Room(srv, "beta")
    try:
        r.expect(of_type("welcome"))
        r.send(type="prompt", text="write them")
        for _ in range(2):
            assert r.expect(of_type("tool_result"))["status"] == "ok"
        r.until_turn_end()
    finally:
        r.close()
    rc, out, err = ssh_run(srv, "beta", "stat -c '%u %g' by-tool.txt "
                           "by-bash.txt")
    want = "%d %d\n" % (BASE + 1, BASE + 1)
    assert (rc, out) == (0, want * 2), err
