"""Unmounting a FUSE filesystem on the server while rooms run commands: the
filesystem's daemon ends, whatever runs in other rooms.  A sandbox keeps no
copy of a mount it does not need (its own room's workspace aside), so no
sandbox keeps a FUSE connection alive after its mount is gone on the host.

Each test holds commands running in two other rooms, one started before the
mount and one after it (the one a copy of the mount would go with).

Run as root after `make all`: /usr/bin/python3 -m pytest -q tests/test_unmount.py
"""
import os
import shutil
import signal
import subprocess
import time

import pytest

from conftest import (BUILD_DIR, SSH_OPTS, alive, make_room, mounts_under,
                      ssh_command)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="FUSE mounts need root"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse"),
]

# Long enough that a daemon kept alive by a copy of its mount outlives every
# wait below by far; the clients are killed (and their commands with them)
# at the end of each test.
SLEEP = 120
# How long a daemon may take to exit once its mount is gone.  It is given a
# little more than the second it should take, for a loaded test machine.
GONE_WITHIN = 3


def wait_gone(pid, timeout):
    end = time.time() + timeout
    while time.time() < end:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


def sleeper_pids(seconds):
    want = b"sleep\x00%d\x00" % seconds
    pids = []
    for entry in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                if f.read() == want:
                    pids.append(int(entry))
        except (OSError, ValueError):
            continue
    return pids


