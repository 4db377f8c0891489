"""Each room runs as its own sandbox uid (common/room_ids.h): two rooms
differ, a room keeps its uid across restarts, a room made before rooms had
their own uids keeps the old one, the agent's file tools and commands
create files as the room's uid, one room cannot signal another's
processes, and an exhausted range refuses new rooms with a clear reason.
"""
import os
import subprocess
import time

import pytest

from conftest import ssh_command
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


def ids_of(srv, ssh_run, room):
    """(uid, gid, user name, HOME, owner uid and gid of a new file)."""
    rc, out, err = ssh_run(srv, room, "id -u; id -g; id -un; echo $HOME; "
                           "touch f; stat -c '%u %g' f")
    assert rc == 0, err
    return tuple(out.split("\n")[:5])


def test_rooms_get_their_own_uids_and_keep_them(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir, *uid_args())
    a = ids_of(srv, ssh_run, "alpha")
    b = ids_of(srv, ssh_run, "beta")
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
    assert ids_of(srv, ssh_run, "gamma")[0] == str(BASE + 2)


def test_room_from_before_keeps_the_old_uid(build, atriumd, data_dir,
                                            ssh_run):
    """A room made when all rooms shared one uid has a workspace owned by
    it and no uid file: it keeps that uid, recorded at its first start."""
    room = os.path.join(str(data_dir), "rooms", "old")
    os.makedirs(room, mode=0o700)
    subprocess.run([os.path.join(build, "atrium-fs"), "mkfs", "--owner",
                    "%d:%d" % (LEGACY, LEGACY),
                    os.path.join(room, "workspace.db")], check=True)
    srv = atriumd(data_dir, *uid_args())
    rc, out, err = ssh_run(srv, "old", "id -u; touch x; stat -c %u x .")
    assert (rc, out) == (0, "%d\n%d\n%d\n" % (LEGACY, LEGACY, LEGACY)), err
    assert recorded(data_dir, "old") == "%d:%d\n" % (LEGACY, LEGACY)
    # A new room still starts at the range's first uid.
    assert ids_of(srv, ssh_run, "new")[0] == str(BASE)


def test_exhausted_range_refuses_a_new_room(atriumd, data_dir, ssh_run):
    srv = atriumd(data_dir, *uid_args(count=1))
    assert ids_of(srv, ssh_run, "first")[0] == str(BASE)
    rc, out, err = ssh_run(srv, "second", "true")
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
    assert ids_of(srv, ssh_run, "alpha")[0] == str(BASE)
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
    assert ids_of(srv, ssh_run, "alpha")[0] == str(BASE)
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
