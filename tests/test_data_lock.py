"""One atriumd per data directory: a second one on the same DATA is refused
at start, naming DATA and the first one's pid, and touches nothing of the
first's (its operator socket, its pid file, its rooms' directories); a
start after kill -9 of the first is not blocked; the operator's commands
name an atriumd they cannot reach instead of acting beside it.

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_data_lock.py
"""
import os
import signal
import subprocess

import pytest

from conftest import free_port, make_room

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="atriumd mounts FUSE: run as root")


def atriumd_cli(build, *args, timeout=60):
    """build/atriumd with args, to its end: (exit code, stdout, stderr)."""
    p = subprocess.run([os.path.join(build, "atriumd")] + list(args),
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def run_files(data):
    """What the running atriumd made in DATA/run, by path: its inode."""
    run = os.path.join(data, "run")
    return {name: os.lstat(os.path.join(run, name)).st_ino
            for name in ("atriumd.sock", "atriumd-network.pid", "lab")}


def lock_holders(data):
    """Pids holding a POSIX lock on DATA/atriumd.lock (/proc/locks)."""
    st = os.stat(os.path.join(data, "atriumd.lock"))
    want = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev),
                             st.st_ino)
    holders = set()
    with open("/proc/locks") as f:
        for line in f:
            # "1: POSIX  ADVISORY  WRITE PID MAJ:MIN:INODE 0 EOF"; a
            # waiter's line has "->" after the number.
            fields = [w for w in line.split() if w != "->"]
            if fields[5] == want:
                holders.add(int(fields[4]))
    return holders


def pids_with_open(path):
    """Pids with a descriptor open on path."""
    pids = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir("/proc/%s/fd" % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink("/proc/%s/fd/%s" % (pid, fd)) == path:
                    pids.add(int(pid))
            except OSError:
                continue
    return pids


def fs_daemons(data, room):
    """Pids of atrium-fs daemons serving room's workspace.db: those that
    gave up root, not their keepers (fs/daemon/mount_keeper.c)."""
    db = os.path.join(data, "rooms", room, "workspace.db")
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
            uid = os.stat("/proc/%s" % pid).st_uid
        except OSError:
            continue
        if "mount" in argv and db in argv and uid != 0:
            pids.append(int(pid))
    return pids


def test_a_second_atriumd_on_the_same_data_is_refused(atriumd, data_dir,
                                                      ssh_run, build):
    srv = atriumd(data_dir)
    make_room(srv, "lab")
    rc, out, err = ssh_run(srv, "lab", "echo", "one")
    assert (rc, out) == (0, "one\n"), err
    data = srv.data
    made = run_files(data)
    top = sorted(os.listdir(data))
    with open(os.path.join(data, "run", "atriumd-network.pid")) as f:
        net_pid_text = f.read()
    # The lock is the monitor's alone: not the network process's, which
    # was forked from it, nor any room's.
    lock = os.path.join(data, "atriumd.lock")
    assert lock_holders(data) == {srv.proc.pid}
    assert pids_with_open(os.path.realpath(lock)) == {srv.proc.pid}

    rc, out, err = atriumd_cli(build, "--data", data, "--listen",
                               "127.0.0.1:%d" % free_port())
    assert rc == 1, (out, err)
    assert "data directory %s is in use" % data in err, err
    assert "atriumd pid %d" % srv.proc.pid in err, err

    # The refused one made nothing, touched nothing of the first one's,
    # and the first serves on.
    assert sorted(os.listdir(data)) == top
    assert run_files(data) == made
    with open(os.path.join(data, "run", "atriumd-network.pid")) as f:
        assert f.read() == net_pid_text
    rc, out, err = atriumd_cli(build, "status", data)
    assert rc == 0 and "lab" in out, (out, err)
    rc, out, err = ssh_run(srv, "lab", "echo", "two")
    assert (rc, out) == (0, "two\n"), err
    assert len(fs_daemons(data, "lab")) == 1
    assert lock_holders(data) == {srv.proc.pid}


def test_a_start_after_kill_9_is_not_blocked(atriumd, data_dir, ssh_run,
                                             build):
    srv = atriumd(data_dir)
    make_room(srv, "lab")
    rc, out, err = ssh_run(srv, "lab", "echo", "before")
    assert (rc, out) == (0, "before\n"), err
    net = srv.network_pid()
    srv.stop(signal.SIGKILL)    # returns once the monitor is reaped
    # Its network process may outlive it for a moment: it never held the
    # lock, so the next start does not wait for it.
    srv2 = atriumd(data_dir)
    assert srv2.network_pid() != net
    assert lock_holders(srv2.data) == {srv2.proc.pid}
    rc, out, err = ssh_run(srv2, "lab", "echo", "after")
    assert (rc, out) == (0, "after\n"), err
    rc, out, err = atriumd_cli(build, "status", srv2.data)
    assert rc == 0 and "lab" in out, (out, err)


def test_a_clean_stop_leaves_no_socket_or_pid_file(atriumd, data_dir,
                                                   ssh_run):
    srv = atriumd(data_dir)
    make_room(srv, "lab")
    assert srv.stop() == 0
    run = os.path.join(srv.data, "run")
    assert not os.path.exists(os.path.join(run, "atriumd.sock"))
    assert not os.path.exists(os.path.join(run, "atriumd-network.pid"))
    # The lock file stays (nobody removes it); nobody holds it.
    assert os.path.exists(os.path.join(srv.data, "atriumd.lock"))
    assert lock_holders(srv.data) == set()


def test_commands_name_an_atriumd_they_cannot_reach(atriumd, data_dir,
                                                    ssh_run, build):
    """An atriumd whose operator socket is gone still holds DATA: status
    says so, and room delete and list refuse rather than act beside it."""
    srv = atriumd(data_dir)
    make_room(srv, "lab")
    data = srv.data
    os.unlink(os.path.join(data, "run", "atriumd.sock"))
    pid = "atriumd pid %d" % srv.proc.pid

    rc, out, err = atriumd_cli(build, "status", data)
    assert rc == 1 and pid in err and data in err, (out, err)
    assert "no atriumd running" not in err
    rc, out, err = atriumd_cli(build, "room", "delete", data, "lab")
    assert rc == 1 and pid in err and data in err, (out, err)
    rc, out, err = atriumd_cli(build, "room", "list", data)
    assert rc == 1 and pid in err, (out, err)

    assert os.path.isdir(os.path.join(data, "rooms", "lab"))
    assert os.path.isdir(os.path.join(data, "run", "lab"))
    assert lock_holders(data) == {srv.proc.pid}
    rc, out, err = ssh_run(srv, "lab", "echo", "still")
    assert (rc, out) == (0, "still\n"), err


def test_a_room_deleted_offline_holds_the_lock_meanwhile(atriumd, data_dir,
                                                         ssh_run, build):
    """With no atriumd running, room delete acts on DATA itself; it takes
    the lock for that, and leaves it free after."""
    srv = atriumd(data_dir)
    make_room(srv, "old")
    assert srv.stop() == 0
    rc, out, err = atriumd_cli(build, "room", "delete", srv.data, "old")
    assert rc == 0 and '"deleted"' in out, (out, err)
    assert not os.path.exists(os.path.join(srv.data, "rooms", "old"))
    assert lock_holders(srv.data) == set()
    srv2 = atriumd(data_dir)
    make_room(srv2, "lab")
    rc, out, err = ssh_run(srv2, "lab", "echo", "fine")
    assert (rc, out) == (0, "fine\n"), err