class Command:
    """`sleep SECONDS` running in a room (made first, in the chat), started
    through ssh; ended by stop() (the client leaving kills it)."""

    def __init__(self, srv, room, seconds):
        self.seconds = seconds
        make_room(srv, room)
        self.proc = subprocess.Popen(
            ssh_command(srv, room, "echo started; exec sleep %d" % seconds),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self.proc.stdout.readline() == b"started\n", \
            self.proc.stderr.read()
        end = time.time() + 10
        while time.time() < end and not sleeper_pids(seconds):
            time.sleep(0.05)
        assert sleeper_pids(seconds)

    def running(self):
        return self.proc.poll() is None and bool(sleeper_pids(self.seconds))

    def stop(self):
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def commands():
    """commands(srv, room, seconds) -> a running Command, stopped at the
    end of the test."""
    started = []

    def start(srv, room, seconds):
        c = Command(srv, room, seconds)
        started.append(c)
        return c

    yield start
    for c in started:
        c.stop()


def atrium_fs(*args):
    return subprocess.run([os.path.join(BUILD_DIR, "atrium-fs"), *args],
                          capture_output=True, text=True, timeout=60)


def holder_pid(db):
    """The pid recorded in DB-mount by the daemon serving db, or 0."""
    try:
        with open(db + "-mount") as f:
            return int(f.readline().strip() or 0)
    except (OSError, ValueError):
        return 0


def new_workspace(tmp_path, mount=False):
    """A fresh database tmp_path/w.db and an empty directory tmp_path/w;
    mounted there when mount is set.  (db, mnt, the daemon's pid or 0)."""
    db, mnt = str(tmp_path / "w.db"), str(tmp_path / "w")
    os.mkdir(mnt)
    assert atrium_fs("mkfs", db).returncode == 0
    if not mount:
        return db, mnt, 0
    r = atrium_fs("mount", db, mnt)
    assert r.returncode == 0, r.stderr
    return db, mnt, holder_pid(db)


def mount_dev(path):
    """major:minor of the mount at path in our namespace, or None."""
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        devs = [line.split()[2] for line in f if line.split()[4] == path]
    return devs[-1] if devs else None


def descendants(root):
    """Pids of root's descendants (other tests may run on the host: only
    this server's processes count)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def namespaces_holding(dev, point, root):
    """root's descendants whose mount namespace still has dev mounted at
    point.  Both, because a freed device number is soon reused by another
    mount, which processes in the host's namespace (atriumd's network
    process, the agents) then see."""
    pids = []
    for pid in descendants(root):
        try:
            with open("/proc/%d/mountinfo" % pid) as f:
                if any(line.split()[2] == dev and line.split()[4] == point
                       for line in f):
                    pids.append(pid)
        except OSError:
            continue
    return pids


def lazy_unmount(path):
    if mounts_under(path):
        subprocess.run(["fusermount3", "-u", "-z", path], capture_output=True)


def test_hand_mount_ends_its_daemon_while_rooms_run(atriumd, data_dir,
                                                    commands, tmp_path):
    srv = atriumd(data_dir)
    before = commands(srv, "one", SLEEP + 1)
    db, mnt = str(tmp_path / "b.db"), str(tmp_path / "b")
    os.mkdir(mnt)
    assert atrium_fs("mkfs", db).returncode == 0
    r = atrium_fs("mount", db, mnt)
    assert r.returncode == 0, r.stderr
    try:
        pid = holder_pid(db)
        assert pid > 0
        after = commands(srv, "two", SLEEP + 2)
        with open(os.path.join(mnt, "kept.txt"), "w") as f:
            f.write("kept\n")
        r = subprocess.run(["fusermount3", "-u", mnt], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
        assert wait_gone(pid, GONE_WITHIN), \
            "atrium-fs outlived its unmount while rooms run commands"
        r = atrium_fs("mount", db, mnt)
        assert r.returncode == 0, r.stderr
        with open(os.path.join(mnt, "kept.txt")) as f:
            assert f.read() == "kept\n"
        assert before.running() and after.running()
    finally:
        lazy_unmount(mnt)


def test_idle_room_stops_and_restarts_while_another_room_runs(
        atriumd, data_dir, commands, ssh_run):
    srv = atriumd(data_dir, "--idle-timeout", "3")
    before = commands(srv, "one", SLEEP + 3)
    make_room(srv, "sleepy")
    rc, out, err = ssh_run(srv, "sleepy", "echo one > n.txt")
    assert rc == 0, err
    db = os.path.join(srv.data, "rooms", "sleepy", "workspace.db")
    run = os.path.join(srv.data, "run", "sleepy")
    fs_pid = holder_pid(db)
    assert fs_pid > 0
    dev = mount_dev(os.path.join(run, "workspace"))
    assert dev
    after = commands(srv, "two", SLEEP + 4)
    # The room must still be up when the second command starts, or the
    # test would prove nothing.
    assert mounts_under(run) and alive(fs_pid)
    end = time.time() + 20
    while time.time() < end and "room sleepy: idle; stopping" \
            not in srv.read_log():
        time.sleep(0.1)
    assert "room sleepy: idle; stopping" in srv.read_log()
    assert wait_gone(fs_pid, GONE_WITHIN + 5), \
        "the stopped room's atrium-fs is still alive"
    assert not mounts_under(run)
    # Nothing keeps the stopped workspace: no namespace holds a copy.
    assert not namespaces_holding(dev, os.path.join(run, "workspace"),
                                  srv.proc.pid)
    rc, out, err = ssh_run(srv, "sleepy", "cat n.txt")
    assert (rc, out) == (0, "one\n"), err + srv.read_log()
    assert before.running() and after.running()


@pytest.mark.skipif(not shutil.which("sshfs"), reason="needs sshfs")
def test_sshfs_ends_when_unmounted_while_another_room_runs(
        atriumd, data_dir, commands, tmp_path):
    srv = atriumd(data_dir)
    before = commands(srv, "one", SLEEP + 5)
    make_room(srv, "files")
    mnt = str(tmp_path / "sshfs")
    os.mkdir(mnt)
    fs = subprocess.Popen(["sshfs", "-f", "-p", str(srv.port), "-o",
                           "IdentityFile=" + srv.keys["alice"]] + SSH_OPTS
                          + ["files@127.0.0.1:", mnt],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        end = time.time() + 20
        while time.time() < end and not mounts_under(mnt):
            assert fs.poll() is None, fs.stderr.read()
            time.sleep(0.1)
        assert mounts_under(mnt)
        after = commands(srv, "two", SLEEP + 6)
        r = subprocess.run(["fusermount3", "-u", mnt], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
        assert wait_gone(fs.pid, GONE_WITHIN), \
            "sshfs outlived its unmount while rooms run commands"
        assert before.running() and after.running()
    finally:
        lazy_unmount(mnt)
        if fs.poll() is None:
            fs.kill()
        fs.wait()


def test_refused_mount_names_the_namespace_that_keeps_the_old_one(tmp_path):
    db, mnt, pid = new_workspace(tmp_path, mount=True)
    # A process in a mount namespace of its own, with a private copy of
    # the mount (as a container or a private-/tmp service would hold).
    keeper = subprocess.Popen(["unshare", "-m", "--propagation", "private",
                               "sleep", str(SLEEP + 7)])
    try:
        end = time.time() + 10
        while time.time() < end and keeper.pid not in sleeper_pids(SLEEP + 7):
            time.sleep(0.05)
        r = subprocess.run(["fusermount3", "-u", mnt], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
        assert not wait_gone(pid, 0.5)
        r = atrium_fs("mount", db, mnt)
        assert r.returncode != 0
        assert "still held by atrium-fs pid %d" % pid in r.stderr
        assert "its mount at %s is gone" % os.path.realpath(mnt) in r.stderr
        assert "pid %d (sleep)" % keeper.pid in r.stderr
        assert "another mount namespace" in r.stderr
        assert "kill %d" % pid in r.stderr
        assert "unmount it first" not in r.stderr
        # Once the copy goes, the daemon ends and the database mounts again.
        keeper.kill()
        keeper.wait()
        assert wait_gone(pid, GONE_WITHIN)
        r = atrium_fs("mount", db, mnt)
        assert r.returncode == 0, r.stderr
    finally:
        if keeper.poll() is None:
            keeper.kill()
            keeper.wait()
        lazy_unmount(mnt)
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)


# A stand-in for a killed daemon that is still ending: it holds DB-mount's
# flock as a daemon does, its main thread exits (and reads as a zombie), and
# another thread lives on for HOLD_S seconds, as a thread of a killed daemon
# does while its fsync of a big WAL finishes.
ENDING_HOLDER_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

static void *linger(void *arg)
{
	sleep((unsigned)atoi(arg));
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	FILE *f = fopen(argv[1], "w");

	if (argc != 3 || !f || flock(fileno(f), LOCK_EX) < 0)
		return 1;
	fprintf(f, "%ld\n/nowhere\n", (long)getpid());
	fflush(f);
	if (write(1, "held\n", 5) != 5)
		return 1;
	if (pthread_create(&t, NULL, linger, argv[2]) != 0)
		return 1;
	pthread_exit(NULL);
}
"""


