"""atrium-fs on real FUSE mounts: what a user of the mounted workspace sees.

Run as root: /usr/bin/python3 -m pytest -q tests/test_fs.py
The binary is $ATRIUM_BUILD/atrium-fs (ATRIUM_BUILD defaults to build).
Every mount is unmounted at teardown, also when a test fails.
"""
import contextlib
import ctypes
import errno
import hashlib
import os
import pathlib
import shutil
import signal
import sqlite3
import stat
import struct
import subprocess
import tempfile
import time

import pytest

from conftest import alive

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("ATRIUM_BUILD", "build")
BIN = os.path.join(BUILD if os.path.isabs(BUILD) else os.path.join(ROOT, BUILD),
                   "atrium-fs")
NOBODY = 64222

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="FUSE mounts need root"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no /dev/fuse"),
]


def run(*args, **kw):
    return subprocess.run([BIN, *args], capture_output=True, text=True,
                          timeout=60, **kw)


def is_mounted(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def mount_pid(db):
    try:
        with open(db + "-mount") as f:
            return int(f.readline().strip() or 0)
    except (OSError, ValueError):
        return 0


def wait_gone(pid, timeout=15):
    end = time.time() + timeout
    while pid and time.time() < end:
        try:
            # Reap it if it is our child (foreground mounts).
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        if not alive(pid):
            return True
        time.sleep(0.02)
    return not pid


# The uid and gid a confined daemon serves as (-o run_as), as atriumd's
# rooms' daemons do: one no account on the host has.
RUN_AS = "3000000001:3000000001"


def confined(tmp):
    """-o run_as for a database in tmp, which the daemon's gid must be able
    to search (as a room's directory lets the room's group)."""
    os.chown(tmp, 0, int(RUN_AS.split(":")[1]))
    os.chmod(tmp, 0o710)
    return "run_as=" + RUN_AS


class Mount:
    """One atrium-fs database and its mount point under a tmp dir."""

    def __init__(self, tmp, owner=None, opts=None):
        self.opts = ["-o", opts] if opts else []
        self.db = str(tmp / "workspace.db")
        self.dir = str(tmp / "mnt")
        os.makedirs(self.dir, exist_ok=True)
        args = ["mkfs"] + (["--owner", owner] if owner else []) + [self.db]
        r = run(*args)
        assert r.returncode == 0, r.stderr
        self.pid = 0

    def mount(self, env=None):
        """Mount; env adds to the daemon's environment (a preloaded
        library, say)."""
        r = run("mount", *self.opts, self.db, self.dir,
                env=dict(os.environ, **env) if env else None)
        assert r.returncode == 0, r.stderr
        assert is_mounted(self.dir)
        self.pid = mount_pid(self.db)
        assert self.pid > 0
        return self

    def unmount(self):
        if is_mounted(self.dir):
            subprocess.run(["fusermount3", "-u", self.dir], capture_output=True)
            if is_mounted(self.dir):
                subprocess.run(["fusermount3", "-uz", self.dir],
                               capture_output=True)
        if self.pid and not wait_gone(self.pid):
            os.kill(self.pid, signal.SIGKILL)
            wait_gone(self.pid)
        self.pid = 0

    def remount(self):
        self.unmount()
        return self.mount()

    def p(self, *parts):
        return os.path.join(self.dir, *parts)


@pytest.fixture
def fs(tmp_path):
    m = Mount(tmp_path).mount()
    try:
        yield m
    finally:
        m.unmount()


@pytest.fixture
def open_tmp():
    """A tmp dir other users can traverse (pytest's own is 0700)."""
    d = tempfile.mkdtemp(prefix="atrium-fs-test-")
    os.chmod(d, 0o755)
    try:
        yield pathlib.Path(d)
    finally:
        mnt = os.path.join(d, "mnt")
        if is_mounted(mnt):
            subprocess.run(["fusermount3", "-uz", mnt], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


def fsck_clean(m):
    r = run("fsck", m.db)
    assert r.returncode == 0, r.stdout + r.stderr


def renameat2(old, new, flags):
    libc = ctypes.CDLL(None, use_errno=True)
    AT_FDCWD = -100
    rc = libc.renameat2(AT_FDCWD, old.encode(), AT_FDCWD, new.encode(),
                        ctypes.c_uint(flags))
    return 0 if rc == 0 else ctypes.get_errno()


def test_mkfs_refuses_existing_database(tmp_path):
    m = Mount(tmp_path)
    r = run("mkfs", m.db)
    assert r.returncode != 0
    assert "already exists" in r.stderr


def test_missing_database_suggests_mkfs(tmp_path):
    os.makedirs(tmp_path / "mnt")
    r = run("mount", str(tmp_path / "nope.db"), str(tmp_path / "mnt"))
    assert r.returncode != 0
    assert "does not exist" in r.stderr and "mkfs" in r.stderr
    assert not is_mounted(tmp_path / "mnt")


def test_small_files_append_and_big_random_file(fs, tmp_path):
    with open(fs.p("small"), "w") as f:
        f.write("hello\n")
    with open(fs.p("small"), "a") as f:
        f.write("world\n")
    with open(fs.p("small")) as f:
        assert f.read() == "hello\nworld\n"
    data = os.urandom(20 * 1024 * 1024)
    src = tmp_path / "big"
    src.write_bytes(data)
    subprocess.run(["cp", str(src), fs.p("big")], check=True)
    with open(fs.p("big"), "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == \
            hashlib.sha256(data).hexdigest()
    # many small appends, as a log writer does
    with open(fs.p("log"), "ab") as f:
        for i in range(2000):
            f.write(b"line %d\n" % i)
    with open(fs.p("log"), "rb") as f:
        assert f.read().splitlines()[-1] == b"line 1999"
    assert os.stat(fs.p("big")).st_size == len(data)
    fs.remount()
    with open(fs.p("big"), "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == \
            hashlib.sha256(data).hexdigest()


def test_directories(fs):
    os.makedirs(fs.p("a", "b", "c"))
    assert os.stat(fs.p("a")).st_nlink == 3
    assert sorted(os.listdir(fs.p("a"))) == ["b"]
    with pytest.raises(OSError) as e:
        os.rmdir(fs.p("a"))
    assert e.value.errno == errno.ENOTEMPTY
    with pytest.raises(FileExistsError):
        os.mkdir(fs.p("a"))
    with pytest.raises(FileExistsError):
        os.open(fs.p("a", "b"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    os.rmdir(fs.p("a", "b", "c"))
    assert os.stat(fs.p("a", "b")).st_nlink == 2
    names = [f"f{i:03d}" for i in range(300)]
    for n in names:
        open(fs.p("a", n), "w").close()
    assert sorted(os.listdir(fs.p("a"))) == sorted(names + ["b"])
    with pytest.raises(OSError) as e:
        open(fs.p("x" * 256), "w")
    assert e.value.errno == errno.ENAMETOOLONG
    open(fs.p("y" * 255), "w").close()


def test_readdir_while_deleting(fs):
    os.mkdir(fs.p("d"))
    for i in range(500):
        open(fs.p("d", f"n{i:04d}"), "w").close()
    # rm -r style: delete while listing; every entry seen once, none left
    seen = []
    with os.scandir(fs.p("d")) as it:
        for e in it:
            seen.append(e.name)
            os.unlink(e.path)
    assert sorted(seen) == [f"n{i:04d}" for i in range(500)]
    assert os.listdir(fs.p("d")) == []


def test_symlinks_and_hard_links(fs):
    with open(fs.p("target"), "w") as f:
        f.write("t")
    os.symlink("target", fs.p("link"))
    assert os.readlink(fs.p("link")) == "target"
    assert stat.S_ISLNK(os.lstat(fs.p("link")).st_mode)
    with open(fs.p("link")) as f:
        assert f.read() == "t"
    os.link(fs.p("target"), fs.p("hard"))
    assert os.stat(fs.p("target")).st_nlink == 2
    assert os.stat(fs.p("hard")).st_ino == os.stat(fs.p("target")).st_ino
    os.unlink(fs.p("target"))
    assert os.stat(fs.p("hard")).st_nlink == 1
    with open(fs.p("hard")) as f:
        assert f.read() == "t"
    os.mkfifo(fs.p("fifo"))
    assert stat.S_ISFIFO(os.stat(fs.p("fifo")).st_mode)


def test_rename_cases(fs):
    for n in ("a", "b"):
        with open(fs.p(n), "w") as f:
            f.write(n)
    os.rename(fs.p("a"), fs.p("b"))
    assert not os.path.exists(fs.p("a"))
    with open(fs.p("b")) as f:
        assert f.read() == "a"
    os.mkdir(fs.p("d1"))
    os.mkdir(fs.p("d2"))
    open(fs.p("d2", "x"), "w").close()
    with pytest.raises(OSError) as e:
        os.rename(fs.p("d1"), fs.p("d2"))
    assert e.value.errno == errno.ENOTEMPTY
    os.mkdir(fs.p("empty"))
    os.rename(fs.p("d2"), fs.p("empty"))
    assert os.listdir(fs.p("empty")) == ["x"]
    with pytest.raises(OSError) as e:
        os.rename(fs.p("b"), fs.p("empty"))
    assert e.value.errno == errno.EISDIR
    with pytest.raises(OSError) as e:
        os.rename(fs.p("empty"), fs.p("empty", "sub"))
    assert e.value.errno == errno.EINVAL
    # a directory moved to another parent: link counts follow
    os.rename(fs.p("empty"), fs.p("d1", "moved"))
    assert os.stat(fs.p("d1")).st_nlink == 3
    RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2
    with open(fs.p("c"), "w") as f:
        f.write("c")
    assert renameat2(fs.p("c"), fs.p("b"), RENAME_NOREPLACE) == errno.EEXIST
    assert renameat2(fs.p("c"), fs.p("b"), RENAME_EXCHANGE) == 0
    with open(fs.p("b")) as f:
        assert f.read() == "c"
    with open(fs.p("c")) as f:
        assert f.read() == "a"


def test_unlinked_open_file_stays_readable(fs):
    with open(fs.p("f"), "w") as f:
        f.write("still here")
    fd = os.open(fs.p("f"), os.O_RDWR)
    try:
        os.unlink(fs.p("f"))
        assert not os.path.exists(fs.p("f"))
        os.lseek(fd, 0, os.SEEK_SET)
        assert os.read(fd, 100) == b"still here"
        os.write(fd, b"!")
        assert os.fstat(fd).st_nlink == 0
    finally:
        os.close(fd)
    fs.unmount()
    fsck_clean(fs)


def test_truncate_chmod_utime_statfs(fs):
    with open(fs.p("f"), "wb") as f:
        f.write(b"x" * 100000)
    os.truncate(fs.p("f"), 10)
    os.truncate(fs.p("f"), 200000)
    with open(fs.p("f"), "rb") as f:
        d = f.read()
    assert d[:10] == b"x" * 10 and d[10:] == bytes(200000 - 10)
    with open(fs.p("f"), "r+b") as f:
        f.truncate(5)
    assert os.stat(fs.p("f")).st_size == 5
    fd = os.open(fs.p("f"), os.O_WRONLY | os.O_TRUNC)
    os.close(fd)
    assert os.stat(fs.p("f")).st_size == 0
    os.chmod(fs.p("f"), 0o640)
    assert stat.S_IMODE(os.stat(fs.p("f")).st_mode) == 0o640
    os.utime(fs.p("f"), ns=(1_000_000_123, 2_000_000_456))
    st = os.stat(fs.p("f"))
    assert st.st_atime_ns == 1_000_000_123 and st.st_mtime_ns == 2_000_000_456
    os.utime(fs.p("f"))
    assert abs(os.stat(fs.p("f")).st_mtime - time.time()) < 60
    os.chown(fs.p("f"), 123, 456)
    st = os.stat(fs.p("f"))
    assert (st.st_uid, st.st_gid) == (123, 456)
    sv = os.statvfs(fs.dir)
    assert sv.f_blocks > 0 and sv.f_namemax == 255
    r = subprocess.run(["df", fs.dir], capture_output=True, text=True)
    assert r.returncode == 0 and "atrium-fs" in r.stdout
    os.setxattr(fs.p("f"), "user.note", b"hi")
    assert os.getxattr(fs.p("f"), "user.note") == b"hi"
    assert "user.note" in os.listxattr(fs.p("f"))


def test_selinux_labels_and_acls_are_not_kept(fs):
    # As on a filesystem without labels (and on any FUSE mount under
    # SELinux) and without ACLs: refused, so that ls -l stops asking for
    # them one file at a time.
    p = fs.p("f")
    open(p, "w").close()
    # A valid access ACL (version 2: user::rw-, group::r--, other::r--).
    acl = struct.pack("<I" + "HHI" * 3, 2, 0x01, 6, 0xFFFFFFFF,
                      0x04, 4, 0xFFFFFFFF, 0x20, 4, 0xFFFFFFFF)
    for call in (lambda: os.getxattr(p, "security.selinux"),
                 lambda: os.setxattr(p, "security.selinux", b"x"),
                 lambda: os.removexattr(p, "security.selinux"),
                 lambda: os.getxattr(p, "system.posix_acl_access"),
                 lambda: os.getxattr(fs.dir, "system.posix_acl_default"),
                 lambda: os.setxattr(p, "system.posix_acl_access", acl)):
        with pytest.raises(OSError) as e:
            call()
        assert e.value.errno == errno.EOPNOTSUPP
    os.setxattr(p, "security.note", b"kept")
    assert os.getxattr(p, "security.note") == b"kept"
    assert os.listxattr(p) == ["security.note"]
    r = subprocess.run(["ls", "-l", fs.dir], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "" and " f\n" in r.stdout


def daemon_wchar(pid):
    """Bytes the process has handed to write calls so far."""
    with open("/proc/%d/io" % pid) as f:
        return int(next(l for l in f if l.startswith("wchar:")).split()[1])


def test_deleting_a_big_file_does_not_write_it_again(fs):
    # Debian's SQLite overwrites freed pages unless told not to: deleting
    # a file then wrote its whole size into the WAL.
    with open(fs.p("big"), "wb") as f:
        f.write(os.urandom(1 << 20) * 64)
        os.fsync(f.fileno())
    subprocess.run(["sync"])
    # The committer copies the log into the database in the background:
    # wait until that is done, or its copy would be counted as the delete's.
    wal = fs.db + "-wal"
    size, deadline = -1, time.time() + 20
    while time.time() < deadline:
        now = os.stat(fs.db).st_size + os.path.getsize(wal)
        if now == size:
            break
        size = now
        time.sleep(1)
    before = daemon_wchar(fs.pid)
    os.unlink(fs.p("big"))
    with open(fs.p("after"), "wb") as f:   # an fsync commits the delete
        f.write(b"x")
        os.fsync(f.fileno())
    time.sleep(1)                          # and its background checkpoint
    wrote = daemon_wchar(fs.pid) - before
    assert wrote < 8 << 20, "deleting 64 MiB wrote %d bytes" % wrote


def test_persistence_across_remount(fs):
    os.makedirs(fs.p("keep", "deep"))
    with open(fs.p("keep", "deep", "file"), "w") as f:
        f.write("persisted")
    os.symlink("deep/file", fs.p("keep", "ln"))
    os.chmod(fs.p("keep", "deep", "file"), 0o600)
    fs.remount()
    with open(fs.p("keep", "ln")) as f:
        assert f.read() == "persisted"
    assert stat.S_IMODE(os.stat(fs.p("keep", "deep", "file")).st_mode) == 0o600


def test_cold_sequential_read_reads_ahead_by_a_mib(fs):
    """The kernel reads a file ahead by 1 MiB (its default for a FUSE
    mount, 128 KiB, made four or more requests per MiB), and a file read
    back cold, after a remount, in big requests and through the daemon's
    own read-ahead of the database, is what was written."""
    dev = os.stat(fs.dir).st_dev
    bdi = "/sys/class/bdi/%d:%d/read_ahead_kb" % (os.major(dev), os.minor(dev))
    with open(bdi) as f:
        assert int(f.read()) == 1024
    data = os.urandom(9 << 20) + b"tail"
    with open(fs.p("big"), "wb") as f:
        f.write(data)
    fs.remount()
    with open(fs.p("big"), "rb") as f:
        got = b"".join(iter(lambda: f.read(1 << 20), b""))
    assert sha(got) == sha(data)
    with open(fs.p("big"), "rb") as f:
        f.seek((5 << 20) + 4095)
        assert f.read(4099) == data[(5 << 20) + 4095:(5 << 20) + 8194]


def test_second_mount_is_refused(fs, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    r = run("mount", fs.db, str(other))
    assert r.returncode != 0
    assert "already mounted at " + fs.dir in r.stderr
    assert "pid %d" % fs.pid in r.stderr
    assert "fusermount3 -u" in r.stderr
    assert not is_mounted(other)


def test_sigterm_unmounts_and_ready_fd(tmp_path):
    m = Mount(tmp_path)
    rfd, wfd = os.pipe()
    p = subprocess.Popen([BIN, "mount", "-f", "--ready-fd", str(wfd), m.db,
                          m.dir], pass_fds=(wfd,), stderr=subprocess.PIPE)
    os.close(wfd)
    try:
        assert os.read(rfd, 100) == b"ready\n"
        assert is_mounted(m.dir)
        with open(os.path.join(m.dir, "f"), "w") as f:
            f.write("x")
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=15) == 0
        assert not is_mounted(m.dir)
    finally:
        os.close(rfd)
        if p.poll() is None:
            p.kill()
            p.wait()
        m.pid = 0
        m.unmount()
    fsck_clean(m)


def test_fsck_after_workload(fs):
    os.makedirs(fs.p("w", "x"))
    for i in range(50):
        with open(fs.p("w", f"f{i}"), "wb") as f:
            f.write(os.urandom(i * 3000))
        if i % 3 == 0:
            os.link(fs.p("w", f"f{i}"), fs.p("w", "x", f"h{i}"))
        if i % 5 == 0:
            os.unlink(fs.p("w", f"f{i}"))
    os.rename(fs.p("w", "x"), fs.p("y"))
    fs.unmount()
    fsck_clean(fs)
    # and fsck does notice damage
    db = sqlite3.connect(fs.db)
    db.execute("UPDATE inodes SET nlink = nlink + 1 WHERE ino = "
               "(SELECT max(ino) FROM inodes)")
    db.commit()
    db.close()
    r = run("fsck", fs.db)
    assert r.returncode == 1
    assert "link count" in r.stdout


def test_owner_option_sets_root_owner(tmp_path):
    m = Mount(tmp_path, owner=f"{NOBODY}:{NOBODY}").mount()
    try:
        st = os.stat(m.dir)
        assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY)
        assert stat.S_IMODE(st.st_mode) == 0o755
    finally:
        m.unmount()


def as_user(cmd):
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                           "--clear-groups", "sh", "-c", cmd],
                          capture_output=True, text=True, timeout=60)


def test_non_root_user_permissions(open_tmp):
    m = Mount(open_tmp).mount()
    try:
        check_non_root_user(m)
    finally:
        m.unmount()


def check_non_root_user(fs):
    os.mkdir(fs.p("mine"))
    os.chown(fs.p("mine"), NOBODY, NOBODY)
    r = as_user(f"echo hi > {fs.p('mine', 'f')} && mkdir {fs.p('mine', 'd')}")
    assert r.returncode == 0, r.stderr
    st = os.stat(fs.p("mine", "f"))
    assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY)
    r = as_user(f"echo hi > {fs.p('rootfile')}")
    assert r.returncode != 0 and "Permission denied" in r.stderr
    assert not os.path.exists(fs.p("rootfile"))
    with open(fs.p("private"), "w") as f:
        f.write("secret")
    os.chmod(fs.p("private"), 0o600)
    r = as_user(f"cat {fs.p('private')}")
    assert r.returncode != 0 and "Permission denied" in r.stderr
    # setgid directory: new files take the directory's group
    os.mkdir(fs.p("shared"))
    os.chown(fs.p("shared"), 0, 4242)
    os.chmod(fs.p("shared"), 0o2777)
    r = as_user(f"touch {fs.p('shared', 'g')}")
    assert r.returncode == 0, r.stderr
    assert os.stat(fs.p("shared", "g")).st_gid == 4242


def test_tar_git_and_sqlite_inside(fs, tmp_path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    for i in range(30):
        (src / "sub" / f"file{i}.txt").write_text("content %d\n" % i * (i + 1))
    os.symlink("sub/file1.txt", src / "link")
    subprocess.run(["tar", "-C", str(src), "-cf", str(tmp_path / "t.tar"), "."],
                   check=True)
    os.mkdir(fs.p("unpacked"))
    subprocess.run(["tar", "-C", fs.p("unpacked"), "-xf", str(tmp_path / "t.tar")],
                   check=True)
    r = subprocess.run(["diff", "-r", str(src), fs.p("unpacked")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t", HOME=str(tmp_path))
    repo = fs.p("unpacked")
    for cmd in (["git", "init", "-q"], ["git", "add", "."],
                ["git", "commit", "-qm", "first"]):
        r = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    r = subprocess.run(["git", "status", "--porcelain"], cwd=repo, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == ""
    r = subprocess.run(["git", "log", "--oneline"], cwd=repo, env=env,
                       capture_output=True, text=True)
    assert "first" in r.stdout
    r = subprocess.run(["sqlite3", fs.p("app.db"),
                        "CREATE TABLE t(a); INSERT INTO t VALUES (1), (2), (39);"
                        "SELECT sum(a) FROM t;"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "42", r.stderr
    fs.unmount()
    fsck_clean(fs)


def test_kill_9_leaves_a_consistent_database(tmp_path):
    m = Mount(tmp_path).mount()
    try:
        with open(m.p("synced"), "wb") as f:
            f.write(b"s" * 300000)
            f.flush()
            os.fsync(f.fileno())
        held = open(m.p("held"), "w")
        held.write("x")
        held.flush()
        os.unlink(m.p("held"))
        writer = subprocess.Popen(
            ["sh", "-c", f"for i in $(seq 300); do head -c 70000 /dev/urandom "
             f"> {m.p('w')}$i || exit 0; done"],
            stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        os.kill(m.pid, signal.SIGKILL)
        writer.wait(timeout=30)
        try:
            held.close()
        except OSError:
            pass
    finally:
        m.unmount()
    # Only the unlinked-but-open inode may be left, and the next mount drops it.
    r = run("fsck", m.db)
    assert all("unlinked inode" in line for line in r.stdout.splitlines()), \
        r.stdout
    m.mount()
    try:
        with open(m.p("synced"), "rb") as f:
            assert f.read() == b"s" * 300000
    finally:
        m.unmount()
    fsck_clean(m)


def test_random_writes_truncates_and_mmap_match_a_model(fs):
    import mmap
    import random
    rnd = random.Random(1234)
    model = bytearray()
    path = fs.p("model")
    with open(path, "w+b") as f:
        for i in range(1500):
            op = rnd.random()
            if op < 0.8:
                off = rnd.randint(0, len(model) + 70000)
                b = rnd.randbytes(rnd.randint(1, 140000))
                f.seek(off)
                f.write(b)
                if off > len(model):
                    model.extend(bytes(off - len(model)))
                model[off:off + len(b)] = b
            else:
                n = rnd.randint(0, len(model) + 100000)
                f.truncate(n)
                if n < len(model):
                    del model[n:]
                else:
                    model.extend(bytes(n - len(model)))
        f.flush()
        if model:
            with mmap.mmap(f.fileno(), len(model)) as mm:
                mm[0:5] = b"MMAP!"
                mm.flush()
            model[0:5] = b"MMAP!"
        f.seek(0)
        assert f.read() == bytes(model)
    fs.remount()
    with open(path, "rb") as f:
        assert f.read() == bytes(model)
    fs.unmount()
    fsck_clean(fs)


# --- a full disk --------------------------------------------------------------
# The database lives on a small tmpfs (its "disk"); the mount point too, so
# one fixture cleans both up, FUSE first.

def sha(data):
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m,mode=0755", "tmpfs",
                    str(disk)], check=True)
    try:
        yield disk
    finally:
        mnt = disk / "mnt"
        if is_mounted(mnt):
            subprocess.run(["fusermount3", "-uz", str(mnt)], capture_output=True)
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def write_file(path, data, fsync):
    """Write, maybe fsync, close: raises OSError as the writer would see it."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        if fsync:
            os.fsync(f.fileno())


def check_files(m, files):
    for name, digest in files.items():
        with open(m.p(name), "rb") as f:
            assert sha(f.read()) == digest, name


@contextlib.contextmanager
def logged_mount_on_tmpfs(tmp_path, size):
    """A mount whose database is on a tmpfs of size (its "disk"), with
    the daemon's log kept in a file: (disk, mount, log path).  Unmounted,
    and the disk with it, at the end."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs",
                    str(disk)], check=True)
    m = Mount(disk)
    log = tmp_path / "fs.log"
    try:
        with open(log, "w") as lf:
            r = subprocess.run([BIN, "mount", m.db, m.dir], stderr=lf,
                               timeout=60)
        assert r.returncode == 0
        m.pid = mount_pid(m.db)
        yield disk, m, log
    finally:
        m.unmount()
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_full_disk_gives_enospc_and_loses_nothing(small_disk):
    m = Mount(small_disk).mount()
    try:
        # Fill the disk: every other file fsynced, the others only closed.
        done, err = {}, None
        for i in range(200):
            data = os.urandom(512 * 1024)
            try:
                write_file(m.p(f"f{i:03d}"), data, fsync=i % 2 == 0)
            except OSError as e:
                err = e
                break
            done[f"f{i:03d}"] = sha(data)
        assert err is not None, "24 MiB took 100 MiB of writes"
        assert err.errno == errno.ENOSPC, err
        assert len(done) >= 8, f"only {len(done)} files fit"
        # A full disk shows as full, and dd is told so too.
        sv = os.statvfs(m.dir)
        assert sv.f_bavail * sv.f_frsize < 1024 * 1024
        r = subprocess.run(["dd", "if=/dev/zero", f"of={m.p('dd')}", "bs=1M",
                            "count=4", "conv=fsync"], capture_output=True,
                           text=True)
        assert r.returncode != 0 and "No space left on device" in r.stderr
        # Nothing that was answered is lost, and the database is sound.
        m.unmount()
        fsck_clean(m)
        m.mount()
        check_files(m, done)
        # Deleting files makes room again (the database does not shrink:
        # its free pages are reused).
        for name in (f"f{len(done):03d}", "dd", "f000", "f001"):
            if os.path.exists(m.p(name)):
                os.unlink(m.p(name))
            done.pop(name, None)
        data = os.urandom(256 * 1024)
        write_file(m.p("after-delete"), data, fsync=True)
        done["after-delete"] = sha(data)
        # So does a bigger disk.
        subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)],
                       check=True)
        for i in range(8):
            data = os.urandom(1024 * 1024)
            write_file(m.p(f"g{i}"), data, fsync=True)
            done[f"g{i}"] = sha(data)
        m.unmount()
        fsck_clean(m)
        m.mount()
        check_files(m, done)
    finally:
        m.unmount()
    fsck_clean(m)


def test_big_write_on_a_disk_without_room_for_two_copies(tmp_path):
    """One write bigger than half the disk: its bytes go to the log first
    and then into the database, and both copies do not fit.  The writer
    gets ENOSPC, never EIO; no checkpoint ever fails for room (what the
    log holds counts as taken); deleting the file makes room again, and
    what was fsynced survives."""
    with logged_mount_on_tmpfs(tmp_path, "256m") as (disk, m, log):
        block = os.urandom(1024 * 1024)
        err = None
        try:
            with open(m.p("big"), "wb") as f:
                for _ in range(400):
                    f.write(block)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            err = e
        assert err is not None and err.errno == errno.ENOSPC, err
        os.unlink(m.p("big"))
        after = os.urandom(32 * 1024 * 1024)
        write_file(m.p("after"), after, fsync=True)
        m.unmount()
        text = log.read_text()
        assert "checkpoint" not in text and "are lost" not in text, text
        fsck_clean(m)
        m.mount()
        with open(m.p("after"), "rb") as f:
            assert f.read() == after


def test_disk_filled_by_another_process(tmp_path):
    """Far from full, writes are grouped; another program then takes all
    the room at once, under a group of answered writes.  Their room in the
    WAL was reserved when they were admitted (tmpfs can preallocate), so the
    writer gets ENOSPC, the mount stays sound, and nothing is lost."""
    with logged_mount_on_tmpfs(tmp_path, "160m") as (disk, m, log):
        synced = os.urandom(300 * 1024)
        write_file(m.p("synced"), synced, fsync=True)
        done, err = {}, None
        for i in range(400):
            if i == 20:
                # Take everything but 1 MiB, in one go.  A group commit
                # may land between measuring and taking: measure again.
                for _ in range(20):
                    sv = os.statvfs(disk)
                    free = sv.f_bavail * sv.f_frsize - 1024 * 1024
                    if subprocess.run(["fallocate", "-l", str(free),
                                       str(disk / "hog")]).returncode == 0:
                        break
                else:
                    pytest.fail("could not fill the disk in one go")
            data = os.urandom(256 * 1024)
            try:
                write_file(m.p(f"w{i:03d}"), data, fsync=False)
            except OSError as e:
                err = e
                break
            done[f"w{i:03d}"] = sha(data)
        assert err is not None and err.errno == errno.ENOSPC, err
        assert len(done) >= 20
        # The mount is sound: fsync works, deleting works.
        fd = os.open(m.p("synced"), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        # The file being written when ENOSPC came (if its create got that
        # far) can be deleted.
        if os.path.exists(m.p(f"w{len(done):03d}")):
            os.unlink(m.p(f"w{len(done):03d}"))
        m.unmount()
        assert "are lost" not in log.read_text()
        assert "is full" in log.read_text()
        fsck_clean(m)
        m.mount()
        with open(m.p("synced"), "rb") as f:
            assert f.read() == synced
        check_files(m, done)


# --- quota ------------------------------------------------------------------

MiB = 1024 * 1024


def quota_mount(tmp, opts="quota=8M"):
    return Mount(tmp, opts=opts).mount()


def test_quota_stops_a_write_and_keeps_what_was_written(tmp_path):
    m = quota_mount(tmp_path)
    try:
        keep = os.urandom(MiB)
        write_file(m.p("keep"), keep, fsync=True)
        # Far more than 1 MiB at a time, as head -c does: write(2) itself
        # is told (near the quota, writers bypass the writeback cache).
        fd = os.open(m.p("big"), os.O_WRONLY | os.O_CREAT, 0o644)
        written, err = 0, None
        try:
            while written < 10 * MiB:
                written += os.write(fd, b"x" * (128 * 1024))
        except OSError as e:
            err = e
        finally:
            os.close(fd)
        assert err is not None and err.errno == errno.EDQUOT, err
        assert 6 * MiB <= written <= 7 * MiB + 1, written
        with open(m.p("big"), "rb") as f:
            assert f.read() == b"x" * written
        check_files(m, {"keep": sha(keep)})
        # df shows the quota, and that it is (nearly) all used.
        sv = os.statvfs(m.dir)
        assert sv.f_blocks * sv.f_frsize == 8 * MiB
        assert sv.f_bavail * sv.f_frsize < 256 * 1024
        # Deleting frees it at once; the room is usable again.
        # (The bytes go when the kernel forgets the inode, which it sends
        # asynchronously right after the unlink.)
        os.unlink(m.p("big"))
        end = time.time() + 2
        while time.time() < end:
            sv = os.statvfs(m.dir)
            if sv.f_bavail * sv.f_frsize >= 6 * MiB:
                break
            time.sleep(0.01)
        assert sv.f_bavail * sv.f_frsize >= 6 * MiB
        again = os.urandom(5 * MiB)
        write_file(m.p("again"), again, fsync=False)
        check_files(m, {"keep": sha(keep), "again": sha(again)})
    finally:
        m.unmount()
    fsck_clean(m)


def test_quota_inodes_stops_the_101st_create(tmp_path):
    m = quota_mount(tmp_path, "quota_inodes=100")
    try:
        os.mkdir(m.p("d"))
        for i in range(99):
            open(m.p("d", f"f{i}"), "w").close()
        sv = os.statvfs(m.dir)
        assert sv.f_files == 100 and sv.f_ffree == 0
        for make in (lambda: open(m.p("x"), "w").close(),
                     lambda: os.mkdir(m.p("y")),
                     lambda: os.symlink("d", m.p("z"))):
            with pytest.raises(OSError) as e:
                make()
            assert e.value.errno == errno.EDQUOT
        os.unlink(m.p("d", "f0"))
        end = time.time() + 2   # f0 goes with the kernel's forget
        while os.statvfs(m.dir).f_ffree == 0 and time.time() < end:
            time.sleep(0.01)
        open(m.p("x"), "w").close()
    finally:
        m.unmount()
    fsck_clean(m)


def test_quota_sparse_file_counts_only_what_is_stored(tmp_path):
    m = quota_mount(tmp_path)
    try:
        with open(m.p("sparse"), "wb") as f:
            f.truncate(1 << 30)
            f.seek(512 * MiB)
            f.write(b"s" * 4096)
        assert os.stat(m.p("sparse")).st_size == 1 << 30
        sv = os.statvfs(m.dir)
        assert sv.f_bavail * sv.f_frsize > 7 * MiB
        # fallocate promises room: more than is left is refused.
        fd = os.open(m.p("fa"), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            with pytest.raises(OSError) as e:
                os.posix_fallocate(fd, 0, 100 * MiB)
            assert e.value.errno == errno.EDQUOT
            os.posix_fallocate(fd, 0, MiB)
        finally:
            os.close(fd)
    finally:
        m.unmount()


def quota_used(m):
    sv = os.statvfs(m.dir)
    return ((sv.f_blocks - sv.f_bfree) * sv.f_frsize, sv.f_files - sv.f_ffree)


def test_quota_totals_survive_remount_and_kill_9(tmp_path):
    m = quota_mount(tmp_path, "quota=64M,quota_inodes=1000")
    try:
        for i in range(5):
            write_file(m.p(f"f{i}"), os.urandom(MiB + i), fsync=True)
        os.mkdir(m.p("d"))
        os.symlink("f0", m.p("d", "link"))
        os.unlink(m.p("f4"))
        end = time.time() + 2   # f4 goes with the kernel's forget
        while quota_used(m)[1] != 6 and time.time() < end:
            time.sleep(0.01)
        before = quota_used(m)
        assert before[1] == 6
        assert 4 * MiB <= before[0] <= 4 * MiB + 64 * 1024
        m.remount()
        assert quota_used(m) == before
        # kill -9 after a synced state: the mount counts it again.
        write_file(m.p("g"), os.urandom(2 * MiB), fsync=True)
        synced = quota_used(m)
        os.kill(m.pid, signal.SIGKILL)
        assert wait_gone(m.pid, 120)
        subprocess.run(["fusermount3", "-uz", m.dir], capture_output=True)
        m.pid = 0
        m.mount()
        assert quota_used(m) == synced
    finally:
        m.unmount()
    fsck_clean(m)


def db_pragma(db, name):
    con = sqlite3.connect(db)
    try:
        return con.execute("PRAGMA " + name).fetchone()[0]
    finally:
        con.close()


def write_pieces(path, rng):
    """A file of data, holes and short ends at odd offsets around chunk
    (64 KiB) boundaries; returns its expected bytes."""
    want = bytearray(3 * 65536 + 1000)
    with open(path, "wb") as f:
        for off, n in ((10, 5000), (65536 - 700, 1400), (2 * 65536 + 3, 65536),
                       (3 * 65536 + 999, 1)):
            data = rng(n)
            f.seek(off)
            f.write(data)
            want[off:off + n] = data
        f.truncate(len(want))
        os.fsync(f.fileno())
    return bytes(want)


def read_ranges_check(path, want):
    """Every 4 KiB-aligned and odd-sized range reads back as written."""
    with open(path, "rb") as f:
        for off in list(range(0, len(want), 4096)) + [1, 65535, 131071, 196000]:
            for n in (1, 4096, 70000):
                f.seek(off)
                assert f.read(n) == want[off:off + n], (off, n)


def test_reads_of_any_range_after_remount(fs):
    want = write_pieces(fs.p("f"), os.urandom)
    fs.remount()        # nothing in the kernel's cache: reads reach the daemon
    read_ranges_check(fs.p("f"), want)


def test_a_database_with_16k_pages_works(tmp_path):
    # Reads of part of a chunk and checkpoints (sized in bytes) do not
    # depend on 4 KiB pages.
    m = Mount(tmp_path)
    con = sqlite3.connect(m.db)
    con.execute("PRAGMA journal_mode=DELETE")
    con.execute("PRAGMA page_size=16384")
    con.execute("VACUUM")
    con.execute("PRAGMA journal_mode=WAL")
    con.close()
    assert db_pragma(m.db, "page_size") == 16384
    m.mount()
    try:
        want = write_pieces(m.p("f"), os.urandom)
        with open(m.p("big"), "wb") as f:
            f.write(os.urandom(1 << 20) * 40)
            os.fsync(f.fileno())
        m.remount()
        read_ranges_check(m.p("f"), want)
    finally:
        m.unmount()
    assert db_pragma(m.db, "page_size") == 16384
    r = run("fsck", m.db)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_quota_bounds_the_wal(tmp_path):
    """The WAL is on the host's disk too: under a quota of 64 MiB it is
    started over past 16 MiB (an eighth, at least 16 MiB), so a 56 MiB
    write leaves it at most that and one 16 MiB commit group, where
    without the bound it held the whole write."""
    m = quota_mount(tmp_path, "quota=64M")
    try:
        with open(m.p("big"), "wb") as f:
            for _ in range(56):
                f.write(os.urandom(1 << 20))
            f.flush()
            os.fsync(f.fileno())
        wal = os.stat(m.db + "-wal").st_size
        assert wal <= 34 << 20, wal
    finally:
        m.unmount()