def test_mount_waits_for_a_killed_daemon_that_is_still_ending(tmp_path):
    src, exe = tmp_path / "holder.c", tmp_path / "holder"
    src.write_text(ENDING_HOLDER_C)
    subprocess.run(["cc", "-O1", "-pthread", "-o", str(exe), str(src)],
                   check=True)
    db, mnt, _ = new_workspace(tmp_path)
    hold_s = 2
    holder = subprocess.Popen([str(exe), db + "-mount", str(hold_s)],
                              stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"held\n"
        end = time.time() + 10
        while time.time() < end and alive_leader(holder.pid):
            time.sleep(0.02)
        assert not alive_leader(holder.pid) and alive(holder.pid)
        start = time.time()
        r = atrium_fs("mount", db, mnt)
        waited = time.time() - start
        assert r.returncode == 0, r.stderr
        assert "waiting for atrium-fs pid %d, which is ending" % holder.pid \
            in r.stderr
        assert not alive(holder.pid)
        assert waited < hold_s + 10
        with open(os.path.join(mnt, "f"), "w") as f:
            f.write("mounted")
    finally:
        lazy_unmount(mnt)
        holder.kill()
        holder.wait()
    # A holder that is not ending is not waited for: the refusal is at once.
    # (The daemon just unmounted keeps the lock until its process ends.)
    end = time.time() + 60
    while time.time() < end and subprocess.run(
            ["flock", "-n", db + "-mount", "true"]).returncode != 0:
        time.sleep(0.02)
    live = subprocess.Popen(["flock", db + "-mount", "sleep", "30"])
    try:
        end = time.time() + 10
        while time.time() < end and subprocess.run(
                ["flock", "-n", db + "-mount", "true"]).returncode == 0:
            time.sleep(0.02)
        start = time.time()
        r = atrium_fs("mount", db, mnt)
        assert r.returncode != 0
        assert "waiting" not in r.stderr
        assert time.time() - start < 5
    finally:
        live.kill()
        live.wait()


def alive_leader(pid):
    """Whether pid's main thread runs (not a zombie)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_mount_right_after_unmount_waits_for_the_closing_daemon(tmp_path):
    # After a big write that nobody synced, the daemon whose mount ended
    # still commits it and copies its log into the database, a second or
    # more; a mount at once waits for it instead of blaming a copy of the
    # mount in another namespace, and then shows every byte.
    db, mnt, old = new_workspace(tmp_path, mount=True)
    block = bytes(range(256)) * 4096
    try:
        with open(os.path.join(mnt, "big"), "wb") as f:
            for _ in range(300):
                f.write(block)
        r = subprocess.run(["fusermount3", "-u", mnt], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
        r = atrium_fs("mount", db, mnt)
        assert r.returncode == 0, r.stderr
        assert "another mount namespace" not in r.stderr
        assert not alive(old)
        assert os.path.getsize(os.path.join(mnt, "big")) == 300 * len(block)
        with open(os.path.join(mnt, "big"), "rb") as f:
            f.seek(299 * len(block))
            assert f.read() == block
    finally:
        lazy_unmount(mnt)
        if old and alive(old):
            os.kill(old, signal.SIGKILL)


CLOSING_HOLDER_PY = r"""
import fcntl, os, sys, time
f = open(sys.argv[1], "w")
fcntl.flock(f, fcntl.LOCK_EX)
f.write("%d\n/nowhere\n" % os.getpid())
f.flush()
print("held", flush=True)
time.sleep(0.5)
f.write("closing\n")
f.flush()
time.sleep(float(sys.argv[2]))
"""


def test_mount_waits_for_a_holder_that_says_it_is_closing(tmp_path):
    # The lock file's protocol alone: a holder whose recorded mount is not
    # a mount here, and that says "closing" only half a second in (as a
    # daemon does once it sees its mount end), is waited for, with a line
    # saying so; the mount goes on once it lets go.
    db, mnt, _ = new_workspace(tmp_path)
    hold_s = 2
    holder = subprocess.Popen(["/usr/bin/python3", "-c", CLOSING_HOLDER_PY,
                               db + "-mount", str(hold_s)],
                              stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"held\n"
        start = time.time()
        r = atrium_fs("mount", db, mnt)
        waited = time.time() - start
        assert r.returncode == 0, r.stderr
        assert ("waiting for atrium-fs pid %d, which is ending (unmounted, "
                "closing the database)" % holder.pid) in r.stderr
        assert holder.poll() is not None
        assert hold_s <= waited < hold_s + 10
        with open(os.path.join(mnt, "f"), "w") as f:
            f.write("mounted")
    finally:
        lazy_unmount(mnt)
        holder.kill()
        holder.wait()
